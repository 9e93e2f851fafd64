"""labels.csv: one row per cable with the text of the label at each end.

Label printer software (Brady Workstation, Brother P-touch Editor, Dymo Connect) imports a
spreadsheet with a header row and maps columns to the fields of a label template, one label per
row and field per line; so each end's text comes as separate line columns, plus the fields
themselves for templates that lay them out their own way.

The cable ID is positional like every other name: the tier's code and the link's slot in the
end state (OOB cables: the OOB switch port they land on), so growing the pod relabels nothing.
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
}


@dataclass(frozen=True)
class CableLabel:
    cable_id: str
    link: Link
    a_rack: str
    a_unit: str
    b_rack: str
    b_unit: str

    def end_text(self, near: str) -> tuple[str, str]:
        """Line 1: this end (rack, unit, device, port); line 2: the far end."""
        lk = self.link
        here = (self.a_rack, self.a_unit, lk.a_device, lk.a_port)
        there = (self.b_rack, self.b_unit, lk.b_device, lk.b_port)
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


def cable_labels(layout: Layout) -> list[CableLabel]:
    by_name = layout.by_name
    numbered = tiers_numbered_uniquely(layout)

    def where(name: str) -> tuple[str, str]:
        d = by_name[name]
        return d.rack or "", f"U{d.rack_unit:02d}" if d.rack_unit else ""

    return [
        CableLabel(cable_id(lk, lk.tier in numbered), lk, *where(lk.a_device), *where(lk.b_device))
        for lk in layout.links
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
]


def labels_csv(layout: Layout) -> str:
    def row(c: CableLabel):
        lk = c.link
        return (
            c.cable_id,
            *c.end_text("a"),
            *c.end_text("b"),
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
        )

    return _csv(HEADER, (row(c) for c in cable_labels(layout)))
