"""layout.json read back as a stream (topology/layout/plan_reader.py): the same members and rows
as json.loads, wherever the chunks fall, and never the whole document held (issue 39: a re-plan's
growth check loaded the 100k pod's layout.json whole, 704 MiB)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from tests.conftest import stack_layout
from topology.layout import plan_reader
from topology.layout.growth import check_growth, moves
from topology.layout.model import Address, Device, Layout
from topology.layout.plan_reader import Table, read_plan
from topology.render.layout_json import layout_json, layout_json_pieces


def as_document(members) -> dict:
    """read_plan's members as json.loads gives them: a table's rows listed."""
    return {name: {"columns": v.columns, "rows": list(v.rows)} if isinstance(v, Table) else v
            for name, v in members}


@pytest.mark.parametrize("chunk", [7, 64, 1000, 1 << 20])
def test_a_plan_reads_back_as_json_loads_reads_it(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(plan_reader, "CHUNK", chunk)  # chunk ends fall inside names, numbers, rows, members
    path = tmp_path / "layout.json"
    path.write_text(layout_json(stack_layout("lab")))
    assert as_document(read_plan(path)) == json.loads(path.read_text())


@pytest.mark.parametrize("chunk", [5, 16, 4096])
def test_strings_that_look_like_row_ends_and_numbers_at_chunk_ends(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(plan_reader, "CHUNK", chunk)
    rows = [["a],[b", 12345, None], ["c]]", -1.5e3, True], ['q"]]', 123456789, False], ["\u00e9\\]", 0, ""]]
    doc = {"spec": {"name": "x ]] y", "n": [1, 2]}, "t": {"columns": ["s", "n", "b"], "rows": rows * 40},
           "empty": {"columns": ["s"], "rows": []}, "facts": {"gpus": 8}, "last": 1234567}
    path = tmp_path / "layout.json"
    path.write_text(json.dumps(doc, separators=(",", ":")))
    assert as_document(read_plan(path)) == doc
    path.write_text(json.dumps(doc, indent=1))  # another writer's whitespace: read row by row, same values
    assert as_document(read_plan(path)) == doc


def test_rows_left_unread_are_skipped(tmp_path):
    path = tmp_path / "layout.json"
    path.write_text(layout_json(stack_layout("lab")))
    names = [name for name, _ in read_plan(path)]  # no table's rows iterated
    assert names == list(json.loads(path.read_text()))


@pytest.mark.parametrize("text", ['{"a":1', '{"a":{"columns":["x"],"rows":[[1],[2]', '[1,2]', '{"a":1}x', ''])
def test_a_document_cut_short_or_not_an_object_is_refused(tmp_path, text):
    path = tmp_path / "layout.json"
    path.write_text(text)
    with pytest.raises(ValueError):
        as_document(read_plan(path))


def big_layout_json(path, layout: Layout, extra_addresses: int) -> int:
    """The layout's layout.json with many more address rows of devices the layout lacks (they
    count as gone with their device, so they move nothing): a big document, written in pieces."""
    with open(path, "w", encoding="utf-8") as f:
        for piece in layout_json_pieces(layout):
            f.write(piece)
            if piece.startswith('{"columns":["device","interface"'):  # the layout's own rows follow these
                for k in range(0, extra_addresses, 4096):
                    rows = [[f"gone-{i}", "swp1", f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}/31", "10.0.0.0/31",
                             "rails", "x"] for i in range(k, min(k + 4096, extra_addresses))]
                    f.write(json.dumps(rows, separators=(",", ":"))[1:-1] + ",")
    return path.stat().st_size


def test_the_growth_check_holds_a_chunk_of_the_old_plan_not_all_of_it(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_reader, "CHUNK", 1 << 14)  # what it holds scales with the chunk, never the file
    layout = stack_layout("lab")
    assert layout.addresses  # the extra rows go before the layout's own
    path = tmp_path / "layout.json"
    size = big_layout_json(path, layout, 100_000)
    assert size > 6e6
    tracemalloc.start()
    try:
        check_growth(path, layout)  # nothing moved: returns
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # json.loads of the document alone held several times its size; the stream a few chunks and their rows
    assert peak < size / 8, (peak, size)
    assert moves(read_plan(path), layout) == []  # the extra rows were read and compared: their devices are gone


def test_rows_that_share_a_key_the_last_one_decides(tmp_path):
    # a rail leaf's rail address and its pod gateways share vlan101: the old plan's last row of the key counts
    leaf = Device("leaf-1", "leaf", "sn5600")
    columns = ["device", "interface", "address", "network", "pool", "peer"]
    rows = [["leaf-1", "vlan101", a, "", "rails", ""] for a in ("10.0.0.1/24", "10.1.0.1/24")]
    path = tmp_path / "layout.json"
    devices = {"columns": ["name", "rack", "rack_unit"], "rows": [["leaf-1", None, None]]}
    path.write_text(json.dumps({"spec": {}, "devices": devices,
                                "links": {"columns": ["a_device", "a_port", "b_device", "b_port"], "rows": []},
                                "addresses": {"columns": columns, "rows": rows}}, separators=(",", ":")))

    def now(*addresses: str) -> Layout:
        return Layout(None, (leaf,), (), addresses=tuple(Address("leaf-1", "vlan101", a, "", "rails")
                                                         for a in addresses))

    assert moves(read_plan(path), now("10.9.0.1/24", "10.1.0.1/24")) == []
    assert moves(read_plan(path), now("10.1.0.1/24", "10.9.0.1/24")) == ["leaf-1 vlan101 10.1.0.1/24 -> 10.9.0.1/24"]
