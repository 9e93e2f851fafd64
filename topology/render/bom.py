"""bom.csv: what to buy, counted from the layout so it adds up to the cabling plan.

Gear is counted by catalog model; cables by the part cabling.csv names (a breakout splitter
once for the links it serves); transceivers at each optical end, one module per breakout cage
(AOCs and DACs carry their own ends). Spares (`spares_percent`) are added to cables and transceivers only,
rounded up per line: they are what a cabling crew breaks or loses, not what a pod is sized by.
Border uplinks count as cables with the in-band core's optic; the site's router end is the site's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import ceil
from operator import attrgetter

from topology import catalog
from topology.layout.cabling import OPTICAL
from topology.layout.model import Layout
from topology.render.tables import csv_text

CATEGORY_ORDER = ("node", "switch", "server", "pdu", "cdu", "transceiver", "cable")
LENGTH_ORDER = {"in_rack": 0, "same_row": 1, "cross_row": 2, "border": 3, "": 4}
# where a length class runs; the metres ordered are the part's stock length (Link.length_m), never
# a class's ceiling: "CAT6 4 m, up to 3 m" contradicted itself
LENGTH_NOTE = {"in_rack": "within a rack", "same_row": "within a row", "cross_row": "between rows (structured fiber)",
               "border": "in-band cores to the site's border routers (management.inband.border_run_m)"}


@dataclass(frozen=True)
class BomLine:
    category: str
    part: str
    description: str
    length_class: str
    quantity: int
    spares: int
    used_as: str = ""

    @property
    def total(self) -> int:
        return self.quantity + self.spares


_SHAPE = attrgetter("cable_part", "length_class", "cable_shared", "length_m", "cable_count", "media",
                    "a_part", "a_shared", "b_part", "b_shared")


def _optic_description(cat, part: str) -> str:
    return next((o.description for o in cat.optics if o.part == part), "optical transceiver")


def _describe(cat, model: str) -> tuple[str, str]:
    for category, table in (("node", cat.nodes), ("switch", cat.switches), ("server", cat.appliances)):
        if model in table:
            return category, table[model].description
    if model in cat.pdus:
        p = cat.pdus[model]
        return "pdu", f"{p.vendor} rack PDU, {p.continuous_kw} kW continuous, {p.outlets} outlets ({p.protocol})"
    c = cat.cdus[model]
    return "cdu", f"{c.vendor} coolant distribution unit, {c.capacity_kw} kW ({c.protocol})"


def _spares(quantity: int, percent: float) -> int:
    return ceil(quantity * percent / 100 - 1e-9) if percent else 0


def bom_lines(layout: Layout) -> list[BomLine]:
    cat = catalog.load()
    percent = layout.spec.spares_percent
    gear: Counter[str] = Counter()
    roles: dict[str, Counter[str]] = {}
    for d in layout.devices:
        gear[d.model] += 1
        roles.setdefault(d.model, Counter())[d.role] += 1
    lines = []
    for model, n in gear.items():
        category, description = _describe(cat, model)
        used = " ".join(f"{role}:{k}" for role, k in sorted(roles[model].items()))
        lines.append(BomLine(category, model, description, "", n, 0, used))

    # Cables by part as cabling.csv names them; a breakout splitter serves several links.
    # Transceivers at the optical ends, a module shared by the links of one breakout cage.
    cables: Counter[tuple[str, str, int, float]] = Counter()
    optic_ends: Counter[tuple[str, str, int]] = Counter()
    # the links' few hundred distinct shapes, counted in C (a Python loop per link was most of this file)
    for border, links in ((False, layout.links), (True, layout.border_links)):
        for (part, length, shared, metres, count, media, a_part, a_shared, b_part, b_shared), k in \
                Counter(map(_SHAPE, links)).items():
            # a link takes cable_count cables (two fibres for an 800G twin-port optic), each serving
            # cable_shared links (a breakout assembly, a 1:2 splitter fibre)
            cables[(part, length, shared, metres)] += count * k
            if media in OPTICAL:
                optic_ends[(a_part, length, a_shared)] += k
                if not border:  # the site orders its router's optic: only the core's end is ours
                    optic_ends[(b_part, length, b_shared)] += k
    merged: Counter[tuple[str, str, int]] = Counter()  # one line per part and class, its stock lengths named
    lengths: dict[tuple[str, str, int], set[float]] = {}
    for (part, length, shared, metres), legs in cables.items():
        merged[(part, length, shared)] += legs
        lengths.setdefault((part, length, shared), set()).add(metres)
    for (part, length, shared), legs in sorted(merged.items()):
        n = ceil(legs / shared)
        what = f"{legs} links on {n} breakout cables" if shared > 1 else f"{n} cables"
        metres = " / ".join(f"{m:g} m" for m in sorted(lengths[(part, length, shared)]) if m)
        note = ", ".join(x for x in (metres, LENGTH_NOTE.get(length, "")) if x)
        lines.append(BomLine("cable", part, f"{what}, {note}", length, n, _spares(n, percent)))
    transceivers: Counter[tuple[str, str]] = Counter()
    for (part, length, shared), ends in optic_ends.items():
        transceivers[(part, length)] += ceil(ends / shared)
    for (part, length), n in sorted(transceivers.items()):
        lines.append(BomLine("transceiver", part, _optic_description(cat, part), length, n, _spares(n, percent)))
    return sorted(
        lines,
        key=lambda b: (CATEGORY_ORDER.index(b.category), b.part, LENGTH_ORDER.get(b.length_class, 9)),
    )


def bom_csv(layout: Layout) -> str:
    return csv_text(
        ["category", "part", "description", "length_class", "quantity", "spares", "total", "used_as"],
        ((b.category, b.part, b.description, b.length_class, b.quantity, b.spares, b.total, b.used_as)
         for b in bom_lines(layout)),
    )
