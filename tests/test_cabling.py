"""Every cable is one a site can buy: a stock length from the rack positions of its ends, a
medium whose reach covers it at the link's lane rate, and the parts at both ends."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import spec_with, stack_layout
from topology import catalog
from topology.layout.build import build
from topology.layout.cabling import STOCK_LENGTHS, stock_length
from topology.render.tables import cabling_csv


def _check_buyable(layout) -> None:
    cat = catalog.load()
    reach = {(m.media, m.lane_gbps): m.reach_m for m in cat.media}
    optic_parts = {o.part for o in cat.optics}
    for lk in layout.links:
        assert lk.length_m in STOCK_LENGTHS or lk.length_m % 100 == 0, lk
        assert any(lk.media == m and lk.length_m <= r for (m, _), r in reach.items()), lk
        assert lk.a_part and lk.b_part and lk.cable_part, lk
        if lk.media in ("MMF", "SMF"):
            for part in (lk.a_part, lk.b_part):
                assert part in optic_parts or part.startswith("generic-"), (lk, part)
        else:  # an assembly: its ends are the cable's own
            assert lk.a_part == lk.b_part == lk.cable_part, lk
        a, b = layout.by_name[lk.a_device], layout.by_name[lk.b_device]
        if a.rack == b.rack and lk.cable_shared == 1:  # a splitter's legs share its longest run
            assert lk.length_m <= 5, lk


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_every_cable_is_buyable(stack):
    _check_buyable(stack_layout(stack))


def test_longer_runs_change_media_not_just_length():
    near = stack_layout("lab")
    far = build(spec_with("lab", racks={"row_pitch_m": 12.0, "cable_tray_drop_m": 4.0}))
    near_up = {(lk.a_device, lk.a_port): lk for lk in near.links if lk.tier == "leaf-spine"}
    longer = [lk for lk in far.links
              if lk.tier == "leaf-spine" and lk.length_m > near_up[(lk.a_device, lk.a_port)].length_m]
    assert longer
    _check_buyable(far)


def test_sn5400_is_qsfp_dd_at_50g_lanes_and_meets_connectx7_over_optics():
    # NVIDIA SN5000 user manual: SN5400 runs 400GbE on 50 Gb/s lanes (QSFP-DD); ConnectX-7 runs
    # 400G on 4 x 100G: no direct cable joins them at 400G, gearbox SR4/DR4 optics do
    cat = catalog.load()
    sw = cat.switches["sn5400"]
    assert (sw.form, sw.lane_gbps, sw.optical_lane_gbps) == ("QSFP-DD", 50, 100)
    layout = stack_layout("roce-1k")
    node_leaf = [lk for lk in layout.links if lk.tier == "node-leaf"]
    assert {lk.media for lk in node_leaf} <= {"MMF", "SMF"}
    assert {lk.b_part for lk in node_leaf} <= {"generic-400G-SR4-QSFP-DD", "MMS1V00-WM"}
    # 200G storage ports: 4 x 50G, which ConnectX-7 also runs, so a splitter DAC fits in reach
    storage = [lk for lk in layout.links if lk.tier in ("node-storage_leaf", "server-storage_leaf")]
    assert all(lk.media in ("DAC", "MMF", "SMF") for lk in storage)
    assert all("QSFP-DD-to-2x200G-QSFP56" in lk.cable_part for lk in storage if lk.media == "DAC")


def test_stock_lengths_round_up():
    assert stock_length(0.2) == 0.5 and stock_length(2.01) == 2.5 and stock_length(501) == 600


def test_cabling_csv_has_length_and_parts_at_both_ends():
    layout = stack_layout("lab")
    text = cabling_csv(layout)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    rows = list(csv.DictReader(io.StringIO(body)))
    assert {"length_m", "a_part", "b_part", "cable_part"} <= set(rows[0])
    assert len(rows) == len(layout.links) + len(layout.border_links)  # border: to the site's routers
    assert all(float(r["length_m"]) > 0 and r["a_part"] and r["b_part"] for r in rows)
