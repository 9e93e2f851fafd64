"""Run a small play against local "hosts" with ansible-playbook and read back what each task
returned: the role tests use it to see values as Ansible itself templates them (ansible-core's
own None/str/list handling, not a Jinja2 imitation) without a container."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ANSIBLE_STRATEGY_LINES

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"


FACTS_MODULE = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"facts": {"type": "dict", "required": True}})
module.exit_json(changed=False, ansible_facts=module.params["facts"])
"""


def run_play(tmp: Path, tasks: list, hosts: dict[str, dict], extra_vars: dict | None = None,
             gather_facts: bool = False, check: bool = False, mitogen: bool = True,
             handlers: list | None = None, vars_files: list[str] | None = None) -> dict[str, list[dict]]:
    """Run `tasks` on each local host (name -> host vars); return host -> [task results in order].
    A host var `test_facts` becomes that host's ansible_facts (distribution, architecture...)
    before the tasks run, so one local machine stands for Ubuntu, RHEL or a Grace node.
    check=True runs the play under --check (ansible_check_mode true, as in a drift run).
    handlers: the play's handlers (their results follow the tasks', when notified).
    mitogen=False: Ansible's builtin linear strategy, for a module that re-executes itself under
    another Python (apt's respawn to the system Python with python3-apt: mitogen runs modules in
    its own interpreter and cannot).
    vars_files: files the play loads before its tasks (a role's defaults and vars): the same
    variables as an include_vars task per file, without a task per host per file to run (each one
    a forked worker on the controller), for the tests that only need the values."""
    (tmp / "library").mkdir(exist_ok=True)
    (tmp / "library" / "test_facts.py").write_text(FACTS_MODULE)
    tasks = [{"name": "Stand-in facts", "test_facts": {"facts": "{{ test_facts }}"},
              "when": "test_facts is defined"}] + tasks
    inventory = {name: dict(v, ansible_connection="local", ansible_python_interpreter=sys.executable)
                 for name, v in hosts.items()}
    (tmp / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": inventory}}))
    play = {"hosts": "all", "gather_facts": gather_facts, "tasks": tasks}
    if handlers:
        play["handlers"] = handlers
    if vars_files:
        play["vars_files"] = [str(f) for f in vars_files]
    (tmp / "play.yml").write_text(yaml.safe_dump([play]))
    (tmp / "extra.json").write_text(json.dumps(extra_vars or {}))
    # the roles run as the project's ansible.cfg runs them (mitogen_linear); its note that
    # third-party strategies are deprecated is left out of the stderr a failure shows
    strategy = ANSIBLE_STRATEGY_LINES if mitogen else ""
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\n"
                                     f"library = {tmp / 'library'}:{ROOT / 'library'}\n"
                                     f"filter_plugins = {ROOT / 'filter_plugins'}\n"
                                     f"action_plugins = {ROOT / 'action_plugins'}\n{strategy}"
                                     "private_role_vars = true\ndeprecation_warnings = false\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="8")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(tmp / "inventory.yml"), "-e", f"@{tmp / 'extra.json'}",
                           *(["--check"] if check else []), str(tmp / "play.yml")],
                          capture_output=True, text=True, env=env, check=False)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"ansible-playbook gave no JSON: {proc.stderr[-2000:]}") from exc
    results: dict[str, list[dict]] = {name: [] for name in hosts}
    for play in out["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                results[host].append(dict(res, task=task["task"]["name"]))
    return results


def debug_values(results: list[dict]) -> list:
    """The `msg` of each debug task a host ran, in order."""
    return [r["msg"] for r in results if r.get("action") == "ansible.builtin.debug" and "msg" in r]


def assert_refused(failures: dict[str, str], case: str, fragments, output: Path) -> None:
    """A bad-input case failed, its message names each fragment (each broken rule), and the file
    the role would have written is not there."""
    assert case in failures, f"{case} was accepted"
    for fragment in fragments:
        assert fragment in failures[case]
    assert not output.exists()
