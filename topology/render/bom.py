"""bom.csv: what to buy, counted from the layout so it adds up to the cabling plan.

Gear is counted by catalog model; cables by media, speed and length class, exactly as
cabling.csv lists them; optical transceivers two per fiber cable (one per end; AOCs and DACs
carry their own ends). Spares (`spares_percent`) are added to cables and transceivers only,
rounded up per line: they are what a cabling crew breaks or loses, not what a pod is sized by.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import ceil

from topology import catalog
from topology.model import Layout
from topology.render.tables import _csv

CATEGORY_ORDER = ("node", "switch", "server", "pdu", "cdu", "transceiver", "cable")
LENGTH_ORDER = {"in_rack": 0, "same_row": 1, "cross_row": 2, "": 3}
# what a length class means when ordering: the longest run a cable of that class must cover
LENGTH_NOTE = {"in_rack": "up to 3 m", "same_row": "up to 30 m", "cross_row": "up to 100 m (structured fiber)"}


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


def cable_part(media: str, speed_gbps: int) -> str:
    return f"{media}-{speed_gbps}G"


def transceiver_part(speed_gbps: int) -> str:
    return f"optic-{speed_gbps}G"


def _describe(cat, model: str) -> tuple[str, str]:
    for category, table in (("node", cat.nodes), ("switch", cat.switches), ("server", cat.appliances)):
        if model in table:
            return category, table[model].description
    if model in cat.pdus:
        p = cat.pdus[model]
        return "pdu", f"{p.vendor} rack PDU, {p.max_kw} kW, {p.outlets} outlets ({p.protocol})"
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

    cables: Counter[tuple[str, int, str]] = Counter((lk.media, lk.speed_gbps, lk.length_class) for lk in layout.links)
    optics: Counter[tuple[int, str]] = Counter()
    for (media, speed, length), n in cables.items():
        note = LENGTH_NOTE.get(length, "")
        description = f"{speed}G {media} cable, {note}"
        lines.append(BomLine("cable", cable_part(media, speed), description, length, n, _spares(n, percent)))
        if media == "fiber":
            optics[(speed, length)] += 2 * n
    for (speed, length), n in optics.items():
        lines.append(
            BomLine(
                "transceiver",
                transceiver_part(speed),
                f"{speed}G optical transceiver, one per fiber cable end",
                length,
                n,
                _spares(n, percent),
            )
        )
    return sorted(
        lines,
        key=lambda b: (CATEGORY_ORDER.index(b.category), b.part, LENGTH_ORDER.get(b.length_class, 9)),
    )


def bom_csv(layout: Layout) -> str:
    return _csv(
        ["category", "part", "description", "length_class", "quantity", "spares", "total", "used_as"],
        ((b.category, b.part, b.description, b.length_class, b.quantity, b.spares, b.total, b.used_as)
         for b in bom_lines(layout)),
    )
