"""Issue 33's switch kinds of drift, through the plain path: a switch's running configuration
edited by hand, and a re-plan that changes only the switch's rendered files. A plain `drift`
must never call the switch clean where `drift --full` reports it, and both must name
switch_fabric's comparison.

The e2e lab pod has no switch that Ansible pushes to (its runs are `--limit gpu_nodes`; the
fabric lab's FRR leaves get the plan's frr.conf directly), so these cases run here: real Ansible
on localhost with the real switch_fabric role, pushing the lab leaf's planned NVUE file
(tests/golden/switches/lab/su01-leaf-rail0, as `superpod plan` renders it) to the `nv`
stand-in of the role's molecule scenario (NVUE's config show/replace/apply/save over files).
Expectations come from the plan file and the role's task names, not from the output."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import ANSIBLE_STRATEGY_LINES, ROOT
from tests.lab_stack_cli import drift_json, lab_args, superpod
from topology.operate import record_key

PLANNED = ROOT / "tests/golden/switches/lab/su01-leaf-rail0/startup.yaml"
# the task whose check-mode difference is the switch's drift (roles/switch_fabric/tasks/nvue.yml)
COMPARE = ("switch_fabric", "Compare the plan with the running configuration")
FAKE_NVUE_STATE = "/var/lib/fake-nvue"  # where the molecule stand-in keeps its revisions

# eleven superpod runs on localhost: ~5 s each on an idle machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(autouse=True)
def _record_key(tmp_path, monkeypatch):
    monkeypatch.setenv(record_key.KEY_ENV, str(tmp_path / "config" / "record.key"))


def _nv_stand_in(state: Path) -> str:
    """The `nv` of roles/switch_fabric/molecule/default/prepare.yml, its revisions kept in `state`."""
    prepare = yaml.safe_load((ROOT / "roles/switch_fabric/molecule/default/prepare.yml").read_text())
    task = next(t for t in prepare[0]["tasks"] if t.get("ansible.builtin.copy", {}).get("dest") == "/usr/local/bin/nv")
    script = task["ansible.builtin.copy"]["content"]
    assert FAKE_NVUE_STATE in script
    return script.replace(FAKE_NVUE_STATE, str(state)).replace("#!/usr/bin/python3", f"#!{os.sys.executable}", 1)


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project whose one switch (localhost) runs switch_fabric; returns (project, the switch's
    planned file under build/, the stand-in's applied revision)."""
    project, switch = tmp_path / "project", tmp_path / "switch"
    (project / "inventories" / "lab").mkdir(parents=True)
    # a copy, not a link: the record trusts only reads of task files inside the project
    shutil.copytree(ROOT / "roles" / "switch_fabric", project / "roles" / "switch_fabric",
                    ignore=shutil.ignore_patterns("molecule"))
    switch.mkdir()
    nv = switch / "nv"
    nv.write_text(_nv_stand_in(switch / "nvue"))
    nv.chmod(0o755)
    planned = project / "build" / "lab" / "switches" / "localhost" / "startup.yaml"
    planned.parent.mkdir(parents=True)
    planned.write_text(PLANNED.read_text())
    (project / "inventories" / "lab" / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "superpod_pod": "lab", "superpod_switch_os": "cumulus", "switch_fabric_nv": str(nv),
        "switch_fabric_state_dir": str(switch / "state"),
        "switch_fabric_gate": False,  # no BGP sessions behind the stand-in to wait for
    }}}}))
    (project / "ansible.cfg").write_text(f"[defaults]\naction_plugins = {ROOT / 'action_plugins'}\n"
                                         f"{ANSIBLE_STRATEGY_LINES}")
    (project / "site.yml").write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - switch_fabric\n")
    return project, planned, switch / "nvue" / "applied.yaml"


def _names(report: dict) -> set[tuple[str, str]]:
    return {(c["role"], c["task"]) for c in report["hosts"]["localhost"].get("changes", [])}


def _converge(project: Path) -> None:
    """The push, then the full run that records the switch converged with nothing to change (a
    run that changed a host recorded its reads from before its writes): from then on a plain
    run checks it by its record."""
    for _ in range(2):
        result = superpod("apply", *lab_args(project))
        assert result.exit_code == 0, result.output


def _plain_equals_full(project: Path) -> None:
    plain_code, plain = drift_json(project)
    full_code, full = drift_json(project, "--full")
    dump = json.dumps({"plain": plain, "full": full}, indent=1)
    assert (plain_code, full_code) == (1, 1), dump
    assert plain["record_clean_hosts"] == [], dump  # the plain path did not call it clean by its record
    for report in (plain, full):
        assert report["hosts"]["localhost"]["status"] == "drift", dump
        assert COMPARE in _names(report), dump
    assert _names(plain) == _names(full), dump


def _clean_by_the_record(project: Path) -> None:
    code, report = drift_json(project)
    assert code == 0 and report["record_clean_hosts"] == ["localhost"], report


def test_a_switch_replanned_or_edited_by_hand_is_never_clean_by_the_record(tmp_path):
    project, planned, applied = _project(tmp_path)
    _converge(project)
    hostname = yaml.safe_load(PLANNED.read_text())[0]["set"]["system"]["hostname"]
    assert yaml.safe_load(applied.read_text())["system"]["hostname"] == hostname  # the plan was pushed
    _clean_by_the_record(project)

    # a re-plan that changes only the switch's rendered file (its swp1 MTU): an input of the run
    plan = yaml.safe_load(planned.read_text())
    plan[0]["set"]["interface"]["swp1"]["link"]["mtu"] = 4200
    planned.write_text(yaml.safe_dump(plan))
    _plain_equals_full(project)
    _converge(project)  # a plain apply pushes it (and the next records the switch converged again)
    assert yaml.safe_load(applied.read_text())["interface"]["swp1"]["link"]["mtu"] == 4200
    _clean_by_the_record(project)

    # the running configuration edited on the switch (a hostname changed by hand)
    running = yaml.safe_load(applied.read_text())
    running["system"]["hostname"] = "edited-by-hand"
    applied.write_text(yaml.safe_dump(running))
    _plain_equals_full(project)
    assert yaml.safe_load(applied.read_text())["system"]["hostname"] == "edited-by-hand"  # a check changes nothing
