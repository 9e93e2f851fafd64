"""Times `superpod apply` and `superpod drift` on the lab pod's GPU nodes in containers, against
the floor measured in the same run: `ansible -m setup` on the same hosts over the same connection
(what one fact round trip costs; no playbook can be faster).

    .venv/bin/python bench/bench_apply.py [--repeat N] [--connection ssh|docker] [--forks N]
                                          [--strategy linear|free|mitogen_linear]

Prints the floor, first apply (fresh nodes), and for each repetition on the converged pod: the
no-op apply of every task (`apply --full`), the plain no-op apply (every node converged and
unchanged: the record check, then nothing), the clean drift check of every node (`drift --full`:
check+diff, fresh facts), the plain clean drift (fresh facts, the record check) and `drift
--quick` (the record only); with each one's ratio to the floor. The plain runs' record check
includes node_check on every node (its verdict counts): the bench says on how many it ran.
Needs dockerd and the molecule base image (built when missing). Each figure is wall time of the
whole command, as a user sees it, with site.yml as it stands. Containers are removed at the end."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.task_times import events_dir, task_spans  # noqa: E402
from tests.e2e.labpod import LabPod, ensure_image, last_run, setup_floor, superpod  # noqa: E402
from topology.operate.events import host_tallies, load_events  # noqa: E402

LIMIT = "gpu_nodes"
# (name, superpod arguments), in the order each repetition runs them; `drift --full` last of the
# full runs, so the per-role table below reads the last apply --full and drift --full
RUNS = (("no-op apply --full", ["apply", "--full"]), ("no-op apply", ["apply"]),
        ("clean drift --full", ["drift", "--full"]), ("clean drift", ["drift"]),
        ("clean drift --quick", ["drift", "--quick"]))


def timed(args: list[str]) -> float:
    t0 = time.monotonic()
    proc = superpod(*args)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"`superpod {' '.join(args)}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="no-op apply and drift check repetitions")
    parser.add_argument("--connection", choices=("ssh", "docker"), default="ssh",
                        help="ssh (as real nodes: pipelining, ControlPersist) or docker exec")
    parser.add_argument("--forks", type=int, help="superpod --forks (default: ansible.cfg)")
    parser.add_argument("--strategy", default="mitogen_linear", choices=("linear", "free", "mitogen_linear"),
                        help="ANSIBLE_STRATEGY for every run (default: mitogen_linear, ansible.cfg's); the floor is "
                             "always linear")
    parser.add_argument("--runs-dir", type=Path, help="keep the runs (events) here (default: a temporary directory)")
    opts = parser.parse_args()
    os.environ["ANSIBLE_STRATEGY"] = opts.strategy
    pod = LabPod(groups=(LIMIT,), tag="bench")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pod.start(ensure_image())
            if opts.connection == "ssh":
                pod.enable_ssh(Path(tmp))
            overlay = pod.write_overlay(Path(tmp) / "overlay.yml", opts.connection)
            runs_dir = opts.runs_dir or Path(tmp) / "runs"
            common = ["--stack", pod.stack, "-i", str(overlay), "--runs-dir", str(runs_dir),
                      "--limit", LIMIT, "--no-progress", *(["--forks", str(opts.forks)] if opts.forks else [])]
            floors = [setup_floor(pod, Path(tmp) / "setup-facts", LIMIT)]
            first = timed(["apply", *common])
            runs: dict[str, list[float]] = {name: [] for name, _ in RUNS}
            for _ in range(opts.repeat):
                floors.append(setup_floor(pod, Path(tmp) / "setup-facts", LIMIT))
                for name, args in RUNS:
                    runs[name].append(timed([*args, *common]))
            per_role = {kind: _per_role(last_run(runs_dir, pod.stack, kind)) for kind in ("apply", "drift")}
            recap = host_tallies(load_events(events_dir(last_run(runs_dir, pod.stack, "apply")))).values()
            node_checked = _node_checked(last_run(runs_dir, pod.stack, "converged-check"))
        finally:
            pod.remove()
    base = statistics.median(floors)
    print(f"lab pod: {len(pod.hosts)} GPU nodes in containers over {opts.connection}, strategy {opts.strategy}, "
          f"{os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"floor (ansible -m setup) {base:7.1f} s  (median of {len(floors)}: {', '.join(f'{f:.1f}' for f in floors)})")
    print(f"first apply              {first:7.1f} s  {first / base:5.1f}x floor")
    for name, times in runs.items():
        each = ", ".join(f"{t:.1f}" for t in times)
        median = statistics.median(times)
        print(f"{name:24s} {median:7.1f} s  {median / base:5.1f}x floor  (median of {len(times)}: {each})")
    print(f"the plain runs' record check ran node_check on {len(node_checked)} of {len(pod.hosts)} nodes "
          "(the last plain drift's)")
    print(f"last apply --full: changed={sum(t.changed for t in recap)} ok={sum(t.ok for t in recap)} "
          f"skipped={sum(t.skipped for t in recap)} (changed must be 0)")
    print("per role, last apply --full / last drift --full (s, tasks; bench/task_times.py RUN_DIR for more):")
    for role in sorted(per_role["apply"], key=lambda r: -per_role["apply"][r][0]):
        (a, an), (d, dn) = per_role["apply"][role], per_role["drift"].get(role, (0.0, 0))
        print(f"  {role:20s} {a:7.1f} ({an:3d})  {d:7.1f} ({dn:3d})")


def _node_checked(run_dir: Path) -> set[str]:
    """The hosts on which a record check ran node_check's module (and it answered)."""
    return {(e.get("event_data") or {}).get("host") for e in load_events(events_dir(run_dir))
            if e.get("event") == "runner_on_ok"
            and (e.get("event_data") or {}).get("resolved_action", "").endswith("superpod_node_check")}


def _per_role(run_dir: Path) -> dict[str, tuple[float, int]]:
    out: dict[str, tuple[float, int]] = {}
    for span in task_spans(run_dir):
        secs, n = out.get(span["role"], (0.0, 0))
        out[span["role"]] = (secs + span["seconds"], n + 1)
    return out


if __name__ == "__main__":
    main()
