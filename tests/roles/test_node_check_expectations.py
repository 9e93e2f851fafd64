"""Issue 33: node_check expects the driver branch and the rail MTU the roles that own them apply,
not "not planned" when the inventory is silent: the inventory's values when it sets them, else
the owning roles' own defaults; each rail's MTU and speed come from the generated
inventory. Templated by ansible-playbook (tests/roles/playbook.py); the
expected values are read from the owning roles' defaults files, not written here."""

from __future__ import annotations

import pytest
import yaml

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

NODE_CHECK = ROOT / "roles" / "node_check"


@pytest.mark.timeout(120)
def test_expectations_come_from_the_inventory_else_the_owning_roles_defaults(tmp_path):
    driver = load(ROOT / "roles/nvidia_driver/defaults/main.yml")
    tasks = [{"name": f"node_check {f}", "ansible.builtin.include_vars": str(NODE_CHECK / f)}
             for f in ("defaults/main.yml", "vars/main.yml")]
    tasks.append({"name": "Expectations", "ansible.builtin.debug": {"msg": {
        "driver": "{{ node_check_expected_driver_version }}", "mtu": "{{ node_check_expected_rail_mtu }}"}}})
    hosts = {"silent": {}, "pinned": {"nvidia_driver_branch": "535", "rail_network_mtu": 4200},
             "exact": {"nvidia_driver_version": "580.159.04"}}
    results = run_play(tmp_path, tasks, hosts, extra_vars={"role_path": str(NODE_CHECK)})
    # (strings, as templated; plan.json.j2 makes the MTU a number)
    got = {host: {k: str(v) for k, v in debug_values(res)[-1].items()} for host, res in results.items()}
    assert got["silent"] == {"driver": str(driver["nvidia_driver_branch"]), "mtu": "None"}  # per rail: below
    assert got["pinned"] == {"driver": "535", "mtu": "4200"}
    assert got["exact"]["driver"] == "580.159.04"


@pytest.mark.timeout(120)
def test_rail_mtu_and_speed_come_from_the_generated_inventory(tmp_path):
    """The plan node_check compares with (plan.json.j2), for the lab pod's first node as
    `superpod plan` renders it (RoCE, 400G rails) and for the same rails without mtu/speed_mbps
    (an inventory from before they were planned: rail_network's default MTU, speed unchecked)."""
    from topology import build, catalog
    from topology.render.inventory import render_inventory
    from topology.render.switches.intent import HOST_RAIL_MTU
    from topology.spec import load_stack_file

    layout = build(load_stack_file(str(ROOT / "Pulumi.lab.yaml")))
    files = render_inventory(layout, tmp_path / "inv")
    hosts_yml = next(text for path, text in files.items() if path.name == "hosts.yml")
    node = yaml.safe_load(hosts_yml)["all"]["children"]["gpu_nodes"]["hosts"]["su01-node01"]
    model = catalog.load().nodes[node["superpod_node_model"]]
    assert layout.spec.compute_fabric.kind == "roce"
    want = {(HOST_RAIL_MTU, model.compute_nic_speed_gbps * 1000)}
    assert {(r["mtu"], r["speed_mbps"]) for r in node["rails"]} == want
    rails = load(ROOT / "roles/rail_network/defaults/main.yml")
    tasks = [{"name": f"node_check {f}", "ansible.builtin.include_vars": str(NODE_CHECK / f)}
             for f in ("defaults/main.yml", "vars/main.yml")]
    plan = "lookup('ansible.builtin.template', role_path ~ '/templates/plan.json.j2') | from_json"
    # as an inventory override would (include_vars above outranks host vars; set_fact outranks it)
    tasks.append({"name": "Switch", "ansible.builtin.set_fact": {
        "node_check_rail_speed_check": "{{ speed_check | default(true) }}"}})
    tasks.append({"name": "Plan", "ansible.builtin.debug": {"msg": "{{ (" + plan + ").expected.links }}"},
        "vars": {"node_check_in_container": False}})
    old = [{k: v for k, v in r.items() if k not in ("mtu", "speed_mbps")} for r in node["rails"]]
    hosts = {"planned": {"rails": node["rails"]}, "older": {"rails": old},
             "override": {"rails": node["rails"], "rail_network_mtu": 4200},
             "speed off": {"rails": node["rails"], "speed_check": False}}
    results = run_play(tmp_path, tasks, hosts, extra_vars={"role_path": str(NODE_CHECK)})
    links = {host: debug_values(res)[-1] for host, res in results.items()}
    planned = [(r["netdev"], r["mtu"], r["speed_mbps"]) for r in node["rails"]]
    assert [(x["netdev"], x["mtu"], x["speed"]) for x in links["planned"]] == planned
    assert {(x["mtu"], x["speed"]) for x in links["older"]} == {(rails["rail_network_mtu"], None)}
    assert {x["mtu"] for x in links["override"]} == {4200}
    # links without a real speed (the e2e lab's veth cables): the MTU still from the plan, the speed
    # not compared and the reason carried to the report
    assert [(x["netdev"], x["mtu"], x["speed"]) for x in links["speed off"]] == [(n, m, None) for n, m, _ in planned]
    assert {x["speed_unchecked"] for x in links["speed off"]} == {"node_check_rail_speed_check is false"}
    assert {x["speed_unchecked"] for x in links["planned"]} == {""}
