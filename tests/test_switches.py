"""Switch configs from the plan: NVUE structure derived from the layout, golden files, QoS
values held equal to the hosts' roce_qos defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, spec_with, stack_layout
from topology.layout.build import build
from topology.render.switches import render_switch_configs
from topology.render.switches.build import build_intents
from topology.render.switches.nvue import render_nvue
from topology.render.switches.qos import ROCE_QOS

GOLDEN = Path(__file__).parent / "golden" / "switches"
ROUTED = {"leaf", "spine", "core", "storage_leaf", "storage_spine"}


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(text: str):
    return yaml.load(text, Loader=LOADER)  # noqa: S506 (a safe loader, libyaml's)


def _nvue(layout) -> dict[str, dict]:
    return {sw.name: _load(render_nvue(sw))[0]["set"] for sw in build_intents(layout)}


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_every_planned_link_is_an_interface_with_its_planned_address(stack):
    layout = stack_layout(stack)
    configs = _nvue(layout)
    addr = {(a.device, a.interface): a.address for a in layout.addresses}
    checked = 0
    for lk in layout.links:
        for dev, port, peer, peer_port in (
            (lk.a_device, lk.a_port, lk.b_device, lk.b_port),
            (lk.b_device, lk.b_port, lk.a_device, lk.a_port),
        ):
            if dev not in configs or port == "eth0":
                continue
            iface = configs[dev]["interface"][port]
            assert iface["description"] == f"{peer}:{peer_port}"
            assert iface["link"]["mtu"] == 9216
            assert iface["link"]["speed"] == f"{lk.speed_gbps}G"
            if lk.tier in ("node-leaf", "leaf-spine", "spine-core", "storage_leaf-storage_spine"):
                assert list(iface["ipv4"]["address"]) == [addr[(dev, port)]], (dev, port)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_every_bgp_neighbor_is_a_planned_peer_with_its_planned_asn(stack):
    layout = stack_layout(stack)
    asn = {a.device: a.asn for a in layout.asns}
    by_peer_ip = {a.address.split("/")[0]: a.device for a in layout.addresses if a.pool == "fabric_p2p"}
    intents = {sw.name: sw for sw in build_intents(layout)}
    for name, sw in intents.items():
        if sw.role in ("inband_core", "oob_switch", "oob_aggregation"):  # tests/test_border.py, test_oob_routing.py
            continue
        if sw.role in ("inband_switch", "inband_spine"):  # tests/test_inband_routing.py (peer-link session too)
            continue
        if sw.role not in ROUTED:
            assert sw.bgp is None
            continue
        assert sw.bgp.asn == asn[name]
        assert f"{sw.loopback.split('/')[0]}" == sw.bgp.router_id
        # one session per cable to another routed switch, none other
        fabric_links = [
            lk
            for lk in layout.links
            if name in (lk.a_device, lk.b_device) and {lk.a_device, lk.b_device} - {name} <= set(asn)
            and lk.tier != "device-oob"  # its eth0 on the rack's OOB switch: a bridged port, no session
        ]
        assert len(sw.bgp.neighbors) == len(fabric_links) > 0
        for n in sw.bgp.neighbors:
            assert by_peer_ip[n.address] == n.peer
            assert n.remote_as == asn[n.peer]


def test_nvue_neighbors_and_asn_in_the_rendered_yaml():
    layout = stack_layout("lab")
    asn = {a.device: a.asn for a in layout.asns}
    cfg = _nvue(layout)["su01-leaf-rail3"]
    assert cfg["router"]["bgp"]["autonomous-system"] == asn["su01-leaf-rail3"]
    nbrs = cfg["vrf"]["default"]["router"]["bgp"]["neighbor"]
    assert {n["remote-as"] for n in nbrs.values()} == {asn["spine-01"]}
    assert len(nbrs) == 4  # four uplinks to the lab's one spine
    ipv4 = cfg["vrf"]["default"]["router"]["bgp"]["address-family"]["ipv4-unicast"]
    assert ipv4["multipaths"]["ebgp"] >= 4


def test_qos_equals_the_host_role_defaults():
    host = yaml.safe_load((ROOT / "roles/roce_qos/defaults/main.yml").read_text())
    assert host["roce_qos_trust"] == ROCE_QOS.trust
    assert tuple(host["roce_qos_pfc_priorities"]) == ROCE_QOS.pfc_priorities
    assert tuple(host["roce_qos_ecn_priorities"]) == ROCE_QOS.ecn_traffic_classes
    assert dict(ROCE_QOS.dscp_to_tc) == {int(k): v for k, v in host["roce_qos_dscp2prio"].items()}
    assert host["roce_qos_rdma_cm_tos"] >> 2 in dict(ROCE_QOS.dscp_to_tc)  # RDMA-CM's DSCP is mapped
    cfg = _nvue(stack_layout("lab"))["su01-leaf-rail0"]["qos"]
    assert cfg["mapping"]["default-global"]["trust"] == "l3"
    assert cfg["mapping"]["default-global"]["dscp"]["26"]["switch-priority"] == 3
    assert cfg["mapping"]["default-global"]["dscp"]["48"]["switch-priority"] == 6
    assert list(cfg["pfc"]["default-global"]["switch-priority"]) == ["3"]
    assert cfg["congestion-control"]["default-global"]["traffic-class"]["3"]["ecn"] == "enable"
    assert "pfc-watchdog" in cfg


def test_lossless_qos_only_on_the_rdma_fabrics():
    """Compute (RoCE) and storage (GDS over RDMA, storage_fabric.qos default lossless); the
    in-band and OOB networks carry no RDMA. tests/test_storage_qos.py has the storage ports."""
    for sw in build_intents(stack_layout("lab")):
        rdma = sw.fabric in ("compute", "storage")
        assert (sw.qos is not None) == rdma
        if sw.fabric == "compute":
            assert all(p.lossless for p in sw.ports)
        elif not rdma:
            assert not any(p.lossless for p in sw.ports)


def test_mgmt_vrf_on_eth0_with_the_oob_address():
    layout = stack_layout("lab")
    oob = {a.device: a for a in layout.addresses if a.interface == "eth0"}
    for name, cfg in _nvue(layout).items():
        if name in oob:
            assert list(cfg["interface"]["eth0"]["ipv4"]["address"]) == [oob[name].address]
            assert cfg["interface"]["eth0"]["vrf"] == "mgmt"
            assert list(cfg["vrf"]["mgmt"]["router"]["static"]["0.0.0.0/0"]["via"]) == [oob[name].peer]


def test_leaf_announces_its_rail_aggregate_and_breakouts_split_cages():
    layout = stack_layout("lab")
    intents = {sw.name: sw for sw in build_intents(layout)}
    rails = {a.network for a in layout.addresses if a.device == "su01-leaf-rail0" and a.pool == "rails"}
    leaf = intents["su01-leaf-rail0"].bgp
    assert set(leaf.networks) == {"10.255.0.0/32"} | rails
    import netaddr

    for agg in leaf.aggregates:
        assert all(netaddr.IPNetwork(n) in netaddr.IPNetwork(agg) for n in rails)
    storage = intents["su01-storage-leaf"]
    # host cages split for the nodes' 200G ports; uplinks (swp63-64) run unsplit at 400G
    assert {b.cage for b in storage.breakouts} == {"swp1", "swp2", "swp3", "swp4"}
    assert all(b.lanes == 2 and b.speed_gbps == 200 for b in storage.breakouts)
    cfg = _nvue(layout)["su01-storage-leaf"]["interface"]
    assert cfg["swp1"]["link"]["breakout"] == {"2x": {}}
    assert list(cfg["vlan200"]["ipv4"]["address"]) == [storage.svis[0].address]


def test_unnumbered_option_peers_over_ports():
    layout = build(spec_with("lab", compute_fabric={"bgp_peering": "unnumbered"}))
    cfg = _nvue(layout)["su01-leaf-rail0"]["vrf"]["default"]["router"]["bgp"]["neighbor"]
    assert set(cfg) == {"swp61", "swp62", "swp63", "swp64"}
    assert all(n["type"] == "unnumbered" and n["remote-as"] == "external" for n in cfg.values())


def test_nvue_yaml_reads_back_for_every_switch_of_roce_1k():
    """nvue.py writes YAML itself (fast); PyYAML must read each file back as one `set` mapping."""
    for sw in build_intents(stack_layout("roce-1k")):
        doc = _load(render_nvue(sw))
        assert isinstance(doc, list) and list(doc[0]) == ["set"]
        assert doc[0]["set"]["system"]["hostname"] == sw.name
        assert all(isinstance(k, str) for k in doc[0]["set"]["interface"])


def test_infiniband_switches_get_no_ip_config_and_the_subnet_manager_its_own():
    layout = stack_layout("dgx-h100-ib")
    files = render_switch_configs(layout, Path("/out"))
    ib = {d.name for d in layout.devices if d.role in ("leaf", "spine", "core")}
    assert not any(p.parent.name in ib for p in files)
    conf = files[Path("/out/switches/subnet-manager/opensm.conf")]
    assert "routing_engine ftree,updn" in conf
    assert "Default=0x7fff" in files[Path("/out/switches/subnet-manager/partitions.conf")]


def test_switch_os_per_fabric_picks_the_files():
    layout = build(spec_with("lab", compute_fabric={"switch_os": "sonic"}))
    files = render_switch_configs(layout, Path("/out"))
    names = {(p.parent.name, p.name) for p in files}
    assert ("su01-leaf-rail0", "config_db.json") in names and ("su01-leaf-rail0", "frr.conf") in names
    assert ("su01-storage-leaf", "startup.yaml") in names  # storage fabric stays on the default


GOLDEN_CASES = [
    ("lab", "su01-leaf-rail0", "startup.yaml", {}),
    ("roce-1k", "su01-leaf-rail0", "startup.yaml", {}),
    ("roce-1k", "spine-01", "startup.yaml", {}),
    ("lab", "su01-leaf-rail0", "config_db.json", {"compute_fabric": {"switch_os": "sonic"}}),
    ("lab", "su01-leaf-rail0", "frr.conf", {"compute_fabric": {"switch_os": "sonic"}}),
    ("lab", "su01-inband-a", "startup.yaml", {}),
    ("lab", "inband-core-01", "startup.yaml", {}),
    # cores on SN5400: SONiC's SN4600C platform has no 4 x 25G breakout (tests/test_sonic_platform.py)
    ("lab", "su01-inband-a", "config_db.json", {"management": {"inband": {"switch_os": "sonic",
                                                                          "core_switch_model": "sn5400"}}}),
]


@pytest.mark.parametrize(("stack", "device", "name", "changes"), GOLDEN_CASES)
def test_golden(stack, device, name, changes):
    layout = build(spec_with(stack, **changes)) if changes else stack_layout(stack)
    text = render_switch_configs(layout, Path("/out"))[Path("/out/switches") / device / name]
    suffix = "-sonic" if changes else ""
    golden = GOLDEN / f"{stack}{suffix}" / device / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"regenerate with UPDATE_GOLDEN=1 if intended: {golden}"


def test_diff_lists_per_switch_what_changes():
    from topology.render.diff import diff_layouts

    grown = build(spec_with("lab", scalable_units=2))
    changes = diff_layouts(stack_layout("lab"), grown)["switch configs"]
    assert "su02-leaf-rail0/startup.yaml" in changes.added
    spine = [c for c in changes.changed if c.startswith("spine-01/startup.yaml")]
    assert spine and "+" in spine[0]  # the spine gains the second SU's leaves
    assert not diff_layouts(stack_layout("lab"), stack_layout("lab"))["switch configs"]


def test_a_port_named_as_another_interface_entry_is_written_once_where_the_dict_puts_it():
    # NVUE's ports go out as one run (nvue.py _PortRun); a port that shares its name with a later
    # entry (here an SVI) keeps the mapping's rule: one key, in the port's place, the later value
    from dataclasses import replace

    from topology.render.switches.intent import Port, Svi

    sw = next(i for i in build_intents(stack_layout("lab")) if i.os == "cumulus" and i.ports)
    clash = Port("vlan999", 100, "peer:eth0")
    sw = replace(sw, ports=(clash, *sw.ports), svis=(*sw.svis, Svi(999, "10.9.9.1/24")))
    text = render_nvue(sw)
    assert text.count("\n      vlan999:\n") == 1
    interfaces = yaml.safe_load(text)[0]["set"]["interface"]
    assert interfaces["vlan999"]["type"] == "svi"
    assert list(interfaces).index("vlan999") == list(interfaces).index(sw.ports[1].name) - 1
