#!/usr/bin/env python3
"""Fabric telemetry benchmark.

1. Scrape latency of the exporter on a stand-in node of 8 rail + 2 storage NICs (sysfs tree and
   `ethtool -S` outputs written from the ConnectX-7 recordings; ethtool is a `cat` per NIC, so a
   real ethtool's ioctl time is not in the figure, its process start is): GET /metrics over HTTP,
   --scrapes times, counters advancing between scrapes so rates are computed. Target: one scrape
   under 100 ms (wall on an idle machine; the CPU time per scrape is printed for loaded ones).
2. The generated rules and dashboard for roce-8k: sizes, rule count, `promtool check rules` time.

    .venv/bin/python bench/bench_fabric_telemetry.py [--scrapes 50] [--stack roce-8k] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "agents" / "fabric_telemetry"))
sys.path.insert(0, str(REPO))

from fabric_telemetry import fakes  # noqa: E402
from fabric_telemetry.collector import make_registry  # noqa: E402
from fabric_telemetry.config import ExporterConfig  # noqa: E402
from prometheus_client import start_http_server  # noqa: E402

RECORDINGS = REPO / "agents" / "fabric_telemetry" / "tests" / "data" / "cx7"


def stand_in(root: Path) -> ExporterConfig:
    nics = [{"netdev": f"enp{r}s0np0", "hca": f"mlx5_{r}", "rail": r, "gpu": r, "leaf": f"su01-leaf-rail{r}",
             "leaf_port": "swp1", "planned_speed_gbps": 400} for r in range(8)]
    nics += [{"netdev": f"enp{s}s0f0np0", "hca": f"mlx5_{s}", "kind": "storage"} for s in (8, 9)]
    cfg = ExporterConfig.model_validate({"node": "su01-node01", "su": "su01", "sysfs_root": str(root / "sys"),
                                         "ethtool_command": fakes.ethtool_command(root), "nics": nics,
                                         "listen": {"address": "127.0.0.1", "port": 0}})
    for n in cfg.nics:
        fakes.write_nic(root, RECORDINGS, "t0", n.netdev, n.hca)
    return cfg


def _cpu() -> float:
    """CPU seconds of this process (exporter and client) and its finished children (ethtool):
    on a shared, loaded machine wall time measures the queue for a core, CPU time the work."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def bench_scrapes(n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cfg = stand_in(root)
        registry, _ = make_registry(cfg)
        server, _thread = start_http_server(0, "127.0.0.1", registry=registry)
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        times, cpu, size = [], [], 0
        for i in range(n):
            if i % 2:  # advance the counters: the next scrape computes rates
                for nic in cfg.nics:
                    fakes.write_nic(root, RECORDINGS, "t1" if i % 4 == 1 else "t0", nic.netdev, nic.hca)
            t0, c0 = time.perf_counter(), _cpu()
            body = urllib.request.urlopen(url, timeout=5).read()
            times.append(time.perf_counter() - t0)
            cpu.append(_cpu() - c0)
            size = len(body)
        server.shutdown()
    times.sort()
    return {"scrapes": n, "nics": len(cfg.nics), "p50_ms": statistics.median(times) * 1e3,
            "cpu_p50_ms": statistics.median(cpu) * 1e3, "cpu_max_ms": max(cpu) * 1e3,
            "p95_ms": times[int(0.95 * (n - 1))] * 1e3, "max_ms": times[-1] * 1e3, "body_bytes": size,
            "samples": body.count(b"\nsuperpod_fabric_")}


def bench_rules(stack: str) -> dict:
    from topology.layout.build import build
    from topology.render.telemetry import dashboard, rules
    from topology.spec import load_stack_file

    layout = build(load_stack_file(str(REPO / f"Pulumi.{stack}.yaml")))
    t0 = time.perf_counter()
    text, board = rules(layout), dashboard(layout)
    render_s = time.perf_counter() - t0
    out = {"stack": stack, "rules_bytes": len(text), "dashboard_bytes": len(board),
           "dashboard_panels": len(json.loads(board)["panels"]), "render_s": render_s}
    promtool = shutil.which("promtool") or str(REPO / ".venv" / "bin" / "promtool")
    if Path(promtool).exists():
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            f.write(text)
            f.flush()
            t0 = time.perf_counter()
            proc = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
            out["promtool_check_s"] = time.perf_counter() - t0
            out["promtool"] = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 else proc.stderr.strip()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--stack", default="roce-8k")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the p50 scrape CPU time is 100 ms or more")
    args = ap.parse_args()
    s = bench_scrapes(args.scrapes)
    print(f"scrape: {s['nics']} NICs, {s['scrapes']} scrapes over HTTP: p50 {s['p50_ms']:.1f} ms, "
          f"p95 {s['p95_ms']:.1f} ms, max {s['max_ms']:.1f} ms; CPU per scrape p50 {s['cpu_p50_ms']:.1f} ms, "
          f"max {s['cpu_max_ms']:.1f} ms; {s['samples']} samples, {s['body_bytes']} bytes; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    r = bench_rules(args.stack)
    print(f"{r['stack']}: rules {r['rules_bytes']} bytes, dashboard {r['dashboard_bytes']} bytes "
          f"({r['dashboard_panels']} panels), rendered in {r['render_s'] * 1e3:.0f} ms; "
          f"promtool check {r.get('promtool_check_s', float('nan')):.2f} s: {r.get('promtool', 'promtool not found')}")
    return 1 if args.strict and s["cpu_p50_ms"] >= 100 else 0


if __name__ == "__main__":
    sys.exit(main())
