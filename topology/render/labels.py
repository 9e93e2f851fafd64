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

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from topology.layout.model import Layout, Link
from topology.render.pieces import joined
from topology.render.tables import csv_pieces

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


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention: one per cable (topology/layout/model.py)
class CableLabel:
    cable_id: str
    link: Link
    a_rack: str
    a_unit: str
    b_rack: str
    b_unit: str


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


def cable_ids(links, numbered: set[str]) -> Iterator[str]:
    """cable_id of each link, the tiers of `numbered` by slot: a format per tier, made once (67k IDs
    at 8k GPUs, for labels.csv and NetBox's cables)."""
    by_slot = {tier: TIER_CODE.get(tier, tier.upper()).replace("%", "%%") + "-%06d" for tier in numbered}
    for lk in links:
        fmt = by_slot.get(lk.tier)
        yield fmt % (lk.slot + 1) if fmt is not None and lk.slot >= 0 else cable_id(lk, False)


def cable_labels(layout: Layout, border: bool = False) -> list[CableLabel]:
    """A label per link; `border`: the border uplinks too (numbered by slot, unique per pod)."""
    by_name = layout.by_name
    numbered = tiers_numbered_uniquely(layout) | {"border"}
    links = (*layout.links, *layout.border_links) if border else layout.links
    return [
        CableLabel(cid, lk, *rack_and_unit(by_name, lk.a_device), *rack_and_unit(by_name, lk.b_device))
        for lk, cid in zip(links, cable_ids(links, numbered), strict=True)
    ]


def rack_and_unit(by_name: dict, name: str) -> tuple[str, str]:
    """Where a cable end is: its device's rack and unit (`U07`); the site's border routers, no
    device of the plan, by name."""
    d = by_name.get(name)
    if d is None:
        return name, ""
    return d.rack or "", f"U{d.rack_unit:02d}" if d.rack_unit else ""


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


def labels_pieces(layout: Layout) -> Iterator[str]:
    """A row per fibre (a link's label pair); each end's text is its device's placement, worked out
    once per device, and the port."""
    numbered = tiers_numbered_uniquely(layout) | {"border"}
    by_name = layout.by_name

    def place(name: str) -> tuple[str, str, str]:
        """(rack, unit, "<rack> <unit> <device>") of a cable end's device, or of the site's border."""
        rack, unit = rack_and_unit(by_name, name)
        where = f"{rack.removeprefix('rack-')} {unit}" if unit else rack.removeprefix("rack-")
        return rack, unit, f"{where} {name}"

    # every device's placement up front: a lookup per cable end, not a call (66k ends at 8k GPUs)
    places = {name: place(name) for name in by_name}

    def rows():
        links = (*layout.links, *layout.border_links)
        for lk, cid in zip(links, cable_ids(links, numbered), strict=True):
            a_rack, a_unit, a_place = places.get(lk.a_device) or place(lk.a_device)
            b_rack, b_unit, b_place = places.get(lk.b_device) or place(lk.b_device)
            a_device, a_port, b_device, b_port = lk.a_device, lk.a_port, lk.b_device, lk.b_port
            here, there = f"{a_place} {a_port}", f"{b_place} {b_port}"
            n = lk.cable_count  # fibres of this link (a splitter's leg: its own, one)
            # numbers as text (str(), as the csv writer writes them): a row of str is joined in C (tables.py)
            if n == 1:  # nearly every link: one label pair, no fibre suffix
                yield (cid, here, "to " + there, there, "to " + here, a_rack, a_unit, a_device, a_port,
                       b_rack, b_unit, b_device, b_port, lk.tier, lk.media, lk.length_class,
                       str(lk.speed_gbps), "1", "1")
                continue
            # several fibres (every node link of a 100k-GPU pod on 800G twin-port optics): a label pair
            # each, suffixed; the link's text made once, each fibre's suffix once per fibre count
            tier, media, length_class, speed = lk.tier, lk.media, lk.length_class, str(lk.speed_gbps)
            for dot_k, suffix, k, fibres in _fibres(n):
                here_k, there_k = here + suffix, there + suffix
                yield (cid + dot_k, here_k, "to " + there_k, there_k, "to " + here_k,
                       a_rack, a_unit, a_device, a_port, b_rack, b_unit, b_device, b_port,
                       tier, media, length_class, speed, k, fibres)

    return csv_pieces(HEADER, rows())


@functools.cache
def _fibres(n: int) -> tuple[tuple[str, str, str, str], ...]:
    """Each fibre of a link of `n`: its id's suffix, its port text's suffix, its number and `n` as text."""
    return tuple((f".{k}", f" fibre {k}/{n}", str(k), str(n)) for k in range(1, n + 1))


labels_csv = joined(labels_pieces)
