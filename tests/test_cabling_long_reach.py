"""Switch-to-switch runs past the 500 m of DR4 single-mode optics take FR4 (issue 15, closing note
item 1): NVIDIA's MMS4X50-NM twin-port 2xFR4 OSFP reaches 2 km over two duplex-LC single-mode
fibres (CWDM4, no splitters; NVIDIA does not supply the fibres) and links to 400G FR4 QSFP-DD
modules (NVIDIA MMS4X50-NM application overview). Adapters have no FR4 part: host links keep
the 500 m of DR4."""

from __future__ import annotations

import pytest

from tests.conftest import spec_with
from topology import catalog
from topology.errors import SpecError
from topology.layout.build import build
from topology.layout.cabling import End, parts
from topology.layout.model import Link


def _ends(model: str, ports_per_module: int = 1) -> End:
    sw = catalog.load().switches[model]
    return End(sw.form, sw.lane_gbps, sw.cage_speed_gbps, ports_per_module, True, sw.optical_lane_gbps or 0)


def test_an_800g_switch_link_past_500m_takes_2xfr4_on_two_lc_fibres():
    cat = catalog.load()
    cage = _ends("sn5600")
    lk = Link("leaf", "swp1", "spine", "swp1", "compute", "leaf-spine", 800)
    dr4, fr4 = parts(cat, lk, cage, cage, 500), parts(cat, lk, cage, cage, 700)
    assert (dr4.media, dr4.a_part, dr4.b_part, dr4.count) == ("SMF", "MMS4X00-NM", "MMS4X00-NM", 2)
    assert (fr4.media, fr4.a_part, fr4.b_part) == ("SMF", "MMS4X50-NM", "MMS4X50-NM")
    assert (fr4.count, fr4.shared) == (2, 1)  # one duplex LC per 400G engine, no splitter
    assert "LC" in fr4.cable and "MPO" not in fr4.cable
    assert parts(cat, lk, cage, cage, 2000).a_part == "MMS4X50-NM"


def test_a_qsfp_dd_switch_end_matches_fr4_at_the_far_end():
    # 2xFR4's LC fibres carry CWDM4 and link to 400G FR4 QSFP-DD (SN5400): both ends FR4, never
    # a DR4 (MPO) at one end and FR4 (LC) at the other
    cat = catalog.load()
    lk = Link("leaf", "swp1", "spine", "swp1", "compute", "leaf-spine", 400)
    connector = {o.part: o.connector for o in cat.optics}
    for length in (300, 800):
        c = parts(cat, lk, _ends("sn5400"), _ends("sn5600", 2), length)
        assert connector[c.a_part] == connector[c.b_part], (length, c)
    assert (c.a_part, c.b_part) == ("generic-400G-FR4-QSFP-DD", "MMS4X50-NM")
    assert (c.count, c.shared) == (1, 1)  # one port of the twin-port module: one duplex LC


def test_host_links_past_dr4_reach_are_refused():
    # no adapter optic reaches past 500 m: a node-leaf run of 800 m names the floor plan to change
    cat = catalog.load()
    lk = Link("node", "p", "leaf", "swp1", "compute", "node-leaf", 400)
    with pytest.raises(SpecError) as e:
        parts(cat, lk, End("OSFP", 100, 400, 1), _ends("sn5600", 2), 800)
    assert e.value.field == "racks.row_pitch_m"


def test_a_pod_whose_spine_runs_pass_500m_plans_with_fr4():
    # one rack a row, 20 m between rows: an SN5600 pod's 800G leaf-spine runs reach 800 m
    # (refused before MMS4X50-NM was in the catalog)
    spec = spec_with("roce-1k", scalable_units=2, max_scalable_units=2, nodes_per_su=64,
                     compute_fabric={"switch_model": "sn5600"}, storage_fabric={"switch_model": "sn5600"},
                     racks={"racks_per_row": 1, "row_pitch_m": 20.0})
    layout = build(spec)
    long = [lk for lk in layout.links if lk.length_m > 500 and lk.tier == "leaf-spine"]
    assert long
    for lk in long:
        assert lk.a_part == lk.b_part == "MMS4X50-NM", lk
        assert (lk.cable_count, lk.cable_shared) == (2, 1) and "LC-duplex" in lk.cable_part, lk
    assert all(lk.length_m <= 500 for lk in layout.links if lk.tier == "node-leaf")


def test_split_switch_legs_past_dr4_reach_are_refused():
    # a 200G leg of a split twin-port cage rides a 1:2 splitter fibre, which CWDM4 (FR4) cannot
    # use: past DR4's 500 m no optic serves it
    cat = catalog.load()
    lk = Link("leaf", "swp1s0", "spine", "swp1s0", "storage", "storage_leaf-storage_spine", 200)
    assert parts(cat, lk, _ends("sn5600", 4), _ends("sn5600", 4), 500).a_part == "MMS4X00-NM"
    with pytest.raises(SpecError) as e:
        parts(cat, lk, _ends("sn5600", 4), _ends("sn5600", 4), 600)
    assert e.value.field == "racks.row_pitch_m" and "(500" in e.value.rule


def test_sn5400_single_mode_is_nvidias_qsfp_dd_dr4():
    # NVIDIA documents MMS1V00-WM as its 400GBASE-DR4 QSFP-DD (1310 nm, MPO, 500 m) for 400GbE
    # PAM4 QSFP-DD (8 x 50G) cages; no NVIDIA QSFP-DD SR4 or FR4 part is documented (its QSFP-DD
    # multimode part is SR8 on MPO-16, which no ConnectX-7 SR4 meets): those stay generic
    cat = catalog.load()
    lk = Link("node", "p", "leaf", "swp1", "compute", "node-leaf", 400)
    dr4 = parts(cat, lk, End("OSFP", 100, 400, 1), _ends("sn5400"), 80)
    assert (dr4.media, dr4.a_part, dr4.b_part) == ("SMF", "MMS4X00-NS400", "MMS1V00-WM")
    assert parts(cat, lk, End("OSFP", 100, 400, 1), _ends("sn5400"), 30).b_part == "generic-400G-SR4-QSFP-DD"
