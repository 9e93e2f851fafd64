"""The pod on paper: a static HTML report (SVG drawn from the layout, no server, no external
assets) under <artifacts>/report/: overview, fabric with per-SU drill-downs, floor plan,
power and cooling against budgets, every rack's elevation and cable schedule, the BOM."""

from __future__ import annotations

from pathlib import Path

import jinja2
import markupsafe

from topology import catalog
from topology.layout.model import Layout
from topology.layout.names import natural_key, row_letters
from topology.render.bom import bom_lines
from topology.render.labels import cable_labels
from topology.render.report import geometry
from topology.render.report.power import rack_power, row_power
from topology.render.summary import ratio_text

REPORT_DIR = "report"

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("topology.render.report", "templates"),
    autoescape=True,
    trim_blocks=False,
    undefined=jinja2.StrictUndefined,
)
_env.globals["ink"] = geometry.ink


def _cards(layout: Layout) -> list[tuple[str, str]]:
    racks = layout.racks
    planned = round(sum(r.planned_kw for r in racks), 1)
    budget = round(sum(r.budget_kw for r in racks), 1)
    switches = sum(1 for d in layout.devices if geometry.LEVEL.get(d.role, 0) > 0 and d.role not in OOB_ROLES)
    return [
        ("GPUs", f"{layout.facts['gpus']:,}"),
        ("nodes", f"{layout.facts['nodes']:,}"),
        ("compute tiers", str(layout.facts["tiers"])),
        ("fabric switches", f"{switches:,}"),
        ("OOB switches", f"{sum(1 for d in layout.devices if d.role in OOB_ROLES):,}"),
        ("cables", f"{len(layout.links) + len(layout.border_links):,}"),
        ("border cables", f"{len(layout.border_links):,}"),
        ("racks", str(len(racks))),
        ("kW planned", f"{planned:,}"),
        ("kW budget", f"{budget:,}"),
        ("cooling", layout.spec.racks.cooling),
        ("kW to liquid", f"{round(sum(r.liquid_kw for r in racks), 1):,}"),
        ("PDUs", str(sum(1 for d in layout.devices if d.role == "pdu"))),
        ("CDUs", str(sum(1 for d in layout.devices if d.role == "cdu"))),
    ]


def _cable_tiers(layout: Layout) -> list[dict]:
    out: dict[str, dict] = {}
    for lk in (*layout.links, *layout.border_links):  # the border uplinks are cables we pull too
        row = out.setdefault(lk.tier, {"tier": lk.tier, "fabric": lk.fabric, "total": 0, "in_rack": 0,
                                       "same_row": 0, "cross_row": 0})
        row["total"] += 1
        row[lk.length_class] = row.get(lk.length_class, 0) + 1
    return list(out.values())


OOB_ROLES = ("oob_switch", "oob_aggregation")


def _schedules(layout: Layout) -> tuple[dict[str, markupsafe.Markup], dict[str, int]]:
    """Per rack, each cable with an end in it, from that end's side, in unit order."""
    by_rack: dict[str, list[tuple]] = {r.name: [] for r in layout.racks}
    units = {d.name: d.rack_unit or 0 for d in layout.devices}
    for c in cable_labels(layout):
        lk = c.link
        a = (c.cable_id, c.a_unit, lk.a_device, lk.a_port, c.b_rack, c.b_unit, lk.b_device, lk.b_port)
        b = (c.cable_id, c.b_unit, lk.b_device, lk.b_port, c.a_rack, c.a_unit, lk.a_device, lk.a_port)
        # what the fitter pulls from stock: metres and part, as labels.csv and bom.csv name them
        rest = (lk.tier, lk.media, f"{lk.length_m:g} m" if lk.length_m else "", lk.cable_part, lk.speed_gbps)
        by_rack[c.a_rack].append((-units[lk.a_device], a + rest))
        if c.b_rack != c.a_rack or lk.b_device != lk.a_device:
            by_rack[c.b_rack].append((-units[lk.b_device], b + rest))
    cell = _cached_escape()
    counts = {name: len(rows) for name, rows in by_rack.items()}
    return {
        name: markupsafe.Markup(
            "".join(
                "<tr><td>" + "<td>".join(cell(v) for v in row) + "\n"
                for _, row in sorted(rows, key=lambda r: (r[0], r[1][2], natural_key(r[1][3])))
            )
        )
        for name, rows in by_rack.items()
    }, counts


