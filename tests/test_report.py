"""The report, the BOM and the labels checked against the layout they are drawn from."""

from __future__ import annotations

import csv
import io
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from math import ceil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, spec_with, stack_layout
from topology.cli import app
from topology.layout.build import build
from topology.render.bom import bom_csv, bom_lines
from topology.render.labels import labels_csv
from topology.render.report import render_report
from topology.render.tables import devices_csv


class Elements(HTMLParser):
    """Start tags with their attributes, and the document's text."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, tag: str, attr: str) -> list[dict]:
        return [a for t, a in self.tags if t == tag and attr in a]


def pages(layout) -> dict[str, str]:
    return {p.name: c for p, c in render_report(layout, Path("out")).items()}


@pytest.fixture(scope="module")
def lab():
    layout = stack_layout("lab")
    return layout, pages(layout)


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


# ---- rack units ---------------------------------------------------------------------------------


def test_devices_csv_gives_every_racked_device_its_unit(example):
    _, layout = example
    by_name = layout.by_name
    for row in rows(devices_csv(layout)):
        d = by_name[row["name"]]
        assert row["rack_unit"] == ("" if d.rack_unit is None else str(d.rack_unit))
        assert (row["rack_unit"] == "") == (d.role == "pdu")  # only zero-U PDUs have no unit


def test_rack_units_are_top_of_rack_oob_and_bottom_up_gear():
    layout = stack_layout("lab")
    units = layout.spec.racks.rack_units
    for d in layout.devices:
        if d.role == "oob_switch":
            assert d.rack_unit + d.rack_units - 1 == units, d  # in the reserved units at the top
    nodes = sorted((d for d in layout.devices if d.role == "gpu_node"), key=lambda d: d.name)
    assert nodes[0].rack_unit == 1 and nodes[1].rack_unit == 1 + nodes[0].rack_units


def test_no_room_for_the_oob_switch_is_a_spec_error():
    from topology.errors import SpecError

    # three 8U nodes (what one feed carries) fill 24 of 24 units; with no reserved units the
    # OOB switch has no place
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", racks={"rack_units": 24, "reserved_units": 0}))
    assert e.value.field == "racks.reserved_units"


# ---- the report against the layout ----------------------------------------------------------------


def test_every_rack_is_drawn_with_every_device_at_its_unit(lab):
    layout, html = lab
    racks = {r.name for r in layout.racks}
    # a page per rack, an elevation per rack on the overview of racks, a rack per floor-plan spot
    assert {n.removesuffix(".html") for n in html if n.startswith("rack-")} == racks
    overview = Elements(html["racks.html"])
    assert Counter(a["data-rack"] for a in overview.having("svg", "data-rack")) == Counter(racks)
    floor = Elements(html["index.html"])
    assert Counter(a["data-rack"] for a in floor.having("rect", "data-rack")) == Counter(racks) + Counter(racks)
    for rack in racks:
        page = Elements(html[f"{rack}.html"])
        drawn = {a["data-device"]: a for a in page.having("g", "data-device")}
        members = [d for d in layout.devices if d.rack == rack]
        assert set(drawn) == {d.name for d in members}
        for d in members:
            if d.rack_unit is None:
                assert drawn[d.name]["class"] == "pdu"
            else:
                assert drawn[d.name]["data-unit"] == str(d.rack_unit), d
                assert drawn[d.name]["data-units"] == str(d.rack_units), d


def test_elevation_draws_a_device_where_its_units_are(lab):
    layout, html = lab
    d = next(d for d in layout.devices if d.role == "gpu_node")
    page = html[f"{d.rack}.html"]
    group = re.search(rf'<g class="unit" data-device="{d.name}"[^>]*><rect x="[^"]+" y="([0-9.]+)"', page)
    height = layout.spec.racks.rack_units * 12
    assert float(group.group(1)) == pytest.approx(height - (d.rack_unit + d.rack_units - 1) * 12 + 0.5)


def test_overview_counts_and_power_come_from_the_layout(lab):
    layout, html = lab
    text = " ".join(Elements(html["index.html"]).text)
    cables = len(layout.links) + len(layout.border_links)  # the border uplinks are cables pulled too
    assert f"{layout.facts['gpus']}" in text and f"{cables}" in text
    for t in layout.tiers:
        assert t.role in text
    for tier, n in Counter(lk.tier for lk in layout.links).items():
        assert re.search(rf"<td>{tier}</td><td>\w+</td><td class=\"n\">{n}</td>", html["index.html"]), tier
    # the per-rack power table names every rack with its planned kW and the limit that binds first
    for r in layout.racks:
        row = re.search(rf'<tr data-rack="{r.name}">(.*?)</tr>', html["index.html"]).group(1)
        assert f">{r.planned_kw}<" in row and re.search(r">(budget|feed|space|cdu) [0-9.]+%<", row), row


def test_report_is_self_contained(lab):
    _, html = lab
    for name, page in html.items():
        doc = Elements(page)
        for tag, attrs in doc.tags:
            for key in ("src", "href"):
                ref = attrs.get(key, "")
                assert not re.match(r"^(https?:)?//", ref), (name, tag, ref)
                if ref and not ref.startswith("#"):
                    assert ref.split("#")[0] in html, (name, ref)  # every link lands on a page of the report
        assert not doc.having("link", "href") and not doc.having("script", "src"), name


def test_su_drill_down_has_each_node_to_rail_cable(lab):
    layout, html = lab
    page = html["su-01.html"]
    node_leaf = [lk for lk in layout.links if lk.tier == "node-leaf"]
    for lk in node_leaf:
        assert f"<title>{lk.a_device} – {lk.b_device}: 1 cable</title>" in page


@pytest.mark.slow
def test_8k_fabric_is_aggregated_and_the_report_stays_small():
    layout = stack_layout("roce-8k")
    files = render_report(layout, Path("out"))
    sizes = {p.name: len(c.encode()) for p, c in files.items()}
    assert sum(sizes.values()) < 22_000_000  # 20.9 MB: schedules with metres and part, a port map per switch
    index = files[Path("out/report/index.html")]
    for diagram in re.findall(r'<svg[^>]*class="fabric".*?</svg>', index, re.S):
        assert len(Elements(diagram).having("g", "data-key")) < 100  # groups, not 1,700 switches and nodes
    assert sizes["index.html"] < 1_000_000
    assert len([n for n in sizes if n.startswith("su-")]) == 32


# ---- bill of materials ----------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_bom_cables_add_up_to_the_cabling_plan(stack):
    layout = stack_layout(stack)
    lines = rows(bom_csv(layout))
    # every link's cable is on the BOM (border uplinks too): one per link, a breakout splitter once
    # for the links it serves
    cables = Counter()
    for lk in (*layout.links, *layout.border_links):
        cables[(lk.cable_part, lk.length_class)] += lk.cable_count / lk.cable_shared
    bom_cables = {(r["part"], r["length_class"]): int(r["quantity"]) for r in lines if r["category"] == "cable"}
    assert bom_cables == {k: ceil(v - 1e-9) for k, v in cables.items()}
    # two transceivers per optical link, a breakout cage's module counted once
    optics = Counter()
    for lk in layout.links:
        if lk.media in ("MMF", "SMF"):
            optics[(lk.a_part, lk.length_class)] += 1 / lk.a_shared
            optics[(lk.b_part, lk.length_class)] += 1 / lk.b_shared
    for lk in layout.border_links:  # the core's end; the site orders its router's optic
        optics[(lk.a_part, lk.length_class)] += 1
    assert {(r["part"], r["length_class"]): int(r["quantity"]) for r in lines if r["category"] == "transceiver"} \
        == {k: ceil(v - 1e-9) for k, v in optics.items()}
    gear = Counter(d.model for d in layout.devices)
    assert {r["part"]: int(r["quantity"]) for r in lines if r["category"] not in ("cable", "transceiver")} \
        == dict(gear)
    assert all(r["spares"] == "0" for r in lines)  # no spares unless the spec asks


def test_spares_are_a_spec_option_on_cables_and_optics():
    layout = build(spec_with("lab", spares_percent=5))
    for b in bom_lines(layout):
        if b.category in ("cable", "transceiver"):
            assert b.spares == ceil(b.quantity * 5 / 100) and b.total == b.quantity + b.spares
        else:
            assert b.spares == 0


# ---- labels ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["lab", "dgx-h100-ib"])
def test_one_label_pair_per_fibre(stack):
    # a label pair per fibre a cable has (an 800G twin-port link: two), border uplinks included
    layout = stack_layout(stack)
    labels = rows(labels_csv(layout))
    fibres = [lk for lk in (*layout.links, *layout.border_links) for _ in range(lk.cable_count)]
    assert len({r["cable_id"] for r in labels}) == len(labels)
    by_name = layout.by_name
    for r, lk in zip(labels, fibres, strict=True):
        assert (r["a_device"], r["a_port"], r["b_device"], r["b_port"]) == (lk.a_device, lk.a_port, lk.b_device,
                                                                           lk.b_port)
        fibre = f" fibre {r['fibre']}/{r['fibres']}" if lk.cable_count > 1 else ""
        for end, far in (("a", "b"), ("b", "a")):
            d = by_name.get(r[f"{end}_device"])
            if d:  # else the site's border routers
                assert r[f"{end}_rack"] == d.rack
                assert r[f"{end}_unit"] == (f"U{d.rack_unit:02d}" if d.rack_unit else "")
            # the label at this end names this end first and the far end second
            assert r[f"{end}_line1"].endswith(f"{r[f'{end}_device']} {r[f'{end}_port']}{fibre}")
            assert r[f"{end}_line2"].endswith(f"{r[f'{far}_device']} {r[f'{far}_port']}{fibre}")
            assert r[f"{end}_line2"].startswith("to ")


def test_cable_ids_survive_growth():
    small = build(spec_with("roce-1k", scalable_units=1, max_scalable_units=4))
    big = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4))
    ids = {(r["a_device"], r["a_port"]): r["cable_id"] for r in rows(labels_csv(big))}
    for r in rows(labels_csv(small)):
        assert ids[(r["a_device"], r["a_port"])] == r["cable_id"], r


def test_labels_elevations_and_oob_wiring_agree(lab):
    """An OOB cable runs inside its rack, to the OOB switch at the top; its labels name the units
    the elevation draws the two devices at."""
    layout, html = lab
    by_name = layout.by_name
    oob = [r for r in rows(labels_csv(layout)) if r["kind"] == "device-oob"]
    assert len(oob) == sum(1 for d in layout.devices if d.role != "oob_switch")  # all managed, PDUs too
    for r in oob:
        device, switch = by_name[r["a_device"]], by_name[r["b_device"]]
        assert switch.role == "oob_switch" and device.rack == switch.rack == r["a_rack"] == r["b_rack"]
        drawn = {a["data-device"]: a for a in Elements(html[f"{switch.rack}.html"]).having("g", "data-device")}
        assert r["b_unit"] == f"U{int(drawn[switch.name]['data-unit']):02d}"
        if device.rack_unit:
            assert r["a_unit"] == f"U{int(drawn[device.name]['data-unit']):02d}"


# ---- the commands ---------------------------------------------------------------------------------


def test_report_command_and_plan_report_write_the_report(tmp_path):
    shutil.copy(ROOT / "Pulumi.lab.yaml", tmp_path)
    result = CliRunner().invoke(app, ["plan", "--stack", "lab", "-C", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = tmp_path / "build" / "lab"
    assert (out / "bom.csv").is_file() and (out / "labels.csv").is_file()
    assert not (out / "report").exists()  # only when asked
    result = CliRunner().invoke(app, ["report", "--stack", "lab", "-C", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    written = {p.name for p in (out / "report").iterdir()}
    assert written == set(pages(stack_layout("lab")))
    result = CliRunner().invoke(app, ["plan", "--stack", "lab", "-C", str(tmp_path), "--report", "--out",
                                      str(tmp_path / "other")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "other" / "report" / "index.html").read_text() == (out / "report" / "index.html").read_text()


def test_report_of_a_bad_spec_is_an_error_and_writes_nothing(tmp_path):
    (tmp_path / "Pulumi.bad.yaml").write_text((ROOT / "Pulumi.lab.yaml").read_text().replace(
        "scalable_units: 1\n", "scalable_units: 0\n", 1))
    result = CliRunner().invoke(app, ["report", "--stack", "bad", "-C", str(tmp_path)])
    assert result.exit_code == 2 and "scalable_units" in result.output
    assert not (tmp_path / "build").exists()
