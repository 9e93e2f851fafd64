"""NVIDIA's Ethernet variant for DGX nodes (issue 15, item 1): storage and in-band share the
port-2 bond (DGX BasePOD deployment guide, "Networking": slot 1 and slot 2 port 2 bonded "for
in-band management and storage ethernet networks"; port 1 only for InfiniBand storage), chosen
by `storage_fabric.node_ports: inband_bond`. Nodes cable no storage ports; their storage traffic
leaves bond0 through the SU's in-band pair, which routes it over cabled, addressed /31s to the
SU's storage leaf and on through the storage spines to the storage servers' leaves."""

from __future__ import annotations

from collections import defaultdict

import netaddr
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_with
from tests.invariants import check_all, check_growth
from topology.errors import SpecError
from topology.layout.build import build
from topology.render.inventory import render_inventory
from topology.render.switches.build import build_intents

CONVERGED = {"storage_fabric": {"node_ports": "inband_bond"}}


@pytest.fixture(scope="module")
def layout():
    return build(spec_with("roce-1k", **CONVERGED))


def test_nodes_cable_no_storage_port_and_hold_no_storage_address(layout):
    check_all(layout)
    nodes = {d.name for d in layout.devices if d.role == "gpu_node"}
    assert not [lk for lk in layout.links if lk.tier == "node-storage_leaf"]
    assert not [a for a in layout.addresses if a.pool == "storage" and a.device in nodes]
    # the bond is port 2 of each card, as without the option
    members = {lk.a_port for lk in layout.links if lk.tier == "node-inband"}
    assert members == {"enp41s0f1np1", "enp170s0f1np1"}


def test_each_su_inband_switch_routes_to_its_su_storage_leaf(layout):
    by_end = {(a.device, a.interface): a for a in layout.addresses}
    asn = {a.device: a.asn for a in layout.asns}
    junction = [lk for lk in layout.links if lk.tier == "inband-storage_leaf"]
    su_switches = {d.name: d.su for d in layout.devices if d.role == "inband_switch" and d.su is not None}
    assert {lk.a_device for lk in junction} == set(su_switches)
    su_of_leaf = {d.name: d.su for d in layout.devices if d.role == "storage_leaf"}
    for lk in junction:
        assert su_of_leaf[lk.b_device] == su_switches[lk.a_device], lk
        a, b = by_end[(lk.a_device, lk.a_port)], by_end[(lk.b_device, lk.b_port)]
        assert a.network == b.network and a.network.endswith("/31")
        assert lk.a_device in asn and lk.b_device in asn


def test_the_inband_pair_announces_its_nodes_subnet_to_the_storage_fabric(layout):
    intents = {sw.name: sw for sw in build_intents(layout)}
    inband_net = {a.device: a.network for a in layout.addresses if a.interface == "bond0"}
    node_net = inband_net["su01-node01"]
    sw = intents["su01-inband-a"]
    assert sw.bgp is not None and sw.bgp.router_id
    assert "su01-storage-leaf" in {n.peer for n in sw.bgp.neighbors}
    announced = netaddr.IPSet(sw.bgp.networks) | netaddr.IPSet(sw.bgp.aggregates)
    assert netaddr.IPNetwork(node_net) in announced
    leaf = intents["su01-storage-leaf"]
    assert "su01-inband-a" in {n.peer for n in leaf.bgp.neighbors}


def test_inventory_storage_rides_the_bond(layout, tmp_path):
    files = render_inventory(layout, tmp_path)
    hosts = yaml.safe_load(next(v for k, v in files.items() if k.name == "hosts.yml"))
    found = defaultdict(dict)

    def walk(group):
        for name, hv in (group.get("hosts") or {}).items():
            found[name].update(hv or {})
        for child in (group.get("children") or {}).values():
            walk(child or {})
    walk(hosts["all"])
    node = found["su01-node01"]
    assert node["superpod_storage_nics"] == []
    assert node["superpod_inband_members"] == ["enp41s0f1np1", "enp170s0f1np1"]


def test_converged_storage_is_growth_stable():
    small = build(spec_with("lab", **CONVERGED))
    big = build(spec_with("lab", scalable_units=2, **CONVERGED))
    check_all(big)
    check_growth(small, big)


def test_infiniband_storage_cannot_share_the_bond():
    with pytest.raises(SpecError) as e:
        build(spec_with("dgx-h100-ib", storage_fabric={"switch_model": "qm9700", "node_ports": "inband_bond"}))
    assert e.value.field == "storage_fabric.node_ports"


def test_default_keeps_dedicated_storage_ports():
    layout = build(spec_with("lab"))
    assert [lk for lk in layout.links if lk.tier == "node-storage_leaf"]
    assert not [lk for lk in layout.links if lk.tier == "inband-storage_leaf"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(storage=st.sampled_from(["sn5400", "sn5600"]), nodes=st.sampled_from([4, 8, 16, 32, 64]),
       sus=st.integers(1, 3), ratio=st.sampled_from(["1:1", "2:1", "4:1"]),
       inband=st.sampled_from(["sn4600c", "sn5400"]))
def test_generated_converged_pods_hold_the_invariants(storage, nodes, sus, ratio, inband):
    def pod(built):
        return spec_with("lab", scalable_units=built, max_scalable_units=sus, nodes_per_su=nodes,
                         compute_fabric={"switch_model": "sn5600"},
                         storage_fabric={"switch_model": storage, "oversubscription": ratio,
                                         "node_ports": "inband_bond"},
                         management={"inband": {"switch_model": inband, "core_switch_model": inband}})
    try:
        big = build(pod(sus))
    except SpecError as e:  # refusals name the field to change
        assert e.field.startswith(("storage_fabric.", "management.", "racks.", "nodes_per_su")), e
        return
    check_all(big)
    junction = [lk for lk in big.links if lk.tier == "inband-storage_leaf"]
    assert {lk.a_device for lk in junction} == {d.name for d in big.devices if d.role == "inband_switch" and d.su}
    check_growth(build(pod(1)), big)


def test_a_bond_too_full_for_its_storage_links_is_refused_with_a_ratio_that_fits():
    with pytest.raises(SpecError) as e:
        build(spec_with("roce-1k", storage_fabric={"node_ports": "inband_bond", "oversubscription": "1:1"}))
    assert e.value.field == "storage_fabric.node_ports" and 'oversubscription "2:1"' in e.value.rule
    check_all(build(spec_with("roce-1k", storage_fabric={"node_ports": "inband_bond", "oversubscription": "2:1"})))
