"""Where things go in the report's drawings: fabric groups and their cables, the floor plan
grid, rack elevations. Plain numbers for the SVG templates; no markup here."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import log2

from topology.layout.model import Device, Layout, Rack

# level of a role in a fabric drawing: endpoints at the bottom, the top tier at the top
LEVEL = {
    "gpu_node": 0, "ufm": 0, "storage_server": 0, "mgmt_node": 0,
    "leaf": 1, "storage_leaf": 1, "inband_switch": 1,
    "spine": 2, "storage_spine": 2, "inband_spine": 2, "inband_core": 2,
    "core": 3,
}  # fmt: skip
ROLE_LABEL = {
    "gpu_node": "nodes", "ufm": "UFM", "storage_server": "storage servers", "mgmt_node": "mgmt nodes",
    "leaf": "rail leaves", "storage_leaf": "storage leaves", "inband_switch": "in-band leaves",
    "spine": "spines", "storage_spine": "storage spines", "inband_spine": "in-band spines",
    "inband_core": "in-band cores", "core": "cores",
    "oob_switch": "OOB switch", "oob_aggregation": "OOB aggregation", "pdu": "PDU", "cdu": "CDU",
}  # fmt: skip
KIND_COLOR = {"compute": "#4e79a7", "network": "#59a14f", "infra": "#b07aa1", "cdu": "#76b7b2"}
ROLE_COLOR = {
    "gpu_node": "#4e79a7", "ufm": "#edc948", "leaf": "#59a14f", "spine": "#8cd17d", "core": "#b6992d",
    "storage_leaf": "#f28e2b", "storage_spine": "#ffbe7d", "storage_server": "#e15759",
    "inband_switch": "#b07aa1", "inband_spine": "#d4a6c8", "inband_core": "#d4a6c8", "mgmt_node": "#9d7660",
    "oob_switch": "#bab0ac", "oob_aggregation": "#79706e", "cdu": "#76b7b2", "pdu": "#555555",
}  # fmt: skip
RAIL_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f")
BOX_W, BOX_H, GAP, LEVEL_H, MARGIN = 104, 38, 10, 100, 140


@dataclass
class Box:
    key: str
    label: str
    detail: str
    level: int
    color: str
    href: str = ""
    order: tuple = ()
    title: str = ""
    x: float = 0.0
    y: float = 0.0
    w: float = BOX_W
    h: float = BOX_H


@dataclass
class Edge:
    a: Box
    b: Box
    cables: int
    width: float
    title: str
    color: str = ""  # default: the stylesheet's grey
    label: str = ""  # drawn on the line: its cable count and speed

    @property
    def label_at(self) -> tuple[float, float]:
        """A third of the way up from the lower box (`b`): lines fanning into one upper box (`a`)
        are furthest apart there."""
        x1, y1 = self.a.x + self.a.w / 2, self.a.y + self.a.h
        x2, y2 = self.b.x + self.b.w / 2, self.b.y
        return round(x1 + (x2 - x1) * 2 / 3, 1), round(y1 + (y2 - y1) * 2 / 3 + 3, 1)


@dataclass
class Diagram:
    title: str
    width: float
    height: float
    boxes: list[Box]
    edges: list[Edge]
    levels: list[tuple[float, str]] = field(default_factory=list)  # (y, label) of each drawn level


def ink(fill: str) -> str:
    """Text colour readable on `fill` (#rrggbb): dark on light fills, white on dark ones."""
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return "#1a1a1a" if 0.299 * r + 0.587 * g + 0.114 * b > 160 else "#ffffff"


def _group(d: Device) -> tuple[str, str, int]:
    """(key, label, order) of the aggregated box a device is drawn in; the level's name stands
    beside the drawing, so an SU's boxes need only the SU."""
    role = d.role
    if role in ("gpu_node", "leaf", "storage_leaf", "inband_switch") and d.su is not None:
        return f"{role}:{d.su}", f"SU{d.su:02d}", d.su
    if role == "spine" and d.block is not None:
        return f"spine:{d.block}", f"block {d.block}", d.block
    return role, ROLE_LABEL.get(role, role), 0


def _role_group(d: Device) -> tuple[str, str, int]:
    """One box per role: the OOB network reaches every device, an 8k pod's SUs would be 150 boxes."""
    return d.role, ROLE_LABEL.get(d.role, d.role), 0


def _edge_width(cables: int) -> float:
    return round(0.8 + log2(cables), 2)


def _place(boxes: list[Box], levels: list[int]) -> tuple[float, float]:
    per_level: dict[int, list[Box]] = {}
    for b in boxes:
        per_level.setdefault(b.level, []).append(b)
    widest = max(len(v) for v in per_level.values())
    width = widest * (BOX_W + GAP) + GAP
    rank = {lv: i for i, lv in enumerate(sorted(levels, reverse=True))}
    for lv, row in per_level.items():
        step = width / len(row)
        for i, b in enumerate(row):
            b.x = round(MARGIN + i * step + (step - b.w) / 2, 1)
            b.y = 30 + rank[lv] * LEVEL_H
    return width + MARGIN, 30 + len(levels) * LEVEL_H - (LEVEL_H - BOX_H) + 10


# The OOB network: every managed device at the bottom, the rack OOB switches, their aggregation.
OOB_LEVEL = {"oob_switch": 1, "oob_aggregation": 2, "inband_core": 3}


def _untangle(ordered: list[Box], levels: list[int], pairs) -> tuple[list[Box], tuple[float, float]]:
    """Places the levels top-down, each box under the mean position of the boxes above it that it
    is cabled to (ties keep their order): an SU's in-band leaves sit over that SU's nodes, so lines
    do not cross the drawing."""
    size = _place(ordered, levels)
    above: dict[str, list[Box]] = {}
    for ka, kb in pairs:
        a, b = next(x for x in ordered if x.key == ka), next(x for x in ordered if x.key == kb)
        if a.level != b.level:
            low, high = (a, b) if a.level < b.level else (b, a)
            above.setdefault(low.key, []).append(high)
    for lv in sorted(levels, reverse=True)[1:]:
        row = [b for b in ordered if b.level == lv]
        centre = {b.key: (sum(u.x for u in above[b.key]) / len(above[b.key])) if b.key in above else b.x for b in row}
        row.sort(key=lambda b: centre[b.key])
        ordered = [b for b in ordered if b.level != lv] + row
        ordered.sort(key=lambda b: b.level)  # stable: the row keeps its new order
        size = _place(ordered, levels)
    return ordered, size


def fabric_diagram(layout: Layout, fabric: str, title: str, su_links: bool = True,
                   level: dict[str, int] | None = None, default_level: int = 1,
                   by_su: bool = True, level_names: dict[int, str] | None = None) -> Diagram | None:
    """One box per SU's nodes, SU's leaves, spine block, tier; one line per pair of boxes with
    cables between them, as wide as the log of their count: an 8k pod stays a few dozen boxes."""
    by_name = layout.by_name
    boxes: dict[str, Box] = {}
    members: dict[str, Counter[str]] = {}
    pairs: Counter[tuple[str, str]] = Counter()
    speeds: dict[tuple[str, str], set[int]] = {}
    for lk in layout.links:
        if lk.fabric != fabric:
            continue
        keys = []
        for name in (lk.a_device, lk.b_device):
            d = by_name[name]
            key, label, order = _group(d) if by_su else _role_group(d)
            if key not in boxes:
                href = f"su-{d.su:02d}.html" if su_links and d.su is not None and d.role != "ufm" else ""
                color = ROLE_COLOR.get(d.role, "#999")
                boxes[key] = Box(key, label, "", (level or LEVEL).get(d.role, default_level), color, href,
                                 (order, key))
            members.setdefault(key, Counter())[name] += 1
            keys.append(key)
        pair = tuple(sorted(keys))
        pairs[pair] += 1
        speeds.setdefault(pair, set()).add(lk.speed_gbps)
    if not boxes:
        return None
    level_roles: dict[int, set[str]] = {}
    for key, devs in members.items():
        roles = Counter(by_name[n].role for n in devs)
        models = Counter(by_name[n].model for n in devs)
        boxes[key].detail = ", ".join(f"{n} {ROLE_LABEL.get(r, r)}" for r, n in sorted(roles.items()))
        boxes[key].title = ", ".join(f"{n} × {m}" for m, n in sorted(models.items()))
        level_roles.setdefault(boxes[key].level, set()).update(roles)
    ordered = sorted(boxes.values(), key=lambda b: (b.level, b.order))
    levels = sorted({b.level for b in ordered})
    ordered, (width, height) = _untangle(ordered, levels, pairs)
    names = [(b.y + BOX_H / 2 + 4, (level_names or {}).get(b.level) or
              " / ".join(sorted(ROLE_LABEL.get(r, r) for r in level_roles[b.level])))
             for b in {b.level: b for b in ordered}.values()]
    edges = []
    for (ka, kb), n in sorted(pairs.items()):
        a, b = boxes[ka], boxes[kb]
        if a.level < b.level:
            a, b = b, a
        speed = "/".join(f"{s}G" for s in sorted(speeds[(ka, kb)]))
        edges.append(Edge(a, b, n, _edge_width(n), f"{a.label} – {b.label}: {n} cables, {speed}",
                          label=f"{n} × {speed}"))
    return Diagram(title, round(width, 1), height, ordered, edges, names)


def su_diagram(layout: Layout, su: int) -> Diagram:
    """An SU's nodes, its rail leaves and every switch they cable to, one box per device."""
    by_name = layout.by_name
    mine = {d.name for d in layout.devices if d.su == su and d.role in ("gpu_node", "leaf", "ufm")}
    boxes: dict[str, Box] = {}
    pairs: Counter[tuple[str, str]] = Counter()
    for lk in layout.links:
        if lk.fabric != "compute" or not (lk.a_device in mine or lk.b_device in mine):
            continue
        for name in (lk.a_device, lk.b_device):
            if name not in boxes:
                d = by_name[name]
                unit = f" U{d.rack_unit}" if d.rack_unit else ""
                boxes[name] = Box(name, name, f"{d.rack}{unit}", LEVEL.get(d.role, 1), ROLE_COLOR.get(d.role, "#999"))
        pairs[(lk.a_device, lk.b_device)] += 1
    ordered = sorted(boxes.values(), key=lambda b: (b.level, b.key))
    levels = sorted({b.level for b in ordered})
    width, height = _place(ordered, levels)
    edges = []
    for (na, nb), n in sorted(pairs.items()):
        a, b = boxes[na], boxes[nb]
        if a.level < b.level:
            a, b = b, a
        rail = by_name[na].rail if by_name[na].rail is not None else by_name[nb].rail
        color = RAIL_COLORS[rail % len(RAIL_COLORS)] if rail is not None else ""
        title = f"{na} – {nb}: {n} cable{'s' if n > 1 else ''}"
        edges.append(Edge(a, b, n, _edge_width(n) if n > 1 else 0.6, title, color))
    return Diagram(f"SU{su:02d} compute fabric", round(width, 1), height, ordered, edges)


@dataclass
class FloorRack:
    rack: Rack
    x: float
    y: float
    fill_kind: str
    fill_power: str
    share: float


RACK_W, RACK_H, ROW_GAP = 34, 44, 26


def power_color(share: float) -> str:
    """Green at no load through yellow to red at the budget; magenta above it."""
    if share > 1 + 1e-9:
        return "#c51b7d"
    hue = round(120 * (1 - min(max(share, 0.0), 1.0)))
    return f"hsl({hue},70%,50%)"


def floor_plan(layout: Layout) -> tuple[list[FloorRack], float, float, list[tuple[int, float]]]:
    racks = []
    for r in layout.racks:
        share = r.planned_kw / r.budget_kw if r.budget_kw else 0.0
        x = 40 + (r.position - 1) * (RACK_W + 4)
        y = 20 + r.row * (RACK_H + ROW_GAP)
        racks.append(FloorRack(r, x, y, KIND_COLOR.get(r.kind, "#999"), power_color(share), share))
    width = 40 + max(r.position for r in layout.racks) * (RACK_W + 4) + 10
    rows = sorted({r.row for r in layout.racks})
    height = 20 + (max(rows) + 1) * (RACK_H + ROW_GAP)
    labels = [(row, 20 + row * (RACK_H + ROW_GAP) + RACK_H / 2 + 4) for row in rows]
    return racks, width, height, labels


@dataclass
class Unit:
    device: Device
    y: float
    h: float
    color: str


U_H, ELEV_W, PDU_W = 12, 170, 14


@dataclass
class PduBar:
    """A zero-U PDU drawn beside the rails: feed A on the left, feed B on the right; the PDUs of
    one feed share that side's height, one segment each (drawn at one place they hid each other)."""

    device: Device
    left: bool
    y: float
    h: float


def pdu_bars(devices: list[Device], height: float) -> list[PduBar]:
    sides: dict[bool, list[Device]] = {True: [], False: []}
    for d in devices:  # racks.add_pdus names them <rack>-pdu-a<i> / -pdu-b<i>
        sides["-pdu-b" not in d.name].append(d)
    bars = []
    for left, pdus in sides.items():
        seg = (height - 8) / max(len(pdus), 1)
        bars += [PduBar(d, left, 4 + i * seg, seg - (2 if len(pdus) > 1 else 0)) for i, d in enumerate(pdus)]
    return bars


def elevation(layout_units: int, devices: list[Device]) -> tuple[list[Unit], list[PduBar], float]:
    """Devices at their units (U1 at the bottom), zero-U PDUs beside the rails."""
    height = layout_units * U_H
    units = [
        Unit(d, height - (d.rack_unit + d.rack_units - 1) * U_H, d.rack_units * U_H, ROLE_COLOR.get(d.role, "#999"))
        for d in devices
        if d.rack_unit
    ]
    return units, pdu_bars([d for d in devices if not d.rack_unit], height), height
