"""The site's escape hatch on Cumulus: `switch_fabric_extra_nvue` (an NVUE `set` snippet kept in the
inventory's hand-kept group_vars) is merged into the plan before `nv config replace`, so apply
pushes it, a second apply changes nothing and a drift run (--check) does not report it.

The switch is the stand-in `nv` (tests/switch_standins/nv) over a local connection; the plan is
the lab leaf's rendered startup.yaml; the merged revision is judged by NVIDIA's NVUE model."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ANSIBLE_STRATEGY_LINES, stack_layout
from topology.render.switches.build import build_intents
from topology.render.switches.nvue import render_nvue
from topology.render.switches.nvue_model import check_set

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "switch_standins" / "nv"
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
HOST = "su01-leaf-rail0"
# site lines: a login banner (NVUE `system message pre-login`), which the plan never writes
EXTRA = {"system": {"message": {"pre-login": "Authorized use only"}}}

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site_lines")
    sw = next(s for s in build_intents(stack_layout("lab")) if s.name == HOST)
    plan_dir = tmp / "plan"
    plan_dir.mkdir()
    (plan_dir / "startup.yaml").write_text(render_nvue(sw))
    nv = tmp / "nv"
    nv.write_text(f"#!/bin/sh\nFAKE_NVUE_STATE={tmp / 'nvue'} exec {sys.executable} {STANDIN} \"$@\"\n")
    nv.chmod(nv.stat().st_mode | stat.S_IEXEC)
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "superpod_switch_os": "cumulus", "switch_fabric_nv": str(nv), "switch_fabric_config_dir": str(plan_dir),
            "switch_fabric_state_dir": str(tmp / "state"), "switch_fabric_gate": False,
            "switch_fabric_extra_nvue": EXTRA}
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {HOST: host}}}))
    (tmp / "play.yml").write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False,
                                                   "roles": ["switch_fabric"]}]))
    # the switch role runs as superpod runs it (the project's ansible.cfg: mitogen_linear)
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\n{ANSIBLE_STRATEGY_LINES}")
    # The first apply is the fixture's, not the first test's: pytest-xdist may hand this module's
    # tests to two workers (each builds its own switch), and every test needs the pushed switch.
    first_apply[tmp] = _play(tmp)
    return tmp


first_apply: dict[Path, dict] = {}  # each lab's first apply's stats


def _play(lab: Path, *extra: str, hosts: str = "hosts.yml") -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(lab / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(lab / hosts), str(lab / "play.yml"), *extra],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)["stats"][HOST]


def _hosts_with_extras(lab: Path, extras: dict, name: str) -> str:
    """An inventory beside the lab's with other site lines (the lab's own stays as the fixture wrote it)."""
    hosts = yaml.safe_load((lab / "hosts.yml").read_text())
    hosts["all"]["hosts"][HOST]["switch_fabric_extra_nvue"] = extras
    (lab / name).write_text(yaml.safe_dump(hosts))
    return name


def _applied(lab: Path) -> dict:
    return yaml.safe_load((lab / "nvue" / "applied.yaml").read_text())[0]["set"]


def test_site_nvue_is_pushed_with_the_plan_kept_and_not_reported_as_drift(lab):
    planned = yaml.safe_load((lab / "plan" / "startup.yaml").read_text())[0]["set"]
    assert "message" not in planned.get("system", {})  # the plan does not write it: only the site does

    assert first_apply[lab]["changed"] > 0
    applied = _applied(lab)
    assert applied["system"]["message"] == EXTRA["system"]["message"]
    # the plan is whole beside the site's lines
    assert applied["interface"] == planned["interface"]
    assert applied["system"]["hostname"] == planned["system"]["hostname"]
    assert check_set(applied) == []  # the merged revision, judged by NVIDIA's NVUE model

    assert _play(lab)["changed"] == 0  # a second apply: nothing to push
    assert _play(lab, "--check", "--diff")["changed"] == 0  # drift: the site's lines are not drift


def test_without_the_site_lines_drift_reports_them(lab):
    """The same switch checked against a plan without the extras: the banner is drift (the
    comparison sees it, so the test above proves the merge, not a blind compare)."""
    without = _hosts_with_extras(lab, {}, "hosts-without-extras.yml")
    assert _play(lab, "--check", "--diff", hosts=without)["changed"] > 0


def test_a_snippet_the_nvue_model_refuses_stops_the_push_naming_its_path(lab):
    """A misspelt key in the site's lines: NVIDIA's NVUE model refuses the merged plan before anything
    is pushed, naming the path."""
    misspelt = _hosts_with_extras(lab, {"system": {"message": {"pre-logn": "x"}}}, "hosts-misspelt.yml")
    before = (lab / "nvue" / "applied.yaml").read_text()
    env = dict(os.environ, ANSIBLE_CONFIG=str(lab / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(lab / misspelt), str(lab / "play.yml")],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode != 0
    assert "system.message.pre-logn: unknown key" in proc.stdout, proc.stdout[-2000:]
    assert (lab / "nvue" / "applied.yaml").read_text() == before
