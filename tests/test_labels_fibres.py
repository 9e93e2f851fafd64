"""labels.csv labels every fibre (issue 15, closing note item 2): an 800G link on a twin-port
OSFP takes two MPO-12/APC fibres (one per 400G engine), so it gets two label pairs; cabling.csv's
cable_qty says how many cables a link takes (half a splitter: its own leg, one label pair). Border
uplinks to the site's routers are cabled, so they are labelled too."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections import Counter
from math import ceil

from tests.conftest import spec_with
from topology.layout.build import build
from topology.render.labels import cable_id, cable_ids, labels_csv, tiers_numbered_uniquely
from topology.render.tables import cabling_csv


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))))


def _sn5600():
    return build(spec_with("roce-1k", scalable_units=1, max_scalable_units=1, nodes_per_su=64,
                           compute_fabric={"switch_model": "sn5600"}, storage_fabric={"switch_model": "sn5600"},
                           racks={"racks_per_row": 20}))


def test_labels_match_cabling_fibre_counts():
    layout = _sn5600()
    cables = _rows(cabling_csv(layout))
    assert any(float(r["cable_qty"]) == 2 for r in cables), "an 800G link takes two fibres"
    want = Counter({(r["a_device"], r["a_port"]): max(1, ceil(float(r["cable_qty"]))) for r in cables})
    labels = _rows(labels_csv(layout))
    assert Counter((r["a_device"], r["a_port"]) for r in labels) == want
    assert len({r["cable_id"] for r in labels}) == len(labels)


def test_each_fibre_of_a_twin_port_link_names_its_connector():
    layout = _sn5600()
    two = {(r["a_device"], r["a_port"]) for r in _rows(cabling_csv(layout)) if r["cable_qty"] == "2"}
    assert two
    ups = [r for r in _rows(labels_csv(layout)) if (r["a_device"], r["a_port"]) in two]
    by_link: dict = {}
    for r in ups:
        by_link.setdefault((r["a_device"], r["a_port"]), []).append(r)
    for (dev, port), pair in by_link.items():
        assert [(r["fibre"], r["fibres"]) for r in pair] == [("1", "2"), ("2", "2")], pair
        ids = [r["cable_id"] for r in pair]
        assert ids[0].rsplit(".", 1)[0] == ids[1].rsplit(".", 1)[0] and ids[0] != ids[1]
        for r in pair:  # the label at each end says which of the two fibres it is
            assert r["a_line1"].endswith(f"{dev} {port} fibre {r['fibre']}/2"), r
            assert r["b_line2"].endswith(f"{dev} {port} fibre {r['fibre']}/2"), r


def test_border_uplinks_are_labelled():
    layout = _sn5600()
    assert layout.border_links
    labels = {(r["a_device"], r["a_port"]): r for r in _rows(labels_csv(layout))}
    for lk in layout.border_links:
        r = labels[(lk.a_device, lk.a_port)]
        assert r["b_device"] == "site-border" and r["b_line1"].endswith(f"site-border {lk.b_port}"), r


def test_cable_ids_by_tier_format_are_cable_id():
    """cable_ids (one format per tier) names every link as cable_id does, by slot or by switch end;
    a tier outside TIER_CODE keeps its own name's text, a % included."""
    layout = _sn5600()
    links = (*layout.links, *layout.border_links)
    odd = [dataclasses.replace(links[0], tier="x%d-tier", slot=s) for s in (0, 41, -1)]
    for numbered in (tiers_numbered_uniquely(layout) | {"border", "x%d-tier"}, set()):
        assert list(cable_ids((*links, *odd), numbered)) == [cable_id(lk, lk.tier in numbered)
                                                              for lk in (*links, *odd)]
