"""Where `superpod publish` spends its time: client (plan, compare, request bodies) vs server (time
spent waiting on HTTP), and objects/second per object type, for a first publish and a republish.

Run against a fresh lab server started here (private dir and ports; stopped at the end):
    .venv/bin/python bench/bench_publish.py --lab [--lab-processes N] [--stack lab|roce-1k] [--scalable-units 2]
or against a server of yours (it must not yet hold the pod, for first-publish figures):
    .venv/bin/python bench/bench_publish.py --url URL --token-file F
Options: --workers N (concurrent requests; default: the lab server's processes, else 4), --chunk N
(objects per bulk write). The lab server is scripts/nautobot-lab.sh's: uWSGI as Nautobot's deployment
docs set it up, 2n+1 processes unless --lab-processes (0: Django's one-process runserver).

The roce-1k line at the end is an ESTIMATE: this run's objects/second per type times roce-1k's
object counts. It holds only for the same server and load (printed), not for a production Nautobot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from topology.layout.build import build
from topology.publish.nautobot import Nautobot, read_token
from topology.publish.sync import kinds, sync
from topology.render.dcim import desired_objects
from topology.spec import load_stack_file, parse

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 900.0  # per request, the lab server's own limit (uWSGI harakiri): on a loaded machine a bulk write is slow
COUNT_OF = {  # endpoint -> desired.counts key, for the roce-1k estimate (writes only)
    "dcim/devices/": "devices", "dcim/interfaces/": "interfaces", "dcim/cables/": "cables",
    "ipam/prefixes/": "prefixes", "ipam/ip-addresses/": "ip_addresses", "ipam/ip-address-to-interface/":
    "ip_assignments", "dcim/power-feeds/": "power_feeds", "dcim/power-panels/": "power_panels",
    "dcim/racks/": "racks",
}


class Timed(Nautobot):
    """The publisher's client, recording each request's endpoint, method, objects and wall interval."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls: list[tuple[str, str, int, float, float]] = []
        self._lock = threading.Lock()

    def _call(self, method, endpoint, **kw):
        t0 = time.monotonic()
        r = super()._call(method, endpoint, **kw)
        n = len(kw["json"]) if isinstance(kw.get("json"), list) else len(r.json().get("results", []))
        with self._lock:
            self.calls.append((method, endpoint, n, t0, time.monotonic()))
        return r


