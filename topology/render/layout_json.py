"""layout.json: the whole layout, for tools that want everything in one document.

Each table is `{"columns": [field, ...], "rows": [[value, ...], ...]}`: the field names once
per table, not once per record (they were over half the document, 188 MB at 100k GPUs). A
reader rebuilds records with `dict(zip(columns, row))`, or `Link(*row)` from topology.layout.model."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from operator import attrgetter

from topology.layout.model import Address, Asn, Device, Layout, Link, Rack, Tier
from topology.render.pieces import joined

_COMPACT = {"separators": (",", ":")}  # the C encoder, seconds faster at scale than indented output
_BATCH = 4096  # rows encoded at a time: the row tuples of one batch are all that is held


def _table(cls, items) -> Iterator[str]:
    """`{"columns":[...],"rows":[[...],...]}` as json.dumps writes it, in pieces: the rows are
    encoded a batch at a time. Encoding the whole document at once held every row's tuple and
    the encoder's copy of the text beside the text itself, 300 MB at 100k GPUs (issue 39)."""
    columns = [f.name for f in dataclasses.fields(cls)]
    row = attrgetter(*columns)  # one C-level call per record, a tuple the encoder writes as a list
    yield f'{{"columns":{json.dumps(columns, **_COMPACT)},"rows":['
    for k in range(0, len(items), _BATCH):
        if k:
            yield ","
        yield json.dumps([row(i) for i in items[k:k + _BATCH]], **_COMPACT)[1:-1]
    yield "]}"


def layout_json_pieces(layout: Layout) -> Iterator[str]:
    """The document in pieces (a batch of rows each): `superpod plan` writes them as they come, so
    the 100 MB text of a 100k-GPU pod is never held whole."""
    tables = {
        "tiers": (Tier, layout.tiers),
        "racks": (Rack, layout.racks),
        "devices": (Device, layout.devices),
        "links": (Link, layout.links),
        "border_links": (Link, layout.border_links),  # to the site's border routers (no device of ours)
        "addresses": (Address, layout.addresses),
        "asns": (Asn, layout.asns),
    }
    yield '{"spec":' + json.dumps(layout.spec.model_dump(mode="json"), **_COMPACT)
    yield ',"facts":' + json.dumps(layout.facts, **_COMPACT)
    for key, (cls, items) in tables.items():
        yield f",{json.dumps(key)}:"
        yield from _table(cls, items)
    yield "}\n"


layout_json = joined(layout_json_pieces)
