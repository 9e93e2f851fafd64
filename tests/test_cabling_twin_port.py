"""Twin-port cages and split ports order the cables they need (issue 15 item 6, "h-cabling").

An 800G twin-port OSFP (Quantum-2 QM9700, Spectrum-4 SN5600) carries two 400G engines, each with
its own MPO-12/APC connector: an 800G link takes two fibres, a 400G port one, and a 200G port half
a 1:2 splitter fibre. The switch's module serves every port of its cage, and NVIDIA's adapter
optics (single-port flat-top OSFP, QSFP112) are not for switch cages (NVIDIA MMA4Z00-NS,
MMA4Z00-NS400, MMA1Z00-NS400 product specifications)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from math import ceil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_with, stack_layout
from topology import catalog
from topology.errors import SpecError
from topology.layout.build import build
from topology.layout.cabling import End, parts
from topology.layout.model import Link
from topology.render.bom import bom_lines
from topology.render.tables import cabling_csv

OPTICAL = ("MMF", "SMF")


def _sn5600(sus: int):
    return spec_with("roce-1k", scalable_units=sus, max_scalable_units=sus, nodes_per_su=64,
                     compute_fabric={"switch_model": "sn5600"}, racks={"racks_per_row": 20},
                     storage_fabric={"switch_model": "sn5600"},
                     management={"inband": {"switch_model": "sn5400", "core_switch_model": "sn5400",
                                            "uplinks_per_switch": 2}})


def _rows(layout):
    body = "\n".join(line for line in cabling_csv(layout).splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


def test_800g_twin_port_links_take_two_mpo_fibres():
    layout = build(_sn5600(1))
    ups = [lk for lk in layout.links if lk.tier == "leaf-spine"]
    assert {lk.speed_gbps for lk in ups} == {800}
    optical = [lk for lk in ups if lk.media in OPTICAL]
    assert optical, "an SU's leaf-spine runs leave the rack"
    for lk in optical:
        assert lk.a_part == lk.b_part and lk.a_part in ("MMA4Z00-NS", "MMS4X00-NS", "MMS4X00-NM"), lk
        assert (lk.cable_count, lk.cable_shared) == (2, 1), lk  # one MPO-12/APC per 400G engine
        assert lk.cable_part.startswith(("MFP7E10-N", "MFP7E30-N")), lk
    # the BOM orders two fibres per 800G optical link
    fibres = sum(b.quantity for b in bom_lines(layout) if b.category == "cable" and b.part.startswith("MFP7E10"))
    mmf = [lk for lk in (*layout.links, *layout.border_links) if lk.cable_part.startswith("MFP7E10")]
    assert fibres == sum(lk.cable_count for lk in mmf if lk.cable_shared == 1) + sum(
        ceil(n / 2) for n in Counter((lk.cable_part, lk.length_class) for lk in mmf if lk.cable_shared == 2).values())
    rows = {(r["a_device"], r["a_port"]): r for r in _rows(layout)}
    assert all(rows[(lk.a_device, lk.a_port)]["cable_qty"] == "2" for lk in optical)


def test_quantum2_cages_take_twin_port_modules_one_fibre_per_400g_port():
    layout = stack_layout("dgx-h100-ib")
    cat = catalog.load()
    for lk in layout.links:
        if lk.media not in OPTICAL:
            continue
        for dev, part, shared in ((lk.a_device, lk.a_part, lk.a_shared), (lk.b_device, lk.b_part, lk.b_shared)):
            if layout.by_name[dev].model == "qm9700":
                # one twin-port module serves the cage's two 400G ports
                assert part in ("MMA4Z00-NS", "MMS4X00-NS", "MMS4X00-NM") and shared == 2, (lk, part)
        assert lk.speed_gbps != 400 or (lk.cable_count, lk.cable_shared) == (1, 1), lk
    node_leaf = [lk for lk in layout.links if lk.tier == "node-leaf" and lk.media in OPTICAL]
    # the DGX's twin-port cages: one flat-top twin-port module per two ConnectX-7
    assert {lk.a_part for lk in node_leaf} <= {"MMA4Z00-NS-FLT", "MMS4X00-NM-FLT"}
    assert {lk.cable_part.split("-N")[0] for lk in node_leaf} <= {"MFP7E10", "MFP7E30"}
    assert cat.switches["qm9700"].ports_per_cage == 2


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_no_adapter_optic_in_a_switch_cage(stack):
    layout = stack_layout(stack)
    cat = catalog.load()
    use = {o.part: o.use for o in cat.optics}
    for lk in layout.links:
        if lk.media not in OPTICAL:
            continue
        for dev, part in ((lk.a_device, lk.a_part), (lk.b_device, lk.b_part)):
            is_switch = layout.by_name[dev].model in cat.switches
            if part in use:
                assert use[part] in ("any", "switch" if is_switch else "host"), (lk, part)


@pytest.mark.parametrize("stack", ["roce-1k", "dgx-h100-ib"])
def test_200g_ports_ride_half_a_splitter_fibre(stack):
    layout = stack_layout(stack)
    split = [lk for lk in layout.links if lk.speed_gbps == 200 and lk.media in OPTICAL]
    assert split
    for lk in split:
        # a 400G SR4/DR4 on two channels runs 200G: MFP7E20 (1:2) serves two ports
        assert lk.cable_part.startswith(("MFP7E20-N", "MFP7E40-N")) and (lk.cable_count, lk.cable_shared) == (1, 2), lk
        assert lk.a_part in ("MMA1Z00-NS400", "generic-400G-DR4-QSFP112"), lk


def test_copper_to_a_twin_port_cage_is_nvidias_splitter_cable():
    # a QM9700 cage's two 400G ports to two ConnectX-7 QSFP112 ports within 3 m: one MCP7Y10 (800G
    # twin-port OSFP to 2 x 400G QSFP112); four NDR200 ports to OSFP adapters: one MCP7Y50
    cat = catalog.load()
    qm = cat.switches["qm9700"]
    lk = Link("su01-leaf-rail0", "1/1/1", "n", "p", "compute", "node-leaf", 400)
    two = parts(cat, lk, End(qm.form, qm.lane_gbps, qm.cage_speed_gbps, 2, True), End("QSFP112", 100, 400, 1), 2)
    assert (two.media, two.cable, two.shared) == ("DAC", "MCP7Y10-N002", 2) and two.a_part == two.cable
    lk200 = Link("su01-leaf-rail0", "1/1/1/1", "n", "p", "compute", "node-leaf", 200)
    four = parts(cat, lk200, End(qm.form, qm.lane_gbps, qm.cage_speed_gbps, 4, True), End("OSFP", 100, 200, 1), 1.5)
    assert (four.cable, four.shared) == ("MCP7Y50-N01A", 4)
    acc = parts(cat, lk, End(qm.form, qm.lane_gbps, qm.cage_speed_gbps, 2, True), End("OSFP", 100, 400, 1), 4)
    assert (acc.media, acc.cable) == ("ACC", "MCA7J60-N004")


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_no_assembly_splits_at_both_ends_and_25g_lanes_plug_qsfp28(stack):
    layout = stack_layout(stack)
    for lk in layout.links:
        if lk.media not in OPTICAL and lk.media != "CAT6":
            assert min(lk.a_shared, lk.b_shared) == 1, lk
        if lk.media == "AOC" or (lk.media == "DAC" and lk.speed_gbps <= 100):
            assert "QSFP112" not in lk.cable_part, lk  # a QSFP112 cage runs 4 x 25G with a QSFP28 plug


def test_single_mode_optics_are_chosen_by_their_own_reach():
    # MMS4X00-NS (2xDR4) and the ConnectX-7's MMS4X00-NS400 reach 100 m; MMS4X00-NM 500 m
    cat = catalog.load()
    qm = cat.switches["qm9700"]
    cage = End(qm.form, qm.lane_gbps, qm.cage_speed_gbps, 2, True)
    nic = End("OSFP", 100, 400, 1)
    lk = Link("a", "1/1/1", "b", "1/1/1", "compute", "leaf-spine", 400)
    near, far = parts(cat, lk, cage, cage, 80), parts(cat, lk, cage, cage, 150)
    assert (near.media, near.a_part, near.cable) == ("SMF", "MMS4X00-NS", "MFP7E30-N080")
    assert (far.media, far.a_part, far.b_part, far.cable) == ("SMF", "MMS4X00-NM", "MMS4X00-NM", "MFP7E30-N150")
    host = parts(cat, lk, nic, cage, 80)
    assert (host.a_part, host.b_part, host.count, host.shared) == ("MMS4X00-NS400", "MMS4X00-NS", 1, 1)
    assert parts(cat, lk, nic, cage, 150).a_part.startswith("generic-")  # no NVIDIA adapter DR4 reaches 150 m


def test_fibre_parts_carry_nvidias_length_code():
    f = next(f for f in catalog.load().fibres if f.part.startswith("MFP7E10"))
    assert f.part_for(3) == "MFP7E10-N003" and f.part_for(50) == "MFP7E10-N050" and f.part_for(1.5) == "MFP7E10-N01A"


@pytest.mark.parametrize("stack", ["roce-1k", "dgx-h100-ib"])
def test_cable_quantities_in_cabling_csv_add_up_to_the_bom(stack):
    layout = stack_layout(stack)
    want = Counter()
    for r in _rows(layout):  # border uplinks too
        want[(r["cable_part"], r["length_class"])] += float(r["cable_qty"])
    bom = {(b.part, b.length_class): b.quantity for b in bom_lines(layout) if b.category == "cable"}
    assert bom == {k: ceil(v - 1e-9) for k, v in want.items()}


def check_cables_buyable(layout) -> None:
    """Every link's cables and parts, as a site orders them: no adapter optic in a switch cage, a
    switch cage's module shared by the ports of its cage, one fibre per 400G engine a link fills
    (a slower port half a 1:2 splitter), a direct cable only between equal lane rates and split at
    one end at most, each length within its medium's reach."""
    cat = catalog.load()
    reach = {(m.media, m.lane_gbps): m.reach_m for m in cat.media}
    optics = {o.part: o for o in cat.optics}
    for lk in layout.links:
        assert lk.cable_part and lk.cable_count >= 1 and lk.cable_shared >= 1, lk
        assert any(lk.length_m <= r for (m, _), r in reach.items() if m == lk.media), lk
        ends = ((lk.a_device, lk.a_part, lk.a_shared), (lk.b_device, lk.b_part, lk.b_shared))
        if lk.media in OPTICAL:
            for dev, part, shared in ends:
                model = layout.by_name[dev].model
                if model in cat.switches:
                    assert shared == cat.switches[model].lanes.get(lk.speed_gbps, 1), (lk, dev)
                if part in optics:
                    assert optics[part].use in ("any", "switch" if model in cat.switches else "host"), (lk, part)
            known = [optics[p] for _, p, _ in ends if p in optics]
            assert len({o.connector for o in known}) <= 1, lk  # an MPO DR4 never meets a duplex-LC FR4
            assert all(o.splitter for o in known) or lk.cable_shared == 1, lk  # CWDM4 takes no splitter
            per = max((optics[p].connector_gbps for _, p, _ in ends if p in optics), default=lk.speed_gbps)
            want = (lk.speed_gbps // per, 1) if lk.speed_gbps >= per else (1, per // lk.speed_gbps)
            assert (lk.cable_count, lk.cable_shared) == want, lk
        elif lk.media != "CAT6":
            assert min(lk.a_shared, lk.b_shared) == 1 and lk.cable_shared == max(lk.a_shared, lk.b_shared), lk


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_example_stacks_order_buyable_cables(stack):
    check_cables_buyable(stack_layout(stack))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabric=st.sampled_from([("roce", "sn5400"), ("roce", "sn5600"), ("infiniband", "qm9700")]),
       sus=st.integers(1, 3), nodes=st.sampled_from([4, 8, 16, 32, 64]),
       ratio=st.sampled_from(["1:1", "2:1"]), storage=st.sampled_from(["sn5400", "sn5600"]),
       pitch=st.sampled_from([1.2, 3.0, 12.0]))
