"""host_network: the lab plan's in-band bond and storage NICs rendered per platform as Ansible
itself templates them (systemd-networkd on Debian 12, netplan on Ubuntu 22.04/24.04 / DGX OS,
NetworkManager keyfiles on RHEL 9), and the link Ansible is connected through never reconfigured.
Only Debian's files are applied anywhere in CI (molecule): this is the Ubuntu and RHEL check."""

from __future__ import annotations

import configparser
import os

import pytest
import yaml

from tests.role_files import FAMILIES, ROOT, load
from tests.roles.playbook import debug_values, run_play

ROLE = ROOT / "roles" / "host_network"
NODE = load(ROLE / "molecule/default/molecule.yml")["provisioner"]["inventory"]["group_vars"]["gpu_nodes"]
POD = {"superpod_storage_prefix": "10.24.0.0/14"}
BACKEND = {"Debian": "systemd-networkd", "Ubuntu-22": "netplan", "Ubuntu-24": "netplan", "RedHat-9": "networkmanager"}


def render_tasks(extra: dict | None = None) -> list:
    """Load the role's variables as the role does, compute its plan and render every file of the backend."""
    files = ["defaults/main.yml", "vars/main.yml"]
    tasks = [{"name": f"load {f}", "ansible.builtin.include_vars": str(ROLE / f)} for f in files]
    tasks.append({"name": "family", "ansible.builtin.include_vars": str(ROLE / "vars") + "/{{ family }}.yml"})
    tasks.append({"name": "plan", "ansible.builtin.set_fact": {
        "host_network_plan": "{{ lookup('ansible.builtin.template', '" + str(ROLE / "templates/plan.json.j2")
        + "') | from_json }}"}})
    tpl = str(ROLE / "templates")
    tasks.append({"name": "files", "ansible.builtin.debug": {"msg": (
        "{% set out = {} %}{% for item in host_network_plan %}"
        "{% set v = {'item': item, 'ansible_managed': 'managed'} %}"
        "{% set _ = out.update({item.netdev: {"
        "'network': lookup('ansible.builtin.template', '" + tpl + "/link.network.j2', template_vars=v),"
        "'netdev': lookup('ansible.builtin.template', '" + tpl + "/bond.netdev.j2', template_vars=v)"
        " if item.kind == 'bond' else '',"
        "'netplan': lookup('ansible.builtin.template', '" + tpl + "/link.netplan.yaml.j2', template_vars=v)"
        " if item.kind != 'member' else '',"
        "'nm': lookup('ansible.builtin.template', '" + tpl + "/link.nmconnection.j2', template_vars=v)}}) %}"
        "{% endfor %}{{ {'plan': host_network_plan, 'files': out, 'backend': host_network_backend} }}")}})
    return tasks


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    hosts = {f: dict(NODE, **POD, family=f) for f in FAMILIES}
    results = run_play(tmp_path_factory.mktemp("host_network"), render_tasks(), hosts)
    return {f: debug_values(results[f])[-1] for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_uses_its_network_tool(rendered, family):
    assert rendered[family]["backend"] == BACKEND[family]


def test_plan_covers_bond_members_and_storage(rendered):
    plan = rendered["Debian"]["plan"]
    assert [(p["kind"], p["netdev"]) for p in plan] == [
        ("bond", "bond0"), ("member", "enp41s0f1np1"), ("member", "enp170s0f1np1"),
        ("storage", "enp41s0f0np0"), ("storage", "enp170s0f0np0")]
    storage = [p for p in plan if p["kind"] == "storage"]
    assert [(s["table"], s["priority"], s["metric"]) for s in storage] == [(200, 2000, 100), (201, 2001, 101)]
    assert all(s["network"] == "10.24.0.0/28" and s["routes"] == ["10.24.0.0/14"] for s in storage)


def test_networkd_bond_is_lacp_with_the_planned_address(rendered):
    files = rendered["Debian"]["files"]
    netdev = files["bond0"]["netdev"].splitlines()
    assert {"Kind=bond", "Mode=802.3ad", "LACPTransmitRate=fast", "TransmitHashPolicy=layer3+4",
            "MIIMonitorSec=100ms"} <= set(netdev)
    bond = files["bond0"]["network"].splitlines()
    assert "Address=10.16.0.2/28" in bond and "Gateway=10.16.0.1" in bond
    for member in NODE["superpod_inband_members"]:
        lines = files[member]["network"].splitlines()
        assert f"Name={member}" in lines and "Bond=bond0" in lines and not any(x.startswith("Address=") for x in lines)


def test_networkd_storage_nic_has_its_own_table(rendered):
    lines = rendered["Debian"]["files"]["enp170s0f0np0"]["network"].splitlines()
    assert "Address=10.24.0.3/28" in lines and "MTUBytes=9000" in lines
    assert lines.count("Table=201") == 3  # its subnet, the pool via the gateway, and the rule
    assert "From=10.24.0.3/32" in lines and "Priority=2001" in lines
    assert "Destination=10.24.0.0/14" in lines and "Gateway=10.24.0.1" in lines and "Metric=101" in lines


@pytest.mark.parametrize("family", ["Ubuntu-22", "Ubuntu-24"])
def test_netplan_bond_and_storage(rendered, family):
    files = rendered[family]["files"]
    net = yaml.safe_load(files["bond0"]["netplan"])["network"]
    bond = net["bonds"]["bond0"]
    assert bond["interfaces"] == NODE["superpod_inband_members"]
    assert bond["addresses"] == ["10.16.0.2/28"] and bond["routes"] == [{"to": "default", "via": "10.16.0.1"}]
    assert bond["parameters"] == {"mode": "802.3ad", "lacp-rate": "fast", "transmit-hash-policy": "layer3+4",
                                  "mii-monitor-interval": 100}
    assert set(net["ethernets"]) == set(NODE["superpod_inband_members"])
    eth = yaml.safe_load(files["enp41s0f0np0"]["netplan"])["network"]["ethernets"]["enp41s0f0np0"]
    assert eth["addresses"] == ["10.24.0.2/28"] and eth["mtu"] == 9000
    assert {"to": "10.24.0.0/14", "via": "10.24.0.1", "metric": 100} in eth["routes"]
    assert {"to": "10.24.0.0/14", "via": "10.24.0.1", "from": "10.24.0.2", "table": 200} in eth["routes"]
    assert eth["routing-policy"] == [{"from": "10.24.0.2/32", "table": 200, "priority": 2000}]


def _keyfile(text):
    kf = configparser.ConfigParser(interpolation=None)
    kf.read_string(text)
    return kf


def test_networkmanager_keyfiles(rendered):
    files = rendered["RedHat-9"]["files"]
    bond = _keyfile(files["bond0"]["nm"])
    assert bond["connection"]["type"] == "bond" and bond["connection"]["interface-name"] == "bond0"
    assert dict(bond["bond"]) == {"mode": "802.3ad", "lacp_rate": "fast", "xmit_hash_policy": "layer3+4",
                                  "miimon": "100"}
    assert bond["ipv4"]["address1"] == "10.16.0.2/28,10.16.0.1"
    member = _keyfile(files["enp41s0f1np1"]["nm"])
    assert member["connection"]["master"] == "bond0" and member["connection"]["slave-type"] == "bond"
    assert "ipv4" not in member
    storage = _keyfile(files["enp41s0f0np0"]["nm"])
    ipv4 = storage["ipv4"]
    assert ipv4["address1"] == "10.24.0.2/28" and ipv4["never-default"] == "true"
    assert ipv4["route1"] == "10.24.0.0/14,10.24.0.1,100"
    assert ipv4["route2"] == "10.24.0.0/28" and ipv4["route2_options"] == "table=200,src=10.24.0.2"
    assert ipv4["route3"] == "10.24.0.0/14,10.24.0.1" and ipv4["route3_options"] == "table=200,src=10.24.0.2"
    assert ipv4["routing-rule1"] == "priority 2000 from 10.24.0.2/32 table 200"


def role_vars_tasks() -> list[dict]:
    """The role's defaults and vars (where its derived values live), loaded as the role loads them."""
    return [{"name": f"load {f}", "ansible.builtin.include_vars": str(ROLE / f)}
            for f in ("defaults/main.yml", "vars/main.yml")]


CASES = {
    # Ansible reaches the node on its in-band address, carried by bond0: the bond and its members are held.
    "through_bond": ({"default_ipv4": {"interface": "bond0"}, "interfaces": ["lo", "bond0", "eth9"],
                      "bond0": {"ipv4": {"address": "10.16.0.2"}}}, "10.16.0.2",
                     ["bond0", "enp41s0f1np1", "enp170s0f1np1"]),
    # First install over a provisioning NIC: only that NIC is held; the bond may be applied live.
    "through_provisioning_nic": ({"default_ipv4": {"interface": "eno1"}, "interfaces": ["lo", "eno1"],
                                  "eno1": {"ipv4": {"address": "192.168.0.5"}}}, "192.168.0.5", ["eno1"]),
    # Through a bond member directly (bond not up yet): the whole bond is held.
    "through_member": ({"default_ipv4": {}, "interfaces": ["enp41s0f1np1"],
                        "enp41s0f1np1": {"ipv4": {"address": "10.16.0.2"}}}, "10.16.0.2",
                       ["enp41s0f1np1", "bond0", "enp170s0f1np1"]),
}


def test_the_connection_link_is_protected(tmp_path):
    hosts = {}
    for name, (facts, host, _) in CASES.items():
        facts = dict(facts, distribution="Ubuntu", distribution_major_version="24", os_family="Debian")
        hosts[name] = dict(NODE, **POD, test_facts=facts, ansible_host_address=host)
    # ansible_host is the connection's own variable: stand it in through a task var
    show = {"name": "show", "ansible.builtin.debug": {"msg": "{{ host_network_protected }}"},
            "vars": {"ansible_host": "{{ ansible_host_address }}"}}
    results = run_play(tmp_path, [*role_vars_tasks(), show], hosts)
    for name, (_, _, want) in CASES.items():
        assert debug_values(results[name])[-1] == want, name


FAKE_NETWORKCTL = """#!/bin/sh
echo "$0 $*" | sed 's|.*/||' >> "$FAKE_NETWORK_LOG"
"""
PLAN = [{"kind": "bond", "netdev": "bond0", "members": ["enp41s0f1np1", "enp170s0f1np1"]},
        {"kind": "member", "netdev": "enp41s0f1np1"}, {"kind": "member", "netdev": "enp170s0f1np1"},
        {"kind": "storage", "netdev": "enp41s0f0np0"}, {"kind": "storage", "netdev": "enp170s0f0np0"}]
APPLY_CASES = {
    # Ansible is connected through bond0 and only a storage NIC changed: only that NIC is reconfigured.
    "storage_changed": ("bond0", ["enp170s0f0np0"], ["networkctl reload", "networkctl reconfigure enp170s0f0np0"], []),
    # The bond's file changed too: nothing is reloaded (a reload would reconfigure the bond): held.
    "bond_changed": ("bond0", ["bond0", "enp41s0f0np0"], [], ["bond0", "enp41s0f1np1", "enp170s0f1np1"]),
    # First install over a provisioning NIC: the bond is not protected and is applied live.
    "bond_first_install": ("eno1", ["bond0"], ["networkctl reload",
                                               "networkctl reconfigure enp41s0f1np1 enp170s0f1np1"], []),
}


def test_only_changed_unprotected_links_are_reconfigured(tmp_path, monkeypatch):
    """The networkd/netplan apply step as the role runs it, with a stand-in networkctl that records its
    calls: the links come from the files the write changed (its changed_files), a bond's with its members."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "networkctl").write_text(FAKE_NETWORKCTL)
    (bin_dir / "networkctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    apply_tasks = load(ROLE / "tasks/apply-networkd.yml")
    show = {"name": "show", "ansible.builtin.debug": {"msg": "{{ host_network_held }}"}}
    for name, (connected, changed, calls, held) in APPLY_CASES.items():
        log = tmp_path / f"{name}.log"
        log.write_text("")
        host = {
            "test_facts": {"default_ipv4": {"interface": connected}, "interfaces": []},
            "host_network_family_backend": "systemd-networkd", "host_network_plan": PLAN,
            "superpod_inband_interface": "bond0", "superpod_inband_members": ["enp41s0f1np1", "enp170s0f1np1"],
            # what the role's read found: every planned link but the bond present, CAP_NET_ADMIN
            "host_network_state": {"find": {"links": [f"/sys/class/net/{p['netdev']}" for p in PLAN
                                                      if p["kind"] != "bond"]},
                                   "commands": {"pid1_caps": {"stdout": "CapEff:\t0000000000001000"}}},
            # what the write changed: the changed links' files, and the sysctl file (not a link)
            "host_network_files": {"changed_files": [*(f"/etc/systemd/network/60-superpod-host-{n}.network"
                                                       for n in changed),
                                                     "/etc/sysctl.d/60-superpod-host-network.conf"]},
            "host_network_render_argvs": [],
        }
        monkeypatch.setenv("FAKE_NETWORK_LOG", str(log))
        (tmp_path / name).mkdir()
        results = run_play(tmp_path / name, [*role_vars_tasks(), *apply_tasks, show], {name: host})
        assert log.read_text().splitlines() == calls, name
        assert debug_values(results[name])[-1] == held, name


IB_NICS = {"superpod_storage_nics": [
    {"netdev": "ibp41s0f0", "hca": "mlx5_1", "address": "10.24.0.1/23", "gateway": ""},
    {"netdev": "ibp170s0f0", "hca": "mlx5_7", "address": "10.24.0.2/23", "gateway": ""}]}


@pytest.fixture(scope="module")
def rendered_ipoib(tmp_path_factory):
    """An InfiniBand storage fabric (dgx-h100-ib with storage_fabric.switch_model qm9700): IPoIB NICs
    on one on-link subnet with no gateway, as the plan's inventory gives them."""
    validate = [dict(t, vars=dict(t.get("vars", {}), family="{{ family }}")) for t in load(ROLE / "tasks/validate.yml")]
    hosts = {f: dict(NODE, **POD, **IB_NICS, family=f) for f in FAMILIES}
    tasks = render_tasks()
    results = run_play(tmp_path_factory.mktemp("host_network_ib"), tasks[:3] + validate + tasks[3:], hosts)
    return {f: debug_values(results[f])[-1] for f in FAMILIES}


def test_ipoib_storage_is_on_link_with_the_ipoib_mtu(rendered_ipoib):
    storage = [p for p in rendered_ipoib["Debian"]["plan"] if p["kind"] == "storage"]
    # No gateway: nothing is routed (the pool prefix is not reachable past the partition), datagram MTU.
    assert [(s["netdev"], s["gateway"], s["routes"], s["mtu"]) for s in storage] == [
        ("ibp41s0f0", "", [], 4092), ("ibp170s0f0", "", [], 4092)]
    lines = rendered_ipoib["Debian"]["files"]["ibp170s0f0"]["network"].splitlines()
    assert "MTUBytes=4092" in lines and not any(x.startswith("Gateway=") for x in lines)
    assert "Destination=10.24.0.0/23" in lines and lines.count("Table=201") == 2  # its subnet and the rule
    eth = yaml.safe_load(rendered_ipoib["Ubuntu-24"]["files"]["ibp41s0f0"]["netplan"])["network"]["ethernets"]
    assert eth["ibp41s0f0"]["infiniband-mode"] == "datagram" and eth["ibp41s0f0"]["mtu"] == 4092
    assert eth["ibp41s0f0"]["routes"] == [{"to": "10.24.0.0/23", "scope": "link", "from": "10.24.0.1", "table": 200}]
    nm = _keyfile(rendered_ipoib["RedHat-9"]["files"]["ibp41s0f0"]["nm"])
    assert nm["connection"]["type"] == "infiniband" and "ethernet" not in nm
    assert dict(nm["infiniband"]) == {"mtu": "4092", "transport-mode": "datagram"}
    assert nm["ipv4"]["route1"] == "10.24.0.0/23" and "route2" not in nm["ipv4"]
