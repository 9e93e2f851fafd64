"""Plan time and peak memory for 1k, 8k, 32k and 100k GPUs (build + render, no disk).

Run: .venv/bin/python bench/bench_plan.py
Targets on a 2-core machine: 8k GPUs under 2 s, 100k under 20 s, cost linear in cables.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from topology.build import build
from topology.errors import SpecError
from topology.render.artifacts import render_artifacts
from topology.spec import parse


def pod(gpus: int, switch: str, nodes_per_su: int, max_su: int | None = None, pairing: str = "mlag",
        racks_per_row: int = 20) -> dict:
    sus = -(-gpus // (8 * nodes_per_su))
    return {
        "name": f"bench-{gpus}", "node_model": "hgx-h100-8x400g", "scalable_units": sus, "nodes_per_su": nodes_per_su,
        "max_scalable_units": max_su or sus,
        "compute_fabric": {"kind": "roce", "switch_model": switch},
        "storage_fabric": {"switch_model": "sn5600", "storage_servers": 64},
        # past two in-band cores, the bonds of the mgmt nodes need EVPN multihoming (MLAG pairs two)
        "management": {"inband": {"switch_model": "sn5400", "core_switch_model": "sn5600", "mgmt_nodes": 5,
                                  "pairing": pairing}},
        "racks": {"racks_per_row": racks_per_row},
        "addressing": {"rails": "100.64.0.0/11", "fabric_p2p": "100.96.0.0/12", "oob": "10.20.0.0/14"},
    }


# past two in-band cores (8k GPUs and up) MLAG cannot pair them: EVPN multihoming. At 100k, rows
# of 20 racks put leaf-spine runs past every medium's reach (500 m): 64 racks a row.
CASES = [("1k", pod(1024, "sn5400", 32)), ("8k", pod(8192, "sn5400", 32, pairing="evpn_mh")),
         ("32k", pod(32768, "sn5400", 32, pairing="evpn_mh")),
         ("100k", pod(100352, "sn5600", 64, pairing="evpn_mh", racks_per_row=64))]


def artifact(path: Path) -> str:
    """The artifact a file belongs to: a top-level file, or its folder (switches/, inventory/, ...)."""
    parts = path.relative_to("/nonexistent").parts
    if parts[0] == "inv":
        return "inventory/"
    return parts[1] if len(parts) == 2 else parts[1] + "/"


def main() -> None:
    # cpu s: this process's CPU time for build + render, the figure to compare on a shared machine
    print(f"{'pod':>5} {'gpus':>7} {'tiers':>5} {'devices':>8} {'cables':>8} {'build s':>8} {'render s':>9} "
          f"{'cpu s':>6} {'us/cable':>9} {'peak MiB':>9}")
    sizes: dict[str, dict[str, int]] = {}
    for label, data in CASES:
        spec = parse(data)
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            layout = build(spec)
        except SpecError as e:  # e.g. an in-band core tier two switch tiers cannot hold
            print(f"{label:>5} refused: {e}")
            continue
        t1 = time.perf_counter()
        files = render_artifacts(layout, Path("/nonexistent/out"), Path("/nonexistent/inv"))
        t2, cpu = time.perf_counter(), time.process_time() - c0
        for path, text in files.items():
            sizes.setdefault(artifact(path), {}).setdefault(label, 0)
            sizes[artifact(path)][label] += len(text.encode())
        # peak memory in a second, traced run: tracing slows Python down several times
        tracemalloc.start()
        render_artifacts(build(spec), Path("/nonexistent/out"), Path("/nonexistent/inv"))
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        assert files
        cables = len(layout.links)
        print(f"{label:>5} {layout.facts['gpus']:>7} {layout.facts['tiers']:>5} {len(layout.devices):>8} {cables:>8} "
              f"{t1 - t0:>8.2f} {t2 - t1:>9.2f} {cpu:>6.2f} {(t2 - t0) / cables * 1e6:>9.1f} {peak:>9.0f}")
    labels = [label for label, _ in CASES if any(label in per for per in sizes.values())]
    print(f"\n{'MB per artifact':<16}" + "".join(f"{label:>9}" for label in labels))
    for name, per in sorted(sizes.items(), key=lambda kv: -max(kv[1].values())):
        print(f"{name:<16}" + "".join(f"{per.get(label, 0) / 1e6:>9.2f}" for label in labels))


if __name__ == "__main__":
    main()