def test_generated_pods_order_buyable_cables(fabric, sus, nodes, ratio, storage, pitch):
    kind, switch = fabric
    try:
        layout = build(spec_with("lab", scalable_units=sus, max_scalable_units=sus, nodes_per_su=nodes,
                                 racks={"row_pitch_m": pitch},
                                 compute_fabric={"kind": kind, "switch_model": switch, "oversubscription": ratio,
                                                 "fabric_manager": False,
                                                 "switch_subnet_manager": kind == "infiniband"},
                                 storage_fabric={"switch_model": storage}))
    except SpecError:
        return  # refusals are pinned by their own tests
    check_cables_buyable(layout)


def _cage_links(layout):
    """Links by the switch cage whose module or splitter they share (split cages only)."""
    cat = catalog.load()
    names: dict = {}
    cages: dict = {}
    for lk in layout.links:
        for dev, port, shared in ((lk.a_device, lk.a_port, lk.a_shared), (lk.b_device, lk.b_port, lk.b_shared)):
            model = layout.by_name[dev].model
            if shared > 1 and model in cat.switches:
                sw = cat.switches[model]
                if (model, lk.speed_gbps) not in names:
                    names[(model, lk.speed_gbps)] = {sw.port(i, lk.speed_gbps): i // sw.lanes[lk.speed_gbps]
                                                     for i in range(sw.radix(lk.speed_gbps))}
                cages.setdefault((dev, names[(model, lk.speed_gbps)][port]), []).append(lk)
    return cages


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_a_split_cage_takes_one_splitter_or_one_module(stack):
    """A splitter cable fills its cage: every link of a cage on one splitter shares its part and
    length (a QM9700 cage with a node and a UFM port takes a twin-port optic instead of a DAC)."""
    cages = _cage_links(stack_layout(stack))
    assert cages
    for key, links in cages.items():
        direct = [lk for lk in links if lk.media not in OPTICAL]
        if direct:
            assert len(direct) == len(links), (key, links)
            assert len({(lk.cable_part, lk.length_m, lk.length_class) for lk in links}) == 1, (key, links)
            assert len(links) <= links[0].cable_shared, (key, links)
        else:
            assert len({lk.a_part if lk.a_device == key[0] else lk.b_part for lk in links}) == 1, (key, links)


