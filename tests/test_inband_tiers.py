"""In-band fabric beyond one pair per SU and beyond two tiers (issue 15, item 14): an SU whose
nodes one pair cannot hold gets more pairs; a pod whose switches the cores cannot all reach gets
in-band spines in blocks and a services pair for the mgmt nodes. Refusals name the fabric, the
field and a value that works."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.conftest import spec_with
from tests.test_gateways import _check_bond_pairs, _check_gateways
from topology.errors import SpecError
from topology.layout.build import build

# 64 nodes an SU: compute on SN5600 (64 x 800G, 128 x 400G), storage off, in-band on SN4600C.
WIDE_SU = {"nodes_per_su": 64, "compute_fabric": {"switch_model": "sn5600"}, "storage_fabric": {"enabled": False}}


def test_an_su_gets_as_many_inband_pairs_as_its_nodes_need():
    layout = build(spec_with("lab", **WIDE_SU))
    switches = sorted(d.name for d in layout.devices if d.role == "inband_switch")
    assert switches == ["su01-inband-a", "su01-inband-b", "su01-inband-c", "su01-inband-d"]
    per_switch = Counter(lk.b_device for lk in layout.links if lk.tier == "node-inband")
    assert per_switch == {s: 32 for s in switches}  # nodes split evenly, in order
    assert {lk.b_device for lk in layout.links if lk.tier == "node-inband" and lk.a_device == "su01-node33"} == {
        "su01-inband-c", "su01-inband-d"}
    _check_bond_pairs(layout)
    _check_gateways(layout)
    # a subnet per pair: the pair's VRR gateway is the gateway of exactly its nodes
    gw = {a.device: a.peer for a in layout.addresses if a.interface == "bond0" and a.device.startswith("su01-node")}
    assert len({gw["su01-node01"], gw["su01-node32"]}) == 1 and gw["su01-node01"] != gw["su01-node33"]


def test_the_seed_su_keeps_one_pair():
    layout = build(spec_with("lab", nodes_per_su=32))
    assert sorted(d.name for d in layout.devices if d.role == "inband_switch") == ["su01-inband-a", "su01-inband-b"]


def _wide(sus: int, max_su: int = 40, **inband):
    return build(spec_with("lab", scalable_units=sus, max_scalable_units=max_su, racks={"racks_per_row": 20},
                           management={"inband": {"mgmt_nodes": 3, **inband}}))


def test_a_pod_past_two_inband_tiers_gets_spines_and_a_services_pair():
    layout = _wide(2)
    roles = Counter(d.role for d in layout.devices)
    assert roles["inband_spine"] == 4 and roles["inband_core"] == 8  # block 1's spines; 4 core groups of 2
    spine_block = {d.name: d.block for d in layout.devices if d.role == "inband_spine"}
    ups = defaultdict(list)
    for lk in layout.links:
        if lk.tier == "inband-spine":
            ups[lk.a_device].append(lk.b_device)
    in_band = [d.name for d in layout.devices if d.role == "inband_switch"]
    assert "inband-svc-a" in in_band and "inband-svc-b" in in_band
    for name in in_band:  # one link to each spine of its block
        assert len(ups[name]) == len(set(ups[name])) == 4 and {spine_block[s] for s in ups[name]} == {1}
    cores_of = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "inband-spine-core":
            cores_of[lk.a_device].add(lk.b_device)
    assert all(len(c) == 2 for c in cores_of.values()) and len(cores_of) == 4
    mgmt = {lk.b_device for lk in layout.links if lk.tier == "mgmt-core"}
    assert mgmt == {"inband-svc-a", "inband-svc-b"}
    _check_bond_pairs(layout)
    _check_gateways(layout)


def test_three_inband_tiers_are_growth_stable():
    small, big = _wide(2), _wide(33)
    assert {a for a in small.addresses if a.pool == "inband"} <= set(big.addresses)
    big_links = {(lk.a_device, lk.a_port, lk.b_device, lk.b_port) for lk in big.links}
    assert {(lk.a_device, lk.a_port, lk.b_device, lk.b_port) for lk in small.links
            if lk.fabric == "inband"} <= big_links
    big_dev = {d.name: (d.rack, d.rack_unit) for d in big.devices}
    assert all(big_dev[d.name] == (d.rack, d.rack_unit) for d in small.devices if d.role.startswith("inband"))


def test_inband_refusals_name_the_inband_fields_and_a_value_that_works():
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", management={"inband": {"uplinks_per_switch": 64}}))
    assert e.value.field == "management.inband.uplinks_per_switch"
    assert "in-band fabric" in e.value.rule and "use at most 61" in e.value.rule


def test_mlag_past_one_core_pair_takes_three_tiers():
    """Two tiers would need four cores and MLAG pairs two: in-band spines and the services pair
    (this was refused: tests/test_large_pods.py)."""
    layout = build(spec_with("lab", scalable_units=1, max_scalable_units=16, management={"inband": {"mgmt_nodes": 3}}))
    roles = Counter(d.role for d in layout.devices)
    assert roles["inband_spine"] == 4 and {lk.b_device for lk in layout.links if lk.tier == "mgmt-core"} == {
        "inband-svc-a", "inband-svc-b"}
    _check_bond_pairs(layout)
    _check_gateways(layout)


@pytest.mark.parametrize("asked", [5, 6])
def test_a_core_minimum_the_fabric_cannot_honour_is_refused_not_ignored(asked):
    # MLAG pairs two cores in two tiers; three tiers give one core per spine uplink (lab: 4): asking
    # for more must name the field, never plan fewer cores than asked
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", management={"inband": {"min_core_switches": asked}}))
    assert e.value.field == "management.inband.min_core_switches" and f"at least {asked}" in e.value.rule


def test_a_core_minimum_within_reach_is_honoured():
    layout = build(spec_with("lab", management={"inband": {"min_core_switches": 3}}))
    assert sum(d.role == "inband_core" for d in layout.devices) >= 3
