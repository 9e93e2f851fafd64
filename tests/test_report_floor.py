"""The report as a sheet to work from on the floor (issue 37): both feeds' PDUs visible when a
feed has two; cable schedules in port order (swp2 before swp10) with the metres and part the
fitter pulls; the overview counts border cables and OOB switches; the BOM names stock lengths
that agree with themselves. Expectations come from the layout, never from the page under test."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import stack_layout
from tests.test_report import Elements
from topology.render.bom import bom_lines
from topology.render.labels import cable_labels
from topology.render.report import render_report


@pytest.fixture(scope="module")
def roce():
    layout = stack_layout("roce-1k")  # two PDUs per feed
    return layout, {p.name: c for p, c in render_report(layout, Path("out")).items()}


def test_two_pdus_per_feed_are_each_drawn_where_none_covers_another(roce):
    layout, html = roce
    assert layout.spec.racks.pdus_per_feed == 2
    for rack in layout.racks[:6]:
        pdus = [d.name for d in layout.devices if d.rack == rack.name and d.role == "pdu"]
        page = html[f"{rack.name}.html"]
        boxes = {}
        for name in pdus:
            m = re.search(rf'<g class="pdu" data-device="{name}"><rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" '
                          rf'height="([0-9.]+)"', page)
            assert m, name
            x, y, w, h = map(float, m.groups())
            boxes[name] = (x, y, x + w, y + h)
        assert len(boxes) == 2 * layout.spec.racks.pdus_per_feed
        names = sorted(boxes)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = boxes[a], boxes[b]
                overlap = min(ax1, bx1) > max(ax0, bx0) and min(ay1, by1) > max(ay0, by0)
                assert not overlap, (rack.name, a, b)
        # feed A on one side, feed B on the other
        sides = {n.rsplit("-pdu-", 1)[1][0]: set() for n in names}
        for n in names:
            sides[n.rsplit("-pdu-", 1)[1][0]].add(boxes[n][0])
        assert len(sides["a"]) == 1 and len(sides["b"]) == 1 and sides["a"] != sides["b"]


def schedule_rows(page: str) -> list[list[str]]:
    body = page[page.index('<table id="schedule">'):]
    body = body[body.index("<tbody>") + 7:body.index("</tbody>")]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in line.split("<td>")[1:]]
            for line in body.split("<tr>")[1:]]


def test_schedules_list_a_switch_in_port_order_with_metres_and_part(roce):
    layout, html = roce
    by_id = {c.cable_id: c.link for c in cable_labels(layout)}
    leaf = next(d for d in layout.devices if d.role == "leaf")
    rows = [r for r in schedule_rows(html[f"{leaf.rack}.html"]) if r[2] == leaf.name]
    ports = [r[3] for r in rows]
    planned = sorted({lk.a_port for lk in layout.links if lk.a_device == leaf.name}
                     | {lk.b_port for lk in layout.links if lk.b_device == leaf.name},
                     key=lambda p: int(re.sub(r"\D", "", p)))  # the leaf's ports are swp<N>
    assert len(planned) > 10 and ports == planned
    for r in rows:
        lk = by_id[r[0]]
        metres, part = r[10], r[11]
        assert metres == f"{lk.length_m:g} m" and part == lk.cable_part, r


def test_overview_counts_border_cables_and_oob_switches(roce):
    layout, html = roce
    cards = dict(re.findall(r'<div class="v">([^<]+)</div><div class="k">([^<]+)</div>', html["index.html"]))
    by_key = {k: v for v, k in cards.items()}
    assert layout.border_links
    assert by_key["cables"] == f"{len(layout.links) + len(layout.border_links):,}"
    assert by_key["border cables"] == f"{len(layout.border_links):,}"
    oob = sum(1 for d in layout.devices if d.role in ("oob_switch", "oob_aggregation"))
    assert oob and by_key["OOB switches"] == f"{oob:,}"
    text = " ".join(Elements(html["index.html"]).text)
    assert "border" in text  # the border uplinks have their row in the cables-per-tier table


def test_bom_cable_lines_name_their_stock_length_and_nothing_shorter():
    layout = stack_layout("roce-1k")
    metres = defaultdict(set)
    for lk in (*layout.links, *layout.border_links):
        metres[(lk.cable_part, lk.length_class)].add(lk.length_m)
    for line in bom_lines(layout):
        if line.category != "cable":
            continue
        assert "up to" not in line.description, line
        for m in metres[(line.part, line.length_class)]:
            assert f"{m:g} m" in line.description, line


def test_every_cabled_switch_has_a_port_map_as_its_front_panel_reads(roce):
    layout, html = roce
    from topology import catalog

    switches = catalog.load().switches
    ends = defaultdict(set)
    for lk in (*layout.links, *layout.border_links):
        ends[lk.a_device].add((lk.a_port, lk.b_device))
        ends[lk.b_device].add((lk.b_port, lk.a_device))
    checked = 0
    for d in layout.devices:
        if d.model not in switches or d.name not in ends:
            continue
        page = html[f"{d.rack}.html"]
        m = re.search(rf'<table class="portmap" data-device="{d.name}"><tbody>(.*?)</tbody>', page, re.S)
        assert m, d.name
        lines = [re.findall(r"<td><b>([^<]+)</b> ([^<]+)", row) for row in m.group(1).split("<tr>")[1:]]
        # port numbers as the switch numbers them (swp2 before swp10; breakouts swp1s0.. by cage, then leg)
        planned = sorted(ends[d.name], key=lambda e: tuple(int(n) for n in re.findall(r"\d+", e[0])))
        assert lines[0] == planned[0::2] and (len(lines) == 1 or lines[1] == planned[1::2]), d.name
        checked += 1
    assert checked > 50


def test_cabling_matrix_adds_up_to_the_cables_between_and_within_rows(roce):
    layout, html = roce
    rack_row = {r.name: r.row for r in layout.racks}
    rows = {d.name: rack_row[d.rack] for d in layout.devices}
    within = sum(1 for lk in layout.links if rows[lk.a_device] == rows[lk.b_device])
    table = re.search(r'<table id="cablematrix">(.*?)</table>', html["index.html"], re.S).group(1)
    body = table[table.index("<tbody>"):].split("<tr>")[1:]
    cells = [[int(n) if n else None for n in re.findall(r'<td class="n">(\d*)</td>', r)] for r in body]
    assert len(cells) == len(set(rack_row.values()))
    assert sum(n for r in cells for n in r if n) == len(layout.links)
    assert sum(cells[i][i] for i in range(len(cells))) == within


def test_fabric_lines_carry_counts_and_speeds_and_the_oob_network_is_drawn(roce):
    layout, html = roce
    index = html["index.html"]
    for fabric, title in (("compute", "Compute fabric"), ("oob", "Out-of-band management")):
        svg = re.search(rf'<svg[^>]*aria-label="{title}" class="fabric">(.*?)</svg>', index, re.S)
        assert svg, title
        labels = re.findall(r'<text class="edge"[^>]*>(\d+) × ([0-9/G]+)</text>', svg.group(1))
        links = [lk for lk in layout.links if lk.fabric == fabric]
        assert sum(int(n) for n, _ in labels) == len(links)
        assert {int(s) for _, speed in labels for s in re.findall(r"\d+", speed)} == {lk.speed_gbps for lk in links}


def crosses(p, q) -> bool:
    """Two segments cross at a point inside both (lines meeting at a box's edge do not)."""
    (x1, y1, x2, y2), (x3, y3, x4, y4) = p, q

    def side(ax, ay, bx, by, cx, cy):
        return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)

    d1, d2 = side(x3, y3, x4, y4, x1, y1), side(x3, y3, x4, y4, x2, y2)
    d3, d4 = side(x1, y1, x2, y2, x3, y3), side(x1, y1, x2, y2, x4, y4)
    return d1 * d2 < -1e-6 and d3 * d4 < -1e-6


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_no_two_lines_of_a_fabric_diagram_cross(stack):
    """Each box sits under the boxes it is cabled to (the in-band diagram's lines from the cores to
    the management nodes and storage servers crossed the SUs' leaf-to-node lines)."""
    index = {p.name: c for p, c in render_report(stack_layout(stack), Path("out")).items()}["index.html"]
    for svg in re.findall(r'<svg[^>]*class="fabric">.*?</svg>', index, re.S):
        lines = [tuple(map(float, m)) for m in
                 re.findall(r'<line x1="([0-9.]+)" y1="([0-9.]+)" x2="([0-9.]+)" y2="([0-9.]+)"', svg)]
        assert lines
        for i, a in enumerate(lines):
            for b in lines[i + 1:]:
                assert not crosses(a, b), (re.search(r'aria-label="([^"]+)"', svg).group(1), a, b)
