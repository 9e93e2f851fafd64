"""Large pods plan with the default management settings (MLAG pairs, SN4600C in-band cores):
NVIDIA's reference sizes beyond two in-band cores were refused ("MLAG pairs exactly two in-band
cores and this pod needs 4") from 15 to 30 SUs of 32 nodes. A pod whose in-band switches need
more than one core pair now takes the in-band fabric's three-tier shape (blocks under in-band
spines, the mgmt nodes' bonds on the services pair, an MLAG pair like every SU's), and the
cores keep cages for their border uplinks."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.invariants import check_all
from tests.test_gateways import _check_bond_pairs, _check_gateways
from topology import catalog
from topology.layout.build import build
from topology.layout.inband import size_inband
from topology.spec import parse


def _pod(sus: int, kind: str) -> dict:
    compute = {"kind": "roce", "switch_model": "sn5600"} if kind == "roce" else {
        "kind": "infiniband", "switch_model": "qm9700", "fabric_manager": True}
    return {"name": f"ra-{sus}su", "node_model": "dgx-h100", "scalable_units": sus, "nodes_per_su": 32,
            "compute_fabric": compute}


@pytest.mark.parametrize(("sus", "kind"), [
    (16, "roce"), (16, "infiniband"),
    pytest.param(64, "infiniband", marks=pytest.mark.slow),  # 2,047 nodes: the invariants take ~20 s
])
def test_nvidias_reference_sizes_plan_with_default_management(sus, kind):
    layout = build(parse(_pod(sus, kind)))
    check_all(layout)
    _check_bond_pairs(layout)
    if sus <= 16:  # the same code at 64 SUs, four times the nodes (~25 s more)
        _check_gateways(layout)
    roles = Counter(d.role for d in layout.devices)
    assert roles["gpu_node"] == sus * 32 - (1 if kind == "infiniband" else 0)  # the UFM takes SU 1's slot
    assert roles["inband_spine"] > 0 and roles["inband_switch"] == sus * 2 + 2  # SU pairs and the services pair
    border = Counter(lk.a_device for lk in layout.border_links)
    assert set(border) == {d.name for d in layout.devices if d.role == "inband_core"}
    assert set(border.values()) == {2}  # management.inband.border_uplinks' default on every core


def test_no_pod_size_is_refused_for_want_of_core_pairs():
    cat = catalog.load()
    for sus in range(1, 65):
        size_inband(parse(_pod(sus, "roce")), cat)  # raised SpecError from 15 to 30 SUs
