"""Controller CPU seconds of the full check (`superpod apply --full`, `drift --full`; then the plain `apply`) on one
converged lab pod, for one or more checkouts back to back (issue 39: the full check's cost is the
control node's work per host-task, which wall time on a shared machine hides under the load).

    .venv/bin/python bench/fullcheck_cpu.py [--repeat N] [--profile DIR] [--runs-dir DIR] [CHECKOUT ...]

Starts the lab pod's GPU nodes in containers (as bench/bench_apply.py, over SSH), converges them
with the first checkout (default: this one), then runs each command in each checkout in turn,
`--repeat` times, and prints per checkout the least CPU seconds (user+sys of `superpod` and every
process it waited for: ansible-runner, ansible-playbook, its workers) with the load average, the
wall seconds and the host-task results per node. Each checkout runs its own roles and code (cwd and
PYTHONPATH are the checkout; its inventories/lab is planned first). The drift must be clean (exit 0)
or the bench stops; a no-op apply --full's changed count is printed (it must be 0). `--profile DIR`
also records each checkout's last no-op `apply --full` under `py-spy record --subprocesses` (raw
collapsed stacks, DIR/NAME.txt)."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.host_task_counts import host_task_results  # noqa: E402
from bench.task_times import events_dir  # noqa: E402
from tests.e2e.labpod import LabPod, ensure_image, last_run  # noqa: E402
from topology.operate.events import host_tallies, load_events  # noqa: E402

LIMIT = "gpu_nodes"
# the plain apply after them: a converged pod's record check and nothing else (a host its record
# cannot vouch for runs in full there, which shows as CPU seconds near the full run's)
COMMANDS = (("apply --full", ["apply", "--full"]), ("drift --full", ["drift", "--full"]), ("apply", ["apply"]))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(checkout: Path, args: list[str], wrap: list[str] | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of `superpod ARGS` run in CHECKOUT, as that checkout's code."""
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(checkout)}
    cpu0, t0 = children_cpu(), time.monotonic()
    proc = subprocess.run([*(wrap or []), sys.executable, "-m", "topology.cli", *args], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=2700)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: `superpod {' '.join(args)}` exited {proc.returncode}:\n"
                         f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path, help="repository checkouts (default: this one)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command per checkout (the least counts)")
    parser.add_argument("--profile", type=Path, help="py-spy raw stacks of each checkout's last apply --full here")
    parser.add_argument("--runs-dir", type=Path, help="keep the runs (events) here, a folder per checkout "
                                                      "(bench/host_task_counts.py RUN_DIR; default: a temporary one)")
    opts = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    checkouts = [c.resolve() for c in opts.checkouts] or [here]
    for checkout in checkouts:
        subprocess.run([sys.executable, "-m", "topology.cli", "plan", "--stack", "lab", "--json", "--allow-moves"],
                       cwd=checkout, env=os.environ | {"PYTHONPATH": str(checkout)}, check=True, capture_output=True)
    pod = LabPod(groups=(LIMIT,), tag="fullcheck")
    results: dict[tuple[Path, str], list[tuple[float, float, float]]] = {}
    counts: dict[Path, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pod.start(ensure_image())
            pod.enable_ssh(Path(tmp))
            overlay = pod.write_overlay(Path(tmp) / "overlay.yml", "ssh")
            runs_dir = opts.runs_dir or Path(tmp) / "runs"

            def common(checkout: Path) -> list[str]:
                return ["--stack", pod.stack, "-i", str(overlay), "--runs-dir", str(runs_dir / checkout.name),
                        "--limit", LIMIT, "--no-progress"]

            run(checkouts[0], ["apply", *common(checkouts[0])])
            for i in range(opts.repeat):
                for checkout in checkouts:
                    for name, args in COMMANDS:
                        wrap = None
                        if opts.profile and name == "apply --full" and i == opts.repeat - 1:
                            opts.profile.mkdir(parents=True, exist_ok=True)
                            wrap = ["py-spy", "record", "--subprocesses", "--nonblocking", "--rate", "50",
                                    "--format", "raw", "-o", str(opts.profile / f"{checkout.name}.txt"), "--"]
                        cpu, wall = run(checkout, [*args, *common(checkout)], wrap)
                        if wrap is None:
                            results.setdefault((checkout, name), []).append((cpu, wall, os.getloadavg()[0]))
                    run_dir = last_run(runs_dir / checkout.name, pod.stack, "apply")
                    recap = host_tallies(load_events(events_dir(run_dir))).values()
                    # reported, not fatal: the runs (--runs-dir) say which task changed what
                    changed = sum(t.changed for t in recap)
                    per_node = len(host_task_results(run_dir)) / len(pod.hosts)
                    tally = (f"ok={sum(t.ok for t in recap)} skipped={sum(t.skipped for t in recap)} "
                             f"changed={changed}{'' if changed == 0 else ' (MUST BE 0)'}")
                    counts[checkout] = (per_node, tally)
        finally:
            pod.remove()
    print(f"lab pod: {len(pod.hosts)} GPU nodes over SSH, {os.cpu_count()} CPUs; CPU = user+sys of superpod "
          "and its children; least of the runs, with the load average (1 min) after it")
    for checkout in checkouts:
        per_node, recap = counts[checkout]
        print(f"{checkout}: {per_node:.1f} host-task results per node, last apply --full ({recap})")
        for name, _ in COMMANDS:
            runs = results.get((checkout, name), [])
            if not runs:
                continue
            cpu, wall, load = min(runs)
            each = ", ".join(f"{c:.1f}" for c, _, _ in runs)
            print(f"  {name:14s} {cpu:6.1f} CPU s (wall {wall:.1f} s, load {load:.1f}; all: {each})")


if __name__ == "__main__":
    main()