def _port_maps(layout: Layout, cat) -> dict[str, list[tuple[str, str, markupsafe.Markup]]]:
    """Per rack, each switch's cabled ports as its front panel reads: odd ports over even ones, in
    port order, each cell the port and the device at the far end (the schedule has IDs and parts)."""
    ends: dict[str, list[tuple[str, str]]] = {}
    for lk in (*layout.links, *layout.border_links):
        for dev, port, far in ((lk.a_device, lk.a_port, lk.b_device), (lk.b_device, lk.b_port, lk.a_device)):
            ends.setdefault(dev, []).append((port, far))
    cell = _cached_escape()
    maps: dict[str, list] = {r.name: [] for r in layout.racks}
    for d in sorted(layout.devices, key=lambda d: (-(d.rack_unit or 0), d.name)):
        if d.model not in cat.switches or d.name not in ends:
            continue
        ports = sorted(set(ends[d.name]), key=lambda e: natural_key(e[0]))
        top, bottom = ports[0::2], ports[1::2]
        rows = "".join("<tr>" + "".join(f"<td><b>{cell(p)}</b> {cell(far)}" for p, far in line)
                       for line in (top, bottom) if line)
        maps[d.rack].append((d.name, d.model, markupsafe.Markup(rows)))
    return maps


def _cabling_matrix(layout: Layout) -> tuple[list[str], list[list[int]]]:
    """Cables between rack rows (the diagonal: within a row), the border uplinks left out (one end is
    the site's): what to pull along each row and across the aisle."""
    rack_row = {r.name: r.row for r in layout.racks}
    row_of = {d.name: rack_row[d.rack] for d in layout.devices if d.rack}
    rows = sorted(set(rack_row.values()))
    at = {r: i for i, r in enumerate(rows)}
    counts = [[0] * len(rows) for _ in rows]
    for lk in layout.links:
        a, b = sorted((at[row_of[lk.a_device]], at[row_of[lk.b_device]]))
        counts[a][b] += 1
    return [row_letters(r) for r in rows], counts


def _cached_escape():
    """Escapes each distinct value once: an 8k pod's schedules hold 800k cells of a few
    thousand distinct names and ports. Rows are built here, not in the template, for the same reason
    (end tags of td/tr are optional in HTML, and leaving them out halves the pages)."""
    seen: dict[object, str] = {}

    def cell(v: object) -> str:
        out = seen.get(v)
        if out is None:
            out = seen[v] = str(markupsafe.escape(v))
        return out

    return cell


