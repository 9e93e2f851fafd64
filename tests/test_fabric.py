"""The layout rules: seed designs, NVIDIA's reference counts, invariants, growth."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_with, stack_layout
from tests.invariants import check_all, check_growth
from topology.errors import SpecError
from topology.layout.build import build


def counts(layout):
    roles = Counter(d.role for d in layout.devices)
    tiers = Counter(lk.tier for lk in layout.links)
    return roles, tiers


def test_examples_hold_invariants(example):
    name, layout = example
    check_all(layout)


def test_seed_1k_design():
    roles, tiers = counts(stack_layout("roce-1k"))
    assert (roles["gpu_node"], roles["leaf"], roles["spine"], roles["core"]) == (128, 32, 16, 0)
    assert tiers["node-leaf"] == 1024 and tiers["leaf-spine"] == 1024 and tiers["spine-core"] == 0


def test_seed_8k_design():
    layout = stack_layout("roce-8k")
    roles, tiers = counts(layout)
    assert (roles["gpu_node"], roles["leaf"], roles["spine"], roles["core"]) == (1024, 256, 256, 128)
    assert tiers["node-leaf"] == tiers["leaf-spine"] == tiers["spine-core"] == 8192
    assert layout.facts["gpus"] == 8192 and layout.facts["tiers"] == 3


# NVIDIA DGX SuperPOD H100 reference architecture, compute fabric component counts
# (UFM in SU 1): SUs -> (nodes, leaves, spines, node+UFM cables, leaf-spine cables).
NVIDIA_H100_RA = {
    1: (31, 8, 4, 252, 256),
    2: (63, 16, 8, 508, 512),
    3: (95, 24, 16, 764, 768),
    4: (127, 32, 16, 1020, 1024),
}


@pytest.mark.parametrize("sus", sorted(NVIDIA_H100_RA))
def test_nvidia_h100_reference_counts(sus):
    layout = build(spec_with("dgx-h100-ib", scalable_units=sus, max_scalable_units=sus))
    roles, tiers = counts(layout)
    nodes, leaves, spines, down_cables, up_cables = NVIDIA_H100_RA[sus]
    assert roles["gpu_node"] == nodes and roles["ufm"] == 2  # the RA's UFM HA pair, 2 links each
    assert roles["leaf"] == leaves and roles["spine"] == spines and roles["core"] == 0
    assert tiers["node-leaf"] + tiers["ufm-leaf"] == down_cables
    assert tiers["leaf-spine"] == up_cables
    check_all(layout)


def test_without_ufm_every_slot_is_a_node():
    layout = build(spec_with("dgx-h100-ib", compute_fabric={"fabric_manager": False, "switch_subnet_manager": True}))
    roles, tiers = counts(layout)
    assert roles["gpu_node"] == 128 and roles["ufm"] == 0 and tiers["node-leaf"] == 1024


def test_three_su_pod_uses_four_su_spines():
    three = build(spec_with("roce-1k", scalable_units=3, max_scalable_units=3))
    assert Counter(d.role for d in three.devices)["spine"] == 16


# SN5600 (800G cages) pods: tests/test_switch_links.py reproduces one plane of NVIDIA's DGX
# SuperPOD B300 Spectrum-X counts (1-8 SUs of 64 nodes, 800G uplinks; 16 SUs with each 800G
# cage split into 400G legs to two spines, in two tiers).


def test_names_are_positional():
    layout = stack_layout("roce-8k")
    names = layout.by_name
    assert "su02-node17" in names and "su02-leaf-rail3" in names and "spine-007" in names and "core-012" in names
    assert names["su02-leaf-rail3"].rail == 3 and names["su02-leaf-rail3"].su == 2


@pytest.mark.parametrize("base,small,big", [("roce-1k", 1, 4), ("roce-1k", 3, 4), ("roce-8k", 5, 6),
                                            ("dgx-h100-ib", 1, 2), ("lab", 1, 2)])
def test_growth_changes_nothing_existing(base, small, big):
    top = max(big, stack_layout(base).spec.max_su)
    a = build(spec_with(base, scalable_units=small, max_scalable_units=top))
    b = build(spec_with(base, scalable_units=big, max_scalable_units=top))
    check_growth(a, b)
    assert len(b.links) > len(a.links)


FABRICS = st.sampled_from([("roce", "sn5400"), ("roce", "sn5600"), ("infiniband", "qm9700")])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=FABRICS, sus=st.integers(1, 5), extra=st.integers(0, 3),
       nodes=st.sampled_from([2, 3, 4, 8, 16, 24, 31, 32, 48, 64]),
       ratio=st.sampled_from(["1:1", "2:1", "3:1", "4:3"]), ufm=st.booleans(),
       model=st.sampled_from(["dgx-h100", "hgx-h100-8x400g", "hgx-h100-8x400g-lc", "dgx-b200"]),
       rail_mode=st.sampled_from(["p2p", "per_leaf"]), cooling=st.sampled_from(["air", "liquid"]))
def test_generated_specs_hold_invariants(fabric, sus, extra, nodes, ratio, ufm, model, rail_mode, cooling):
    kind, switch = fabric
    try:
        spec = spec_with("lab", node_model=model, scalable_units=sus, max_scalable_units=sus + extra,
                         nodes_per_su=nodes, racks={"cooling": cooling},
                         compute_fabric={"kind": kind, "switch_model": switch, "oversubscription": ratio,
                                         "fabric_manager": ufm and kind == "infiniband",
                                         "switch_subnet_manager": not ufm and kind == "infiniband"},
                         addressing={"rail_mode": rail_mode})
        small = build(spec)
    except SpecError:
        return  # a spec the rules refuse is fine here; the refusal tests pin the messages
    check_all(small)
    if extra:
        bigger = build(spec_with("lab", **{**spec.model_dump(exclude_none=True), "scalable_units": sus + 1}))
        check_growth(small, bigger)
