"""Power and cooling per rack and row against their limits, and which limit binds first.

Each rack is held to its power budget, to what one feed carries alone (2N), to its units and,
liquid-cooled with per-rack CDUs, to its CDU; each row's liquid load to its in-row CDUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from topology import catalog
from topology.layout.model import Layout, Rack


@dataclass(frozen=True)
class Limit:
    what: str  # budget, feed, space, cdu
    used: float
    capacity: float
    unit: str

    @property
    def share(self) -> float:
        return self.used / self.capacity if self.capacity else 0.0

    @property
    def headroom(self) -> float:
        return round(self.capacity - self.used, 3)


@dataclass(frozen=True)
class RackPower:
    rack: Rack
    limits: tuple[Limit, ...]

    @property
    def first(self) -> Limit:
        """The limit this rack reaches first: the largest share of its capacity in use."""
        return max(self.limits, key=lambda lim: lim.share)


@dataclass(frozen=True)
class RowPower:
    row: int
    racks: int
    planned_kw: float
    budget_kw: float
    liquid_kw: float
    air_kw: float
    limits: tuple[Limit, ...]

    @property
    def first(self) -> Limit:
        return max(self.limits, key=lambda lim: lim.share)


def rack_power(layout: Layout) -> list[RackPower]:
    cat = catalog.load()
    r = layout.spec.racks
    per_rack_cdu = {d.rack: cat.cdus[d.model].capacity_kw for d in layout.devices if d.role == "cdu"}
    out = []
    for rack in layout.racks:
        limits = [
            Limit("budget", rack.planned_kw, rack.budget_kw, "kW"),
            # one feed carrying the rack alone (2N), at its continuous rating, PSU caps applied
            Limit("feed", rack.feed_loss_kw, rack.feed_capacity_kw, "kW"),
            Limit("space", rack.rack_units_used, r.rack_units, "U"),
        ]
        if r.cdu == "per_rack" and rack.liquid_kw and rack.name in per_rack_cdu:
            limits.append(Limit("cdu", rack.liquid_kw, per_rack_cdu[rack.name], "kW"))
        out.append(RackPower(rack, tuple(limits)))
    return out


def row_power(layout: Layout) -> list[RowPower]:
    cat = catalog.load()
    in_row = layout.spec.racks.cdu == "per_row"
    rows: dict[int, list[Rack]] = {}
    for rack in layout.racks:
        rows.setdefault(rack.row, []).append(rack)
    cdu_of = {d.rack: cat.cdus[d.model].capacity_kw for d in layout.devices if d.role == "cdu"}
    out = []
    for row, racks in sorted(rows.items()):
        planned = round(sum(x.planned_kw for x in racks), 3)
        budget = round(sum(x.budget_kw for x in racks), 3)
        liquid = round(sum(x.liquid_kw for x in racks), 3)
        limits = [Limit("budget", planned, budget, "kW")]
        cdu_kw = sum(cdu_of.get(x.name, 0.0) for x in racks)
        if in_row and liquid:
            limits.append(Limit("cdu", liquid, cdu_kw, "kW"))
        out.append(RowPower(row, len(racks), planned, budget, liquid, round(planned - liquid, 3), tuple(limits)))
    return out
