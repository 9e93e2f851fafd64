"""A layout.json read back as a stream: its members in document order, a table's rows as they come.

The 100k-GPU pod's layout.json is about 100 MB; `json.loads` of it peaked at 704 MiB, which put a
re-plan's growth check (growth.py) at 1,140 MiB (issue 39). The writer
(topology/render/layout_json.py) emits each table as `{"columns":[...],"rows":[[...],...]}`, its
rows a batch at a time; this reads them back the same way: a chunk of text at a time, the rows of
a chunk parsed by one `json.loads` (C code) up to the last row boundary in it, so what is held is
one chunk and the rows of it, never the document."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

CHUNK = 1 << 18  # characters read at a time (their rows, parsed, take several times that)
_TABLE = '{"columns":'  # how the writer opens a table (json.dumps, compact)
_WS = re.compile(r"[ \t\n\r]*").match
_DECODER = json.JSONDecoder()


class Table(NamedTuple):
    """A table member: its column names, and its rows (lists, in the order written). The rows
    are read from the file as they are iterated: valid until the next member is asked for."""

    columns: list[str]
    rows: Iterator[list]


class _Text:
    """The file's text, a chunk at a time, and a position in it."""

    def __init__(self, f):
        self.f, self.buf, self.pos, self.eof = f, "", 0, False

    def more(self) -> bool:
        """Appends the next chunk (dropping what was consumed); False at the end of the file."""
        chunk = "" if self.eof else self.f.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def ahead(self, n: int) -> str:
        """The next n characters (fewer at the end of the file), consuming nothing."""
        while len(self.buf) - self.pos < n and self.more():
            pass
        return self.buf[self.pos:self.pos + n]

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            self.pos = _WS(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise ValueError(f"expected {c!r} at {self.ahead(20)!r}")
        self.pos += 1

    def closes(self, close: str, what: str) -> bool:
        """After an item of a list or object: True at its closing `close`, False at a comma."""
        c = self.peek()
        self.pos += 1
        if c == close:
            return True
        if c != ",":
            raise ValueError(f"expected ',' or {close!r} between {what}, found {c!r}")
        return False

    def value(self) -> Any:
        """The JSON value that starts here, read whole."""
        self.peek()
        while True:
            try:
                v, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.more():
                    continue
                raise
            if end < len(self.buf) or self.eof or not self.more():  # a number at the chunk's end may go on
                self.pos = end
                return v


def _rows(t: _Text) -> Iterator[list]:
    """The rows of a table's `"rows":[` up to its `]`. Rows are flat lists of scalars (as the
    writer writes them), so outside a string `],[` only ends a row and `]]` only ends the table:
    the text up to the last such boundary in view is one `json.loads`. A boundary that lies
    inside a string leaves that text an unterminated string, which json refuses: those rows are
    then read one at a time."""
    if t.peek() == "]":
        t.pos += 1
        return
    while True:
        if len(t.buf) - t.pos < CHUNK // 2:
            t.more()  # keep about a chunk of rows in view
        buf, pos = t.buf, t.pos
        end = buf.find("]]", pos)
        cut = end if end >= 0 else buf.rfind("],[", pos)
        batch = None
        if cut > pos:
            try:
                batch = json.loads("[" + buf[pos:cut + 1] + "]")
            except ValueError:
                pass
        if batch is not None:
            yield from batch
            if end >= 0:
                t.pos = end + 2  # past the last row and the table's `]`
                return
            t.pos = cut + 2  # at the next row's `[`
            continue
        yield t.value()  # one row
        if t.closes("]", "rows"):
            return


def read_plan(path: Path) -> Iterator[tuple[str, Any]]:
    """(name, value) of each member of a layout.json, in document order: a table (columns and
    rows) as a Table whose rows stream, any other member (spec, facts) parsed whole. Raises
    ValueError on text that is not such a document."""
    with open(path, encoding="utf-8") as f:
        t = _Text(f)
        t.expect("{")
        if t.peek() == "}":
            return
        while True:
            name = t.value()
            if name.__class__ is not str:
                raise ValueError(f"a member's name is {name!r}")
            t.expect(":")
            t.peek()
            if t.ahead(len(_TABLE)) == _TABLE:
                t.pos += len(_TABLE)
                columns = t.value()
                t.expect(",")
                if t.value() != "rows":
                    raise ValueError(f"{name}: expected its rows after its columns")
                t.expect(":")
                t.expect("[")
                rows = _rows(t)
                yield name, Table(columns, rows)
                for _ in rows:  # what the reader left unread
                    pass
                t.expect("}")
            else:
                value = t.value()
                if value.__class__ is dict and value.keys() == {"columns", "rows"}:  # a table written otherwise
                    value = Table(value["columns"], iter(value["rows"]))
                yield name, value
            if t.closes("}", "members"):
                break
        if t.peek():
            raise ValueError("text after the document")
