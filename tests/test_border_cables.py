"""Border uplinks are cables a site orders (issue 15, closing note item 3): a length from a rule,
optics at the core's end, and bom.csv counts them. The site's border routers are outside the plan:
the run is `management.inband.border_run_m` when the spec gives it, else from the core to the
head of its row (the site's run beyond that is theirs); the site orders its own router's optic."""

from __future__ import annotations

import csv
import io
from collections import Counter
from math import ceil

from tests.conftest import spec_with, stack_layout
from topology.layout.build import build
from topology.layout.cabling import OPTICAL, stock_length
from topology.render.bom import bom_lines
from topology.render.tables import cabling_csv


def _rows(layout) -> list[dict]:
    body = "\n".join(line for line in cabling_csv(layout).splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


def test_bom_counts_border_cables_and_the_cores_optics():
    layout = stack_layout("roce-1k")
    assert layout.border_links
    want = Counter()
    for r in _rows(layout):
        want[(r["cable_part"], r["length_class"])] += float(r["cable_qty"])
    bom = {(b.part, b.length_class): b.quantity for b in bom_lines(layout) if b.category == "cable"}
    assert bom == {k: ceil(v - 1e-9) for k, v in want.items()}
    border = {(lk.cable_part, lk.length_class) for lk in layout.border_links}
    assert border <= set(bom)
    # a transceiver at the core's end of each border uplink (its own cage), none at the site's
    optics = {b.part: b.quantity for b in bom_lines(layout)
              if b.category == "transceiver" and b.length_class == "border"}
    assert optics == Counter(lk.a_part for lk in layout.border_links)


def test_border_run_comes_from_the_spec_and_is_optical():
    layout = build(spec_with("roce-1k", management={"inband": {"border_run_m": 37}}))
    assert layout.border_links
    for lk in layout.border_links:
        assert lk.length_m == stock_length(37) == 40 and lk.length_class == "border", lk
        assert lk.media in OPTICAL and lk.a_part and lk.cable_part and lk.a_shared == 1, lk
    far = build(spec_with("roce-1k", management={"inband": {"border_run_m": 300}}))
    assert {lk.media for lk in far.border_links} == {"SMF"}


def test_default_border_run_is_to_the_head_of_the_cores_row():
    layout = stack_layout("roce-1k")
    racks = {r.name: r for r in layout.racks}
    spec = layout.spec.racks
    for lk in layout.border_links:
        core = layout.by_name[lk.a_device]
        path = (2 * spec.cable_tray_drop_m + racks[core.rack].position * spec.rack_width_m)
        assert lk.length_m == stock_length(path * (1 + spec.cable_slack_percent / 100)), lk
        assert lk.length_class == "border" and lk.media in OPTICAL, lk
