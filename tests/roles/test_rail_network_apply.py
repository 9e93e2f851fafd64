"""rail_network's apply step on systemd-networkd (Debian; Ubuntu through netplan), as the role runs
it with stand-in networkctl/netplan/systemctl that record their calls. `networkctl reload`
reconfigures every link whose file changed, not only the rails: when host_network held back a change
to the link Ansible is connected through (its local fact lists it as pending in this boot), a
reload here would apply that bond change mid-run. Then nothing is reloaded and the rails wait too,
reported; otherwise only the rail links present are reconfigured."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

ROLE = ROOT / "roles/rail_network"
FAKE = """#!/bin/sh
echo "$0 $*" | sed 's|.*/||' >> "$FAKE_NETWORK_LOG"
"""
PLAN = [{"netdev": "enp24s0np0", "rail": 0}, {"netdev": "enp64s0np0", "rail": 1}]
BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
RELOAD = ["networkctl reload", "networkctl reconfigure enp24s0np0 enp64s0np0"]

CASES = {
    # host_network applied everything (or never ran): reload and reconfigure the rails present.
    "nothing_held": (None, ["x"], RELOAD, []),
    # host_network holds bond0 in this boot: no reload, no netplan generate; the rails wait, named.
    "bond_held_this_boot": ({"boot_id": BOOT_ID, "pending": ["bond0", "enp41s0f1np1"]}, ["netplan"], [],
                           ["enp24s0np0", "enp64s0np0"]),
    # held in an earlier boot: applied by that reboot, nothing pending now.
    "held_last_boot": ({"boot_id": "0" * 32, "pending": ["bond0"]}, ["netplan"], ["netplan generate"] + RELOAD, []),
    # only the networkd.conf changed and nothing is held: networkd restarts (it re-reads its own conf).
    "conf_changed": (None, ["conf"], ["systemctl restart systemd-networkd"], []),
    # the conf changed but the bond is held: a restart would apply the bond too; deferred.
    "conf_changed_bond_held": ({"boot_id": BOOT_ID, "pending": ["bond0"]}, ["conf"], [],
                               ["enp24s0np0", "enp64s0np0"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reload_never_applies_what_host_network_held(tmp_path, monkeypatch, case):
    fact, what, calls, deferred = CASES[case]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("networkctl", "netplan", "systemctl"):
        (bin_dir / tool).write_text(FAKE)
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    log = tmp_path / "calls.log"
    log.write_text("")
    monkeypatch.setenv("FAKE_NETWORK_LOG", str(log))
    fact_file = tmp_path / "superpod_host_network.fact"
    if fact is not None:
        fact_file.write_text(json.dumps(fact))
    host = {
        "rail_network_plan": PLAN, "rail_network_present": PLAN, "rail_network_can_netadmin": True,
        "rail_network_host_network_facts_file": str(fact_file),
        "rail_network_family_service": "systemd-networkd",
        "rail_network_render_argvs": [["netplan", "generate"]] if "netplan" in what else [],
        "rail_network_files_changed": True, "rail_network_conf_changed": "conf" in what,
        "rail_network_restart_argv": ["systemctl", "restart", "systemd-networkd"],
    }
    tasks = load(ROLE / "tasks/apply-networkd.yml")
    show = {"name": "show", "ansible.builtin.debug": {"msg": "{{ rail_network_deferred }}"}}
    results = run_play(tmp_path, tasks + [show], {case: host})
    assert log.read_text().splitlines() == calls
    assert debug_values(results[case])[-1] == deferred


def test_every_networkd_reload_goes_through_the_guarded_step():
    """No other task of the role reloads or restarts networkd, or renders netplan, on its own."""
    for path in (ROLE / "tasks").glob("*.yml"):
        if path.name == "apply-networkd.yml":
            continue
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        assert "state: reloaded" not in code and "state: restarted" not in code, path.name
        assert "['networkctl'" not in code and "command: networkctl" not in code, path.name
        assert path.name == "netplan.yml" or "rail_network_netplan_generate_argv" not in code, path.name
