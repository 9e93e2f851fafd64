"""labels.csv: one row per cable with the text of the label at each end.

Label printer software (Brady Workstation, Brother P-touch Editor, Dymo Connect) imports a
spreadsheet with a header row and maps columns to the fields of a label template, one label per
row and field per line; so each end's text comes as separate line columns, plus the fields
themselves for templates that lay them out their own way.

The cable ID is positional like every other name: the tier's code and the link's slot in the
end state (OOB cables: the OOB switch port they land on), so growing the pod relabels nothing.
A link of several fibres (an 800G twin-port link: one MPO-12/APC per 400G engine) gets a label
pair per fibre, `<id>.1`, `<id>.2`, its port text ending `fibre 1/2`; border uplinks are labelled
too, their far end the site's routers (`site-border`).
"""

from __future__ import annotations

from dataclasses import dataclass

from topology.model import Layout, Link
from topology.render.tables import _csv

TIER_CODE = {
    "node-leaf": "NL",
    "leaf-spine": "LS",
    "spine-core": "SC",
    "ufm-leaf": "UL",
    "storage-leaf": "TL",
    "storage-spine": "TS",
    "node-inband": "NI",
    "inband-core": "IC",
    "inband-spine": "IS",
    "inband-spine-core": "IK",
    "mgmt-core": "MC",
    "device-oob": "OB",
    "oob-agg": "OA",
    "oob-uplink": "OU",
    "border": "BR",
}


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: one per cable (topology/model.py)
class CableLabel:
    cable_id: str
    link: Link
    a_rack: str
    a_unit: str
    b_rack: str
    b_unit: str

    def end_text(self, near: str, fibre: str = "") -> tuple[str, str]:
        """Line 1: this end (rack, unit, device, port); line 2: the far end; `fibre`: which of
        the link's fibres ("1/2"), at both."""
        lk = self.link
        suffix = f" fibre {fibre}" if fibre else ""
        here = (self.a_rack, self.a_unit, lk.a_device, lk.a_port + suffix)
        there = (self.b_rack, self.b_unit, lk.b_device, lk.b_port + suffix)
        if near == "b":
            here, there = there, here
        return _place(*here), "to " + _place(*there)


def _place(rack: str, unit: str, device: str, port: str) -> str:
    where = f"{rack.removeprefix('rack-')} {unit}" if unit else rack.removeprefix("rack-")
    return f"{where} {device} {port}"


def cable_id(link: Link, by_slot: bool = True) -> str:
    """`by_slot`: the link's tier numbers its links uniquely; otherwise the switch end names it."""
    code = TIER_CODE.get(link.tier, link.tier.upper())
    if by_slot and link.slot >= 0:
        return f"{code}-{link.slot + 1:06d}"
    return f"{code}-{link.b_device.removeprefix('rack-')}-{link.b_port}"


def tiers_numbered_uniquely(layout: Layout) -> set[str]:
    seen: set[tuple[str, int]] = set()
    shared: set[str] = set()
    for lk in layout.links:
        key = (lk.tier, lk.slot)
        if lk.slot < 0 or key in seen:
            shared.add(lk.tier)
        seen.add(key)
    return {lk.tier for lk in layout.links} - shared


def cable_labels(layout: Layout, border: bool = False) -> list[CableLabel]:
    """A label per link; `border`: the border uplinks too (numbered by slot, unique per pod)."""
    by_name = layout.by_name
    numbered = tiers_numbered_uniquely(layout) | {"border"}

    def where(name: str) -> tuple[str, str]:
        d = by_name.get(name)
        if d is None:  # the site's border routers: no device of the plan
            return name, ""
        return d.rack or "", f"U{d.rack_unit:02d}" if d.rack_unit else ""

    links = (*layout.links, *layout.border_links) if border else layout.links
    return [
        CableLabel(cable_id(lk, lk.tier in numbered), lk, *where(lk.a_device), *where(lk.b_device))
        for lk in links
    ]


HEADER = [
    "cable_id",
    "a_line1",
    "a_line2",
    "b_line1",
    "b_line2",
    "a_rack",
    "a_unit",
    "a_device",
    "a_port",
    "b_rack",
    "b_unit",
    "b_device",
    "b_port",
    "kind",
    "media",
    "length_class",
    "speed_gbps",
    "fibre",
    "fibres",
]


def labels_csv(layout: Layout) -> str:
    def rows(c: CableLabel):
        n = c.link.cable_count  # fibres of this link (a splitter's leg: its own, one)
        for k in range(1, n + 1):
            yield row(c, k, n)

    def row(c: CableLabel, k: int, n: int):
        lk = c.link
        fibre = f"{k}/{n}" if n > 1 else ""
        return (
            f"{c.cable_id}.{k}" if n > 1 else c.cable_id,
            *c.end_text("a", fibre),
            *c.end_text("b", fibre),
            c.a_rack,
            c.a_unit,
            lk.a_device,
            lk.a_port,
            c.b_rack,
            c.b_unit,
            lk.b_device,
            lk.b_port,
            lk.tier,
            lk.media,
            lk.length_class,
            lk.speed_gbps,
            k,
            n,
        )

    return _csv(HEADER, (r for c in cable_labels(layout, border=True) for r in rows(c)))
