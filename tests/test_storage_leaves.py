"""Storage leaves per SU (issue 15, item 14): the seed's one leaf per SU ("8+1") while it holds
the SU's storage ports, else as many leaves as needed; storage refusals name a storage field."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.conftest import spec_with
from tests.invariants import check_all, check_growth
from topology.errors import SpecError
from topology.layout.build import build

# 64 nodes an SU on SN5600 compute leaves: 128 storage ports at 200G do not fit one SN5400.
WIDE = {"nodes_per_su": 64, "compute_fabric": {"switch_model": "sn5600"}}


def test_an_su_gets_as_many_storage_leaves_as_its_ports_need():
    layout = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4, **WIDE))
    check_all(layout)
    leaves = sorted(d.name for d in layout.devices if d.role == "storage_leaf" and d.su == 1)
    assert leaves == ["su01-storage-leaf-a", "su01-storage-leaf-b"]
    nodes_on = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "node-storage_leaf":
            nodes_on[lk.b_device].add(lk.a_device)
    assert {leaf: len(nodes_on[leaf]) for leaf in leaves} == {leaf: 32 for leaf in leaves}
    assert "su01-node33" in nodes_on["su01-storage-leaf-b"]
    # a subnet per leaf, its gateway on that leaf
    gw_of_leaf = {a.device: a.address.split("/")[0] for a in layout.addresses if a.interface == "vlan200"}
    node_gw = {a.device: a.peer for a in layout.addresses if a.pool == "storage" and a.device.startswith("su01-node")}
    assert node_gw["su01-node01"] == gw_of_leaf["su01-storage-leaf-a"]
    assert node_gw["su01-node64"] == gw_of_leaf["su01-storage-leaf-b"]
    uplinks = Counter(lk.a_device for lk in layout.links if lk.tier == "storage_leaf-storage_spine")
    assert uplinks["su01-storage-leaf-a"] == uplinks["su01-storage-leaf-b"] > 0


def test_storage_leaves_per_su_are_growth_stable():
    small = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4, **WIDE))
    big = build(spec_with("roce-1k", scalable_units=4, max_scalable_units=4, **WIDE))
    check_growth(small, big)


def test_the_seed_su_keeps_one_storage_leaf():
    layout = build(spec_with("roce-1k"))
    assert sorted(d.name for d in layout.devices if d.role == "storage_leaf" and d.su == 1) == ["su01-storage-leaf"]


def test_a_storage_refusal_names_a_storage_field_and_a_value_that_works():
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", storage_fabric={"oversubscription": "1:64"}))
    assert e.value.field == "storage_fabric.oversubscription" and "e.g. 2:1" in e.value.rule