def merged_seconds(intervals) -> float:
    """Wall time covered by (possibly overlapping, with --workers) request intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def report(title: str, client: Timed, wall: float, changes: int) -> dict[str, float]:
    server = merged_seconds((a, b) for *_, a, b in client.calls)
    print(f"\n{title}: {wall:.1f} s wall, {changes} changes, {len(client.calls)} requests; "
          f"waiting on the server {server:.1f} s, client {wall - server:.1f} s; load {os.getloadavg()[0]:.1f}")
    per: dict[tuple[str, str], list] = defaultdict(list)
    for method, endpoint, n, a, b in client.calls:
        per[(method, endpoint)].append((n, a, b))
    rates: dict[str, float] = {}
    print(f"  {'method':6} {'endpoint':34} {'requests':>8} {'objects':>8} {'seconds':>8} {'objects/s':>9}")
    for (method, endpoint), calls in sorted(per.items(), key=lambda kv: min(c[1] for c in kv[1])):
        n = sum(c[0] for c in calls)
        secs = merged_seconds((a, b) for _, a, b in calls)
        print(f"  {method:6} {endpoint:34} {len(calls):8} {n:8} {secs:8.1f} {n / secs if secs else 0:9.1f}")
        if method == "POST" and secs:
            rates[endpoint] = n / secs
    return rates


def server_cpu_seconds(lab_dir: Path | None) -> float | None:
    """CPU seconds the lab server has used so far: uWSGI (master, router, workers) and PostgreSQL
    (postmaster, its backends; exited ones are in its reaped children's time) and Redis. Unlike
    wall time this hardly depends on what else runs on the machine, so it says how many cores a
    publish of this size needs to finish in a given time."""
    if lab_dir is None:
        return None
    roots = {int((lab_dir / "web.pid").read_text()), int((lab_dir / "redis.pid").read_text()),
             int((lab_dir / "pg" / "postmaster.pid").read_text().split()[0])}
    stats = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited while we looked
            stats[int(proc.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))  # ppid; u+s+cu+cs
    ours, grew = set(roots), True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in ours} - ours
        ours |= more
        grew = bool(more)
    return sum(stats[pid][1] for pid in ours if pid in stats) / os.sysconf("SC_CLK_TCK")


def start_lab(processes: int | None) -> tuple[str, Path, dict]:
    run = Path(tempfile.mkdtemp(prefix="bench-nautobot-"))
    run.chmod(0o755)  # PostgreSQL runs as its own user and must reach the data folder
    env = {**os.environ, "NAUTOBOT_LAB_DIR": str(run / "lab"), "NAUTOBOT_LAB_PORT": "58280",
           "NAUTOBOT_LAB_PG_PORT": "55632", "NAUTOBOT_LAB_REDIS_PORT": "56579"}
    if processes is not None:
        env["NAUTOBOT_LAB_WEB_PROCESSES"] = str(processes)
    out = subprocess.run([ROOT / "scripts" / "nautobot-lab.sh", "start"], env=env, capture_output=True, text=True,
                         timeout=1800)
    if out.returncode:
        raise SystemExit(f"nautobot-lab.sh start failed:\n{out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1], run / "lab" / "token", env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url")
    ap.add_argument("--token-file", type=Path)
    ap.add_argument("--lab", action="store_true", help="start a fresh lab server for the run, stop it after")
    ap.add_argument("--lab-dir", type=Path, help="with --url: the nautobot-lab.sh folder of that server (CPU figures)")
    ap.add_argument("--lab-processes", type=int, help="uWSGI processes of that server (default 2n+1; 0: runserver)")
    ap.add_argument("--stack", default="lab")
    ap.add_argument("--scalable-units", type=int, help="grow the stack's spec to this many SUs")
    ap.add_argument("--workers", type=int, help="concurrent requests (default: the lab's processes, else 4)")
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--page", type=int, default=1000, help="objects per list page (small: reads over many pages)")
    args = ap.parse_args()

    t0 = time.monotonic()
    spec = load_stack_file(str(ROOT / f"Pulumi.{args.stack}.yaml"))
    if args.scalable_units:
        spec = parse({**spec.model_dump(exclude_none=True), "scalable_units": args.scalable_units})
    desired = desired_objects(build(spec))
    plan_s = time.monotonic() - t0
    env = None
    workers = args.workers or 4
    if args.lab:
        url, token_file, env = start_lab(args.lab_processes)
        processes = int((Path(env["NAUTOBOT_LAB_DIR"]) / "processes").read_text())
        workers = args.workers or processes  # client concurrency matched to the server's workers
        print("lab server:", "runserver" if args.lab_processes == 0 else f"uWSGI, {processes} processes")
    else:
        url, token_file = args.url, args.token_file
    lab_dir = Path(env["NAUTOBOT_LAB_DIR"]) if env else args.lab_dir
    print(f"{desired.site} ({args.stack}, {spec.scalable_units} SU): {sum(desired.counts.values())} objects, "
          f"plan + object set {plan_s:.1f} s (client); workers {workers}, chunk {args.chunk}; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    big = desired_objects(build(load_stack_file(str(ROOT / "Pulumi.roce-1k.yaml")))).counts
    try:
        token = read_token(token_file)
        rates: dict[str, float] = {}
        for title in ("first publish", "republish (no change)"):
            with Timed(url, token, timeout=TIMEOUT, workers=workers, chunk=args.chunk, page=args.page) as client:
                started, cpu0 = time.monotonic(), server_cpu_seconds(lab_dir)
                result = sync(client, desired, apply=True)
                rates = report(title, client, time.monotonic() - started, result.total) or rates
                if cpu0 is not None:
                    cpu = server_cpu_seconds(lab_dir) - cpu0
                    per = f" ({1000 * cpu / result.total:.0f} ms a change)" if result.total else ""
                    line = f"  server CPU {cpu:.1f} s{per}: {cpu / 300:.2f} cores busy for 5 minutes"
                    if result.total and args.stack != "roce-1k":  # ESTIMATE: roce-1k at this CPU per planned object
                        need = cpu / sum(desired.counts.values()) * sum(big.values()) / 300
                        line += f"; ESTIMATE roce-1k ({sum(big.values())} objects): {need:.1f} cores for 5 minutes"
                    print(line)
    finally:
        if env:
            subprocess.run([ROOT / "scripts" / "nautobot-lab.sh", "stop"], env=env, capture_output=True, timeout=300)
            shutil.rmtree(Path(env["NAUTOBOT_LAB_DIR"]).parent, ignore_errors=True)

    if args.stack == "roce-1k" and not args.scalable_units:
        return  # measured above: no estimate
    est = sum(big[key] / rates[ep] for ep, key in COUNT_OF.items() if rates.get(ep))
    shown = ", ".join(f"{key} {big[key]}" for ep, key in COUNT_OF.items() if rates.get(ep))
    print(f"\nESTIMATE (not measured): roce-1k's writes at this run's objects/s per type: {est / 60:.0f} min "
          f"({shown}); templates and types not in this list not counted; same server and load only")
    print(f"kinds published: {len(kinds())}")


if __name__ == "__main__":
    main()