def render_report(layout: Layout, out_dir: Path) -> dict[Path, str]:
    """Path -> content of every report page; nothing is written here."""
    out = Path(out_dir) / REPORT_DIR
    spec = layout.spec
    cat = catalog.load()
    units = spec.racks.rack_units
    common = {"pod": spec.name}
    files: dict[Path, str] = {}

    racks_power = rack_power(layout)
    rows_power = row_power(layout)
    power_of = {p.rack.name: p for p in racks_power}
    sus = sorted({d.su for d in layout.devices if d.su is not None and d.role == "gpu_node"})
    diagrams = [
        d
        for d in (
            geometry.fabric_diagram(layout, "compute", "Compute fabric"),
            geometry.fabric_diagram(layout, "storage", "Storage fabric"),
            geometry.fabric_diagram(layout, "inband", "In-band management", su_links=False),
            geometry.fabric_diagram(layout, "oob", "Out-of-band management", su_links=False,
                                    level=geometry.OOB_LEVEL, default_level=0, by_su=False,
                                    level_names={0: "managed devices"}),
        )
        if d
    ]
    tiers = [
        {"fabric": t.fabric, "role": t.role, "switches": t.switches, "model": t.model, "speed_gbps": t.speed_gbps,
         "ratio": ratio_text(t.down_gbps, t.up_gbps)}  # bandwidth, down Gb/s : up Gb/s
        for t in layout.tiers
    ]
    pdu = cat.pdus[spec.racks.pdu_model]
    files[out / "index.html"] = _env.get_template("index.html.j2").render(
        common,
        title="overview",
        cards=_cards(layout),
        tiers=tiers,
        cable_tiers=_cable_tiers(layout),
        cables_total=len(layout.links) + len(layout.border_links),
        sus=sus,
        diagrams=diagrams,
        floor=geometry.floor_plan(layout),
        kind_colors=sorted(geometry.KIND_COLOR.items()),
        cooling=f"{spec.racks.cooling}" + (f", CDUs {spec.racks.cdu.replace('_', ' ')}" if spec.racks.cooling ==
                                           "liquid" else ""),
        feed=f"{spec.racks.pdus_per_feed} × {spec.racks.pdu_model}, {spec.racks.pdus_per_feed * pdu.continuous_kw} kW",
        units=units,
        per_rack_cdu=spec.racks.cooling == "liquid" and spec.racks.cdu == "per_rack",
        tightest=max(racks_power, key=lambda p: p.first.share),
        tightest_row=max(rows_power, key=lambda p: p.first.share) if rows_power else None,
        rows=rows_power,
        racks_power=racks_power,
        spares=spec.spares_percent,
        bom=bom_lines(layout),
        matrix=_cabling_matrix(layout),
    )

    su_template = _env.get_template("su.html.j2")
    for i, su in enumerate(sus):
        devices = sorted((d for d in layout.devices if d.su == su and d.role in ("gpu_node", "leaf", "ufm")),
                         key=lambda d: (d.role != "leaf", d.name))
        files[out / f"su-{su:02d}.html"] = su_template.render(
            common,
            title=f"SU{su:02d}",
            su=su,
            prev=sus[i - 1] if i else None,
            next=sus[i + 1] if i + 1 < len(sus) else None,
            nodes=sum(1 for d in devices if d.role == "gpu_node"),
            leaves=sum(1 for d in devices if d.role == "leaf"),
            diagram=geometry.su_diagram(layout, su),
            devices=devices,
        )

    in_rack: dict[str, list] = {r.name: [] for r in layout.racks}
    for d in layout.devices:
        in_rack[d.rack].append(d)
    elevations = {r.name: geometry.elevation(units, in_rack[r.name]) for r in layout.racks}
    rows: dict[int, list] = {}
    for r in layout.racks:
        rows.setdefault(r.row, []).append((r, elevations[r.name]))
    role_colors = sorted((geometry.ROLE_LABEL.get(k, k), v) for k, v in geometry.ROLE_COLOR.items()
                         if k in {d.role for d in layout.devices})
    files[out / "racks.html"] = _env.get_template("racks.html.j2").render(
        common, title="rack elevations", rows=sorted(rows.items()), units=units, role_colors=role_colors
    )
    schedules, counts = _schedules(layout)
    port_maps = _port_maps(layout, cat)
    rack_template = _env.get_template("rack.html.j2")
    for r in layout.racks:
        devices = sorted(in_rack[r.name], key=lambda d: (-(d.rack_unit or 0), d.name))
        files[out / f"{r.name}.html"] = rack_template.render(
            common,
            title=r.name,
            rack=r,
            el=elevations[r.name],
            units=units,
            power=power_of[r.name],
            devices=devices,
            cables=schedules[r.name],
            cable_count=counts[r.name],
            port_maps=port_maps[r.name],
        )
    return files


def report_summary(files: dict[Path, str]) -> tuple[int, int]:
    """(pages, bytes) of a rendered report."""
    return len(files), sum(len(c.encode()) for c in files.values())


