"""Issue 33: node_check expects the driver branch and the rail MTU the roles that own them apply,
not "not planned" when the inventory is silent: the inventory's values when it sets them, else
the owning roles' own defaults. Templated by ansible-playbook (tests/roles/playbook.py); the
expected values are read from the owning roles' defaults files, not written here."""

from __future__ import annotations

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

NODE_CHECK = ROOT / "roles" / "node_check"


@pytest.mark.timeout(120)
def test_expectations_come_from_the_inventory_else_the_owning_roles_defaults(tmp_path):
    driver = load(ROOT / "roles/nvidia_driver/defaults/main.yml")
    rails = load(ROOT / "roles/rail_network/defaults/main.yml")
    tasks = [{"name": f"node_check {f}", "ansible.builtin.include_vars": str(NODE_CHECK / f)}
             for f in ("defaults/main.yml", "vars/main.yml")]
    tasks.append({"name": "Expectations", "ansible.builtin.debug": {"msg": {
        "driver": "{{ node_check_expected_driver_version }}", "mtu": "{{ node_check_expected_rail_mtu }}"}}})
    hosts = {"silent": {}, "pinned": {"nvidia_driver_branch": "535", "rail_network_mtu": 4200},
             "exact": {"nvidia_driver_version": "580.159.04"}}
    results = run_play(tmp_path, tasks, hosts, extra_vars={"role_path": str(NODE_CHECK)})
    # (strings, as templated; plan.json.j2 makes the MTU a number)
    got = {host: {k: str(v) for k, v in debug_values(res)[-1].items()} for host, res in results.items()}
    assert got["silent"] == {"driver": str(driver["nvidia_driver_branch"]), "mtu": str(rails["rail_network_mtu"])}
    assert got["pinned"] == {"driver": "535", "mtu": "4200"}
    assert got["exact"]["driver"] == "580.159.04"
