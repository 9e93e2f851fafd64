"""How a no-op run grows with hosts: N node containers (the molecule base image, reached over SSH
as the lab pod is, with ansible.cfg's pipelining and ControlPersist), a cheap role converged
once, then for each size the floor (`ansible -m setup`) and a no-op run of the role, on the
first N hosts (`--limit`).

    .venv/bin/python bench/bench_scale.py [--sizes 4,8,16] [--forks N] [--tasks 20]
                                          [--strategies linear,mitogen_linear]

The role has the shape of this project's roles, per --tasks block of five: a stat, a
set_fact, a read-only command probe, a task skipped by its condition and a template written
once (so the no-op run has changed=0). Prints seconds and seconds per host per task."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.labpod import ROOT, LabPod, ensure_image  # noqa: E402


def block(i: int) -> list[dict]:
    """Five tasks shaped like the roles' (a no-op after the first run)."""
    return [
        {"name": f"Probe {i}: stat", "ansible.builtin.stat": {"path": "/etc/hostname", "get_checksum": False},
         "register": f"bench_stat_{i}"},
        {"name": f"Probe {i}: set_fact",
         "ansible.builtin.set_fact": {f"bench_fact_{i}": "{{ bench_stat_" + str(i) + ".stat.exists }}"}},
        {"name": f"Probe {i}: command", "ansible.builtin.command": "cat /proc/loadavg", "changed_when": False,
         "check_mode": False},
        {"name": f"Probe {i}: skipped", "ansible.builtin.debug": {"msg": "never"},
         "when": "bench_never | default(false)"},
        {"name": f"Probe {i}: file written once",
         "ansible.builtin.copy": {"content": f"bench {i}\n", "dest": f"/etc/bench-{i}.conf", "mode": "0644"}},
    ]


def write_role(root: Path, blocks: int) -> Path:
    tasks = [task for i in range(blocks) for task in block(i)]
    (root / "roles/bench_cheap/tasks").mkdir(parents=True)
    (root / "roles/bench_cheap/tasks/main.yml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    playbook = root / "bench.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Cheap role", "hosts": "all", "gather_facts": False,
                                         "roles": ["bench_cheap"]}], sort_keys=False))
    return playbook


def run(args: list[str], env: dict) -> tuple[float, int]:
    """Wall seconds, and the recap's changed count summed over hosts."""
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, sum(int(c) for c in re.findall(r"changed=(\d+)", proc.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,8,16", help="host counts, ascending (containers: the largest)")
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20, help="tasks in the role (a multiple of 5)")
    parser.add_argument("--strategies", default="linear", help="strategies to compare, each on every size")
    opts = parser.parse_args()
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    pod = LabPod.unplanned([f"scale-node{i:03d}" for i in range(1, sizes[-1] + 1)], f"perf-scale-{os.getpid()}")
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        playbook = write_role(tmp, opts.tasks // 5)
        env = os.environ | {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(tmp / "roles"),
                            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp / "facts"), "ANSIBLE_NOCOLOR": "1",
                            "ANSIBLE_FORKS": str(opts.forks)}
        try:
            t0 = time.monotonic()
            pod.start(ensure_image())
            pod.enable_ssh(tmp)
            inventory = tmp / "hosts.yml"
            inventory.write_text(yaml.safe_dump({"all": {"hosts": {
                h: {**pod._connection_vars(h, "ssh"), "ansible_python_interpreter": "/usr/bin/python3"}
                for h in pod.hosts}}}))
            boot = time.monotonic() - t0
            run([str(bin_dir / "ansible-playbook"), "-i", str(inventory), str(playbook)], env)  # converge
            rows = []
            for n in sizes:
                limit = ",".join(pod.hosts[:n])
                floor, _ = run([str(bin_dir / "ansible"), "-i", str(inventory), limit, "-m", "setup", "-o"], env)
                for strategy in opts.strategies.split(","):
                    noop, changed = run([str(bin_dir / "ansible-playbook"), "-i", str(inventory), "--limit", limit,
                                         str(playbook)], env | {"ANSIBLE_STRATEGY": strategy})
                    rows.append((n, strategy, floor, noop, changed))
        finally:
            pod.remove()
    print(f"{sizes[-1]} node containers (boot {boot:.0f} s), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"forks {opts.forks}, role of {opts.tasks} tasks, SSH with pipelining and ControlPersist")
    print(f"{'hosts':>5} {'strategy':>15} {'floor s':>8} {'no-op s':>8} {'x floor':>8} {'ms/host/task':>13} "
          f"{'changed':>8}")
    for n, strategy, floor, noop, changed in rows:
        print(f"{n:5d} {strategy:>15} {floor:8.1f} {noop:8.1f} {noop / floor:8.1f} "
              f"{1000 * noop / n / opts.tasks:13.0f} {changed:8d}")


if __name__ == "__main__":
    main()
