"""layout.json: the whole layout, for tools that want everything in one document."""

from __future__ import annotations

import dataclasses
import json

from topology.model import Layout


def _rows(items) -> list[dict]:
    return [dataclasses.asdict(i) for i in items]


def layout_json(layout: Layout) -> str:
    doc = {
        "spec": layout.spec.model_dump(mode="json"),
        "facts": layout.facts,
        "tiers": _rows(layout.tiers),
        "racks": _rows(layout.racks),
        "devices": _rows(layout.devices),
        "links": _rows(layout.links),
        "addresses": _rows(layout.addresses),
        "asns": _rows(layout.asns),
    }
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"
