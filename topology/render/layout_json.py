"""layout.json: the whole layout, for tools that want everything in one document.

Each table is `{"columns": [field, ...], "rows": [[value, ...], ...]}`: the field names once
per table, not once per record (they were over half the document, 188 MB at 100k GPUs). A
reader rebuilds records with `dict(zip(columns, row))`, or `Link(*row)` from topology.layout.model."""

from __future__ import annotations

import dataclasses
import json
from operator import attrgetter

from topology.layout.model import Address, Asn, Device, Layout, Link, Rack, Tier


def _table(cls, items) -> dict:
    columns = [f.name for f in dataclasses.fields(cls)]
    row = attrgetter(*columns)  # one C-level call per record, a tuple the encoder writes as a list
    return {"columns": columns, "rows": [row(i) for i in items]}


def layout_json(layout: Layout) -> str:
    doc = {
        "spec": layout.spec.model_dump(mode="json"),
        "facts": layout.facts,
        "tiers": _table(Tier, layout.tiers),
        "racks": _table(Rack, layout.racks),
        "devices": _table(Device, layout.devices),
        "links": _table(Link, layout.links),
        "border_links": _table(Link, layout.border_links),  # to the site's border routers (no device of ours)
        "addresses": _table(Address, layout.addresses),
        "asns": _table(Asn, layout.asns),
    }
    return json.dumps(doc, separators=(",", ":")) + "\n"  # compact: the C encoder, seconds faster at scale
