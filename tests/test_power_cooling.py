"""Power: every PDU at its continuous rating (80% of the circuit's nameplate, NEC 210.19/210.20),
and each rack checked against what one feed carries when the other fails, given the nodes'
PSU layout. Cooling: liquid only for liquid-cooled node models; in-row CDUs N+1."""

from __future__ import annotations

import csv
import io
from math import ceil, sqrt

import pytest

from tests.conftest import spec_with, stack_layout
from topology import catalog
from topology.errors import SpecError, SpecErrors
from topology.layout.build import build
from topology.render.tables import racks_csv


def test_every_pdu_is_rated_at_80_percent_of_its_circuit():
    for key, pdu in catalog.load().pdus.items():
        nameplate = pdu.volts * pdu.amps * (sqrt(3) if pdu.phases == 3 else 1) / 1000
        assert pdu.continuous_kw == pytest.approx(0.8 * nameplate, abs=0.05), key


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "roce-8k", "dgx-h100-ib"])
def test_no_rack_plans_more_than_one_feed_carries_continuously(stack):
    layout = stack_layout(stack)
    r = layout.spec.racks
    feed = r.pdus_per_feed * catalog.load().pdus[r.pdu_model].continuous_kw
    for rack in layout.racks:
        assert rack.feed_capacity_kw == pytest.approx(feed)
        assert rack.feed_loss_kw <= feed + 1e-9, rack


def test_racks_csv_says_what_a_feed_loss_does():
    layout = stack_layout("lab")
    rows = list(csv.DictReader(io.StringIO(racks_csv(layout).split("\n", 1)[1] if racks_csv(layout).startswith("#")
                                           else racks_csv(layout))))
    assert {"feed_capacity_kw", "feed_loss_kw", "on_feed_loss"} <= set(rows[0])
    compute = [row for row in rows if row["kind"] == "compute"]
    # a DGX/HGX H100 runs 4+2 PSUs, 3 per feed: one feed alone cannot carry it at full load
    assert all("3 of 6 PSUs" in row["on_feed_loss"] for row in compute), compute
    assert all(row["on_feed_loss"] == "full load" for row in rows if row["kind"] == "network")


def test_b200_needs_five_psus():
    node = catalog.load().nodes["dgx-b200"]
    assert (node.psus, node.psus_required) == (6, 5)


def _errors(spec_change) -> list[str]:
    with pytest.raises((SpecError, SpecErrors)) as e:
        build(spec_with("lab", **spec_change))
    errs = e.value.errors if isinstance(e.value, SpecErrors) else [e.value]
    return [str(x) for x in errs]


@pytest.mark.parametrize("model", ["dgx-h100", "dgx-b200", "hgx-h100-8x400g"])
def test_liquid_cooling_is_refused_for_air_cooled_nodes(model):
    errs = _errors({"node_model": model, "racks": {"cooling": "liquid"}})
    assert any(e.startswith("racks.cooling") and "air-cooled" in e for e in errs), errs


def test_in_row_cdus_are_n_plus_1():
    layout = stack_layout("roce-8k")
    assert catalog.load().nodes[layout.spec.node_model].cooling == "liquid"
    cdu = catalog.load().cdus["cdu-in-row-1300"]
    rows: dict[int, float] = {}
    for r in layout.racks:
        rows[r.row] = rows.get(r.row, 0.0) + r.liquid_kw
    cdus_per_row: dict[int, int] = {}
    for r in layout.racks:
        if r.kind == "cdu":
            cdus_per_row[r.row] = cdus_per_row.get(r.row, 0) + 1
    for row, load in rows.items():
        if load:
            assert cdus_per_row[row] >= ceil(load / cdu.capacity_kw) + 1, (row, load, cdus_per_row[row])
