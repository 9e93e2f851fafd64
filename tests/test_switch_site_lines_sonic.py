"""The site's escape hatch on SONiC, with the vault's secrets beside it:
`switch_fabric_extra_config_db` (ConfigDB entries merged key by key over the plan's) and
`switch_fabric_extra_frr` (FRR lines appended to frr.conf in a marked block, checked by FRR's own
parser before the push) from the inventory: apply pushes them, a second apply changes nothing,
drift (--check) does not report them, and a line FRR refuses stops the push. The plan also has
SNMPv3 users and TACACS+: their secrets come from the vault variables, land in the running
ConfigDB and nowhere in the role's output or state.

The switch is the SONiC stand-ins (tests/switch_standins: `config`, `sonic-cfggen`, `frr-reload`)
over a local connection, their state in a temporary folder; the check is Debian's real `vtysh -C`
(on a switch it runs in the bgp container); the plan is the lab leaf's rendered files on SONiC."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ANSIBLE_STRATEGY_LINES, spec_with
from topology.layout.build import build
from topology.render.switches import render_switch_configs

ROOT = Path(__file__).resolve().parents[1]
STANDINS = ROOT / "tests" / "switch_standins"
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
HOST = "su01-leaf-rail0"
SITE_DB = {"SYSLOG_SERVER": {"198.51.100.14": {"port": "514"}},  # a table the plan does not write
           "DEVICE_METADATA": {"localhost": {"timezone": "Europe/Berlin"}}}  # a field in a planned row
SITE_FRR = ["ip prefix-list SITE-EXTRA seq 5 permit 198.51.100.0/24"]
SWITCH_OWN = {"DEVICE_METADATA": {"localhost": {"hwsku": "ACS-SN4600C", "platform": "x86_64-mlnx_msn4600c-r0",
                                                "mac": "1c:34:da:00:00:01"}},
              "FEATURE": {"bgp": {"state": "enabled"}}}

SNMP_AUTH, SNMP_PRIV, TACACS_KEY = "Auth-Secret-0009", "Priv-Secret-0009", "Tacacs-Key-0009"
SECRETS = (SNMP_AUTH, SNMP_PRIV, TACACS_KEY)

pytestmark = [pytest.mark.timeout(400),
              pytest.mark.skipif(shutil.which("vtysh") is None, reason="vtysh (Debian's frr) is the judge")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site_lines_sonic")
    layout = build(spec_with("lab", compute_fabric={"switch_os": "sonic"},
                             switch_services={"snmp_users": [{"name": "monitor"}], "tacacs_servers": ["192.0.2.49"]}))
    plan_dir = tmp / "plan"
    plan_dir.mkdir()
    for path, text in render_switch_configs(layout, tmp / "build").items():
        if path.parent.name == HOST:
            (plan_dir / path.name).write_text(text)
    state, etc = tmp / "sonic", tmp / "etc"
    (etc / "frr").mkdir(parents=True)
    state.mkdir()
    (state / "configdb.json").write_text(json.dumps(SWITCH_OWN))
    (etc / "config_db.json").write_text(json.dumps(SWITCH_OWN))
    wrappers = {}
    for name in ("config", "sonic-cfggen", "frr-reload"):
        w = tmp / name
        w.write_text(f"#!/bin/sh\nFAKE_SONIC_STATE={state} FAKE_SONIC_ETC={etc} exec {sys.executable} "
                     f"{STANDINS / name} \"$@\"\n")
        w.chmod(w.stat().st_mode | stat.S_IEXEC)
        wrappers[name] = str(w)
    candidate = etc / "frr" / "frr.conf.candidate"
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "superpod_switch_os": "sonic", "switch_fabric_config_dir": str(plan_dir),
            "switch_fabric_state_dir": str(tmp / "state"), "switch_fabric_gate": False,
            "switch_fabric_sonic_config": wrappers["config"], "switch_fabric_sonic_cfggen": wrappers["sonic-cfggen"],
            "switch_fabric_sonic_frr_reload": [wrappers["frr-reload"], "--reload", str(etc / "frr" / "frr.conf")],
            "switch_fabric_sonic_config_db": str(etc / "config_db.json"),
            "switch_fabric_sonic_frr_conf": str(etc / "frr" / "frr.conf"),
            "switch_fabric_sonic_frr_candidate": str(candidate),
            "switch_fabric_sonic_frr_check": ["vtysh", "-C", "-f", str(candidate)],
            "switch_fabric_extra_config_db": SITE_DB, "switch_fabric_extra_frr": SITE_FRR,
            "vault_switch_snmp_users": {"monitor": {"auth": SNMP_AUTH, "priv": SNMP_PRIV}},
            "vault_switch_tacacs_key": TACACS_KEY}
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {HOST: host}}}))
    (tmp / "play.yml").write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False,
                                                   "roles": ["switch_fabric"]}]))
    # the switch role runs as superpod runs it (the project's ansible.cfg: mitogen_linear)
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\n{ANSIBLE_STRATEGY_LINES}")
    return tmp


def _play(lab: Path, *extra: str, ok: bool = True) -> tuple[dict, str]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(lab / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(lab / "hosts.yml"), str(lab / "play.yml"), *extra],
                          capture_output=True, text=True, env=env, check=False)
    assert (proc.returncode == 0) == ok, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = proc.stdout[proc.stdout.index("{"):]  # -v says which config file first
    return json.loads(report)["stats"][HOST], proc.stdout + proc.stderr


def _hosts(lab: Path, **changes) -> None:
    hosts = yaml.safe_load((lab / "hosts.yml").read_text())
    hosts["all"]["hosts"][HOST].update(changes)
    (lab / "hosts.yml").write_text(yaml.safe_dump(hosts))


def test_site_configdb_and_frr_lines_are_pushed_with_the_plan_and_not_reported_as_drift(lab):
    planned = json.loads((lab / "plan" / "config_db.json").read_text())
    assert "SYSLOG_SERVER" not in planned and "timezone" not in planned["DEVICE_METADATA"]["localhost"]

    first, out = _play(lab, "-v")
    assert first["changed"] > 0
    running = json.loads((lab / "sonic" / "configdb.json").read_text())
    assert running["SNMP_USER"]["monitor"]["SNMP_USER_AUTH_PASSWORD"] == SNMP_AUTH  # the vault's, as pushed
    assert running["TACPLUS"]["global"]["passkey"] == TACACS_KEY
    assert not any(pw in (lab / "plan" / name).read_text() for pw in SECRETS for name in ("config_db.json", "frr.conf"))
    assert running["SYSLOG_SERVER"] == SITE_DB["SYSLOG_SERVER"]
    meta = running["DEVICE_METADATA"]["localhost"]
    assert meta["timezone"] == "Europe/Berlin" and meta["hostname"] == HOST  # the site's field beside the plan's
    assert meta["hwsku"] == SWITCH_OWN["DEVICE_METADATA"]["localhost"]["hwsku"]  # and the switch's own
    assert running["PORT"] == {k: {**v, **running["PORT"][k]} for k, v in planned["PORT"].items()}
    frr = (lab / "sonic" / "frr-running.conf").read_text()
    plan_frr = (lab / "plan" / "frr.conf").read_text()
    assert frr.startswith(plan_frr) and SITE_FRR[0] in frr.split("! BEGIN site lines")[1]
    assert not (lab / "etc" / "frr" / "frr.conf.candidate").exists()

    again, out2 = _play(lab, "-v")
    assert again["changed"] == 0  # a second apply: nothing to push
    drift, out3 = _play(lab, "--check", "--diff", "-v")
    assert drift["changed"] == 0  # drift: the site's lines are not drift
    state = "".join(p.read_text() for p in (lab / "state").rglob("*") if p.is_file())
    assert not any(pw in out + out2 + out3 + state for pw in SECRETS)  # no secret in output or state


def test_a_site_frr_line_frrs_parser_refuses_stops_the_push(lab):
    before = (lab / "sonic" / "frr-running.conf").read_text()
    _hosts(lab, switch_fabric_extra_frr=["ip prefix-list SITE-EXTRA seq 5 permitt 198.51.100.0/24"])
    try:
        _stats, out = _play(lab, ok=False)
    finally:
        _hosts(lab, switch_fabric_extra_frr=SITE_FRR)
    assert "FRR's parser refuses frr.conf with the site's lines" in out
    assert (lab / "sonic" / "frr-running.conf").read_text() == before


def test_without_the_site_lines_drift_reports_them(lab):
    """The comparison sees the site's lines (so the first test proves the merge, not a blind compare)."""
    _hosts(lab, switch_fabric_extra_config_db={}, switch_fabric_extra_frr=[])
    try:
        assert _play(lab, "--check", "--diff")[0]["changed"] > 0
    finally:
        _hosts(lab, switch_fabric_extra_config_db=SITE_DB, switch_fabric_extra_frr=SITE_FRR)