def test_dgx_compute_cages_take_twin_port_flat_top_modules_one_per_cage():
    """A DGX H100/H200/B200 brings its eight single-port ConnectX-7 out through four twin-port
    OSFP cages: each takes one 800G twin-port flat-top module (2 x 400G SR4, MMA4Z00-NS-FLT), so
    the BOM counts four modules a node, not eight single-port optics (DGX H100 user guide,
    "network ports"; NVIDIA MMA4Z00-NS-FLT specification)."""
    layout = stack_layout("dgx-h100-ib")
    nodes = sum(d.role == "gpu_node" for d in layout.devices)
    node_leaf = [lk for lk in layout.links if lk.tier == "node-leaf"]
    assert len(node_leaf) == nodes * 8 and {lk.media for lk in node_leaf} <= set(OPTICAL)
    assert {lk.a_part for lk in node_leaf} <= {"MMA4Z00-NS-FLT", "MMS4X00-NM-FLT"}
    assert {lk.a_shared for lk in node_leaf} == {2}  # a module serves the cage's two NICs
    assert {lk.cable_part.split("-N")[0] for lk in node_leaf} <= {"MFP7E10", "MFP7E30"}  # one fibre per 400G port
    node_optics = sum(b.quantity for b in bom_lines(layout) if b.category == "transceiver"
                      and b.part in {"MMA4Z00-NS-FLT", "MMS4X00-NM-FLT"})
    assert node_optics == nodes * 4  # 127 nodes: 508 modules, where 1,016 single-port optics were counted
    assert not [b for b in bom_lines(layout) if b.part == "MMA4Z00-NS400"]


def test_oem_hgx_nodes_keep_a_single_port_optic_per_nic():
    layout = stack_layout("roce-1k")  # hgx-h100-8x400g: ConnectX-7 cards, one OSFP cage each
    node_leaf = [lk for lk in layout.links if lk.tier == "node-leaf" and lk.media in OPTICAL]
    assert node_leaf and {lk.a_shared for lk in node_leaf} == {1}
