"""layout.json: every table in column form (names once, then one row per record), so the
document stays compact at scale, and a reader rebuilds exactly the layout's records from it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conftest import stack_layout
from topology.layout.model import Address, Asn, Device, Link, Rack, Tier
from topology.render.layout_json import layout_json

TABLES = {"tiers": Tier, "racks": Rack, "devices": Device, "links": Link, "border_links": Link, "addresses": Address,
          "asns": Asn}


@pytest.mark.parametrize("stack", ["roce-1k", "dgx-h100-ib"])
def test_tables_are_columns_and_rows_that_rebuild_the_layout(stack):
    layout = stack_layout(stack)
    doc = json.loads(layout_json(layout))
    assert doc["spec"]["name"] == stack and doc["facts"] == json.loads(json.dumps(layout.facts))
    for table, cls in TABLES.items():
        columns = [f.name for f in dataclasses.fields(cls)]
        assert doc[table]["columns"] == columns, table
        rows = doc[table]["rows"]
        records = getattr(layout, table)
        assert len(rows) == len(records) and all(len(r) == len(columns) for r in rows), table
        assert [cls(*r) for r in rows] == list(records), table


def test_no_key_repeats_per_record():
    """A key per field per record was over half of layout.json (188 MB at 100k GPUs)."""
    layout = stack_layout("roce-1k")
    text = layout_json(layout)
    # once per table: links and border_links
    assert text.count('"a_device"') == 2 and text.count('"interface"') == 1
