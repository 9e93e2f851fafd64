"""What rail_network's plan costs the controller per use as a role var (a lazy template lookup, rendered
again at every use) against one set_fact (rendered once): why the role keeps it a fact (issue 39).

    .venv/bin/python bench/bench_plan_fact.py [--uses 20] [--runs 3]

Run from the project root (its ansible.cfg: the mitogen_linear strategy). One local host, the lab
node's eight rails (the role's molecule inventory), the role's own templates/plan.json.j2; a play of
`--uses` debug tasks that each use the plan, once with the plan set by a set_fact task and once as a
play var. Prints the CPU seconds (user+sys of ansible-playbook and
its workers), least of `--runs` fresh runs each, the difference per use, and the load average."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ROLE = ROOT / "roles/rail_network"
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


def play(mode: str, uses: int) -> list[dict]:
    node = yaml.safe_load((ROLE / "molecule/default/molecule.yml").read_text())
    rails = node["provisioner"]["inventory"]["host_vars"]["rail-network-node01"]["rails"]
    role_vars = {**yaml.safe_load((ROLE / "defaults/main.yml").read_text()),
                 **yaml.safe_load((ROLE / "vars/main.yml").read_text())}
    plan_vars = {k: role_vars[k] for k in ("rail_network_file_prefix", "rail_network_table_base",
                                           "rail_network_rule_priority_base", "rail_network_mtu",
                                           "rail_network_ipoib_enabled", "rail_network_ipoib_mtu",
                                           "rail_network_ipoib_addresses")}
    plan = "{{ lookup('ansible.builtin.template', '" + str(ROLE / "templates/plan.json.j2") + "') | from_json }}"
    play_vars = dict(plan_vars, rail_network_rails=rails, rail_network_fabric_kind="roce")
    # the same number of tasks both ways: the fact's set_fact, or a set_fact of nothing
    tasks = [{"ansible.builtin.set_fact": {"rail_network_plan": plan} if mode == "fact" else {"unused": 1}}]
    if mode == "var":
        play_vars["rail_network_plan"] = plan
    tasks += [{"ansible.builtin.debug": {"msg": "{{ rail_network_plan | map(attribute='netdev') | list }}"}}] * uses
    return [{"hosts": "all", "gather_facts": False, "vars": play_vars, "tasks": tasks}]


def cpu_seconds(tmp: Path, mode: str, uses: int) -> float:
    (tmp / f"{mode}.yml").write_text(yaml.safe_dump(play(mode, uses)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="false")
    subprocess.run([str(PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / f"{mode}.yml")], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uses", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "hosts.yml").write_text(yaml.safe_dump(
            {"all": {"hosts": {"h1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
        best = {mode: min(cpu_seconds(tmp, mode, opts.uses) for _ in range(opts.runs)) for mode in ("fact", "var")}
    print(f"{opts.uses} uses of the plan, least of {opts.runs} runs: set_fact {best['fact']:.2f} CPU s, "
          f"role var {best['var']:.2f} CPU s, {(best['var'] - best['fact']) / opts.uses:.3f} CPU s per use "
          f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
