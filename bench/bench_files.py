"""Controller CPU of a converged role's file writes: one template task per file against one
superpod_files call for all of them (action_plugins/superpod_files.py), on local "hosts", in
CPU seconds (user+sys of ansible-playbook and its workers), the least of several runs.

    .venv/bin/python bench/bench_files.py [--hosts 4] [--files 6] [--repeat 3]

Each way is converged first (its files written), then timed on no-op runs (changed=0, which the
bench checks). The two ways run the same template with the same variables into the same kind of
files; only the number of host-tasks differs (files x hosts, against hosts)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
TEMPLATE = ("# {{ ansible_managed }}\n"
            "{% for k in range(20) %}key{{ k }} = {{ value }}-{{ inventory_hostname }}\n{% endfor %}")


def _plays(root: Path, files: int) -> dict[str, list]:
    def dest(way: str, i: int) -> str:
        return f"{root}/{{{{ inventory_hostname }}}}/way-{way}/f{i}.conf"

    per_task = [{"name": f"Write file {i}", "ansible.builtin.template": {
        "src": "bench.conf.j2", "dest": dest("tasks", i), "owner": "root", "group": "root", "mode": "0644"}}
        for i in range(files)]
    one_call = [{"name": "Write the files", "superpod_files": {"files": [
        {"dest": dest("one", i), "src": "bench.conf.j2", "owner": "root", "group": "root", "mode": "0644"}
        for i in range(files)]}}]
    dirs = [{"name": "Directories", "ansible.builtin.file": {"path": f"{root}/{{{{ inventory_hostname }}}}/way-{w}",
                                                             "state": "directory"}} for w in ("tasks", "one")]
    return {"tasks": dirs[:1] + per_task, "one": dirs[1:] + one_call}


def _run(tmp: Path, play: str) -> tuple[float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([str(PLAYBOOK), "-i", str(tmp / "inventory.yml"), str(tmp / f"{play}.yml")],
                          capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{play}: ansible-playbook exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                         f"{proc.stderr[-3000:]}")
    stats = json.loads(proc.stdout)["stats"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--files", type=int, default=6, help="files per host (a role's writes)")
    parser.add_argument("--repeat", type=int, default=3, help="no-op runs per way (the least is reported)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "templates").mkdir()
        (tmp / "templates" / "bench.conf.j2").write_text(TEMPLATE)
        hosts = {f"node{i:02d}": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "value": i} for i in range(opts.hosts)}
        (tmp / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
        (tmp / "ansible.cfg").write_text(
            f"[defaults]\nlibrary = {ROOT / 'library'}\naction_plugins = {ROOT / 'action_plugins'}\n"
            f"strategy_plugins = {ROOT / 'topology/operate/strategy_plugins'}\nstrategy = mitogen_linear\n"
            "forks = 50\ndeprecation_warnings = false\n")
        for way, tasks in _plays(tmp / "out", opts.files).items():
            (tmp / f"{way}.yml").write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
        print(f"{opts.hosts} local hosts, {opts.files} files each, mitogen_linear, load {os.getloadavg()[0]:.1f}")
        for way, label in (("tasks", "a template task per file"), ("one", "one superpod_files call")):
            _run(tmp, way)  # converge
            runs = []
            for _ in range(opts.repeat):
                cpu, stats = _run(tmp, way)
                if any(s.get("changed") for s in stats.values()):
                    raise SystemExit(f"{way}: a no-op run changed something: {stats}")
                runs.append(cpu)
            host_tasks = sum(s.get("ok", 0) + s.get("skipped", 0) for s in stats.values())
            print(f"{label:28s} no-op {min(runs):6.2f} CPU s (least of {', '.join(f'{r:.2f}' for r in runs)}), "
                  f"{host_tasks} host-task results")
        print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
