"""CSV artifacts: devices, cabling, IP plan, ASNs, racks."""

from __future__ import annotations

import csv
import functools
import io
import itertools
import operator
from collections.abc import Iterator

from topology.layout.model import Layout
from topology.render.pieces import joined


def csv_text(header: list[str], rows) -> str:
    return "".join(csv_pieces(header, rows))


def csv_pieces(header: list[str], rows) -> Iterator[str]:
    """CSV exactly as the csv module writes it (minimal quoting, "\n" line ends), in pieces of
    2,048 rows, faster: a block in which no field needs quoting but for commas (nearly all of a
    plan's) is joined by C code alone, the others are written by the csv writer (which keeps no
    state between rows). The csv writer's per-field work was a sixth of a 100k-GPU plan; the
    pieces let the plan write a file of 100 MB without ever holding it whole (issue 39)."""
    yield _csv_block([header])
    rows = iter(rows)
    quoted: tuple[int, ...] = ()  # columns whose fields held commas in an earlier block
    while block := list(map(tuple, itertools.islice(rows, 2048))):  # tuple(): a generator row is read once
        text, quoted = _plain_block(block, quoted)
        yield _csv_block(block) if text is None else text


def _csv_block(block: list) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(block)
    return buf.getvalue()


def _plain_block(block: list[tuple], quoted: tuple[int, ...] = ()) -> tuple[str | None, tuple[int, ...]]:
    """The block's lines joined with commas, or None when some field would be quoted for more than
    a comma (a quote or line break in it), is None (written empty) or is a row's only field and
    empty; and the columns found to hold commas. Rows of one width (every table's) are written by
    a join per row where every field is a str, else by one %-format of the block's fields (one C
    call where a join per row of str() fields was a fifth of a plan's render, issue 39). A field
    with a comma is quoted as the csv module quotes it: `quoted` names the columns an earlier
    block of the table held commas in (NetBox's tag lists), quoted before the block is formatted;
    commas elsewhere are looked for once and the block formatted again (the csv writer was 70 ms
    of the 8k plan's NetBox cables alone)."""
    width = len(block[0])
    if width < 2 or len(set(map(len, block))) != 1:
        return _plain_rows(block), quoted
    rows, wrapped, inner = _quote_commas(block, quoted) if quoted else (block, 0, 0)
    if rows is None:
        return None, quoted
    try:  # every field a str (the IP plan, NetBox's cables and addresses): a join per row, 4x the %-format's speed
        text = "\n".join(map(",".join, rows)) + "\n"
    except TypeError:  # an int, a float or None among them: %s writes str(field), as the csv writer does
        fields = tuple(_flat(rows))
        text = _row_format(width) * len(rows) % fields
        # a None field is written "None": a text without that word has none, found by one C-level
        # scan instead of a comparison per field (3M fields at 8k GPUs); with it, the fields decide
        if "None" in text and None in fields:
            return None, quoted
    # the quotes are the wrappers', two each: no field held one (the csv writer doubles them)
    if text.count('"') != 2 * wrapped or "\r" in text or text.count("\n") != len(rows):
        return None, quoted
    if text.count(",") != (width - 1) * len(rows) + inner:  # commas in a column not quoted yet
        found = _comma_columns(block)
        if set(found) <= set(quoted):
            return None, quoted
        return _plain_block(block, found)
    return text, quoted


def _quote_commas(block: list[tuple], columns: tuple[int, ...]) -> tuple[list[tuple] | None, int, int]:
    """The block with the fields of `columns` that hold a comma quoted; how many were, and the
    commas inside them. (None, 0, 0) where such a column holds None (the csv writer's empty field)."""
    cells = list(zip(*block, strict=True))
    wrapped = inner = 0
    for j in columns:
        if None in cells[j]:
            return None, 0, 0
        text = tuple(map(str, cells[j]))
        wrapped += sum(map(operator.contains, text, itertools.repeat(",")))
        inner += "".join(text).count(",")
        cells[j] = tuple(f'"{f}"' if "," in f else f for f in text)
    return list(zip(*cells, strict=True)), wrapped, inner


def _comma_columns(block: list[tuple]) -> tuple[int, ...]:
    """The columns in which some field holds a comma (each column joined once, in C)."""
    return tuple(j for j, column in enumerate(zip(*block, strict=True)) if "," in "\n".join(map(str, column)))


@functools.lru_cache(maxsize=64)
def _row_format(width: int) -> str:
    return ",".join(["%s"] * width) + "\n"  # %s writes str(field), as the csv writer does


_flat = itertools.chain.from_iterable


def _plain_rows(block: list[tuple]) -> str | None:
    """_plain_block for rows of any widths, a row at a time."""
    lines = list(map(",".join, map(_as_strs, block)))
    text = "\n".join(lines) + "\n"
    if ("" in lines or '"' in text or "\r" in text or text.count("\n") != len(lines)
            or text.count(",") != sum(map(len, block)) - len(block)
            or any(map(operator.contains, block, itertools.repeat(None)))):
        return None
    return text


_as_strs = functools.partial(map, str)


SLOT = object()  # a RowShape field that each row fills with a value of its own


class RowShape(str):
    """A CSV line with `%s` where a row's own values go: the fields many rows share (a NetBox
    interface's type, speed and flags; a cable's type, length and tags), written once as the csv
    writer writes them, so a row is one `shape % values` (issue 39: most of the NetBox tables'
    rows differ only by names). `fields` keeps the row with SLOT at each value's place."""

    fields: tuple

    def __new__(cls, *fields) -> RowShape:
        if len(fields) < 2:  # a lone empty field is quoted by the csv writer: never a shape
            raise ValueError("a row shape has two fields or more")
        line = ",".join("%s" if f is SLOT else _csv_field(f).replace("%", "%%") for f in fields)
        shape = super().__new__(cls, line + "\n")
        shape.fields = fields
        return shape

    def row(self, values) -> tuple:
        """The whole row: the shape's fields with the values in their slots."""
        it = iter(values)
        return tuple(next(it) if f is SLOT else f for f in self.fields)


def _csv_field(field) -> str:
    """A field as the csv writer writes it in a row of two or more (its quoting depends on it alone)."""
    if type(field) is str:
        if "," in field or '"' in field or "\n" in field or "\r" in field:
            return _quoted(field)
        return field
    if type(field) is int:
        return str(field)
    return _csv_block([(field, "")])[:-2]


@functools.lru_cache(maxsize=1024)  # NetBox's tag lists: one per SU and rail, in hundreds of cable shapes
def _quoted(field: str) -> str:
    return _csv_block([(field, "")])[:-2]


def shaped_csv_pieces(header: list[str], rows) -> Iterator[str]:
    """csv_pieces of rows given as (RowShape, values): a block whose values are all str with no
    comma, quote or line break (written as they are) is its rows' shapes joined and formatted
    with all their values at once, one C call; another block is written by the csv writer."""
    yield _csv_block([header])
    rows = iter(rows)
    while block := list(itertools.islice(rows, 2048)):
        values = tuple(_flat(map(_second, block)))
        try:
            text = "".join(values)  # a TypeError where some value is not a str
        except TypeError:
            text = ","
        if "," in text or '"' in text or "\n" in text or "\r" in text:
            yield _csv_block([shape.row(v) for shape, v in block])
        else:
            yield "".join(map(_first, block)) % values


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


class GFormats(dict):
    """`f"{x:g}"` of each number, formatted once per distinct value: a plan's cable lengths and
    quantities are a few dozen values over 33k links at 8k GPUs (the format was 17 ms of
    cabling.csv). Zero is never kept: 0.0 and -0.0 are one key but two texts."""

    def __missing__(self, x) -> str:
        text = f"{x:g}"
        if x:
            self[x] = text
        return text


def _blank(v) -> object:
    return "" if v is None else v


def devices_pieces(layout: Layout) -> Iterator[str]:
    first = layout.first_address

    def ip(device: str, pool: str) -> str:
        a = first.get((device, pool))
        return a.address.split("/")[0] if a else ""

    return csv_pieces(
        [
            "name",
            "role",
            "model",
            "su",
            "rack",
            "rail",
            "block",
            "power_kw",
            "rack_units",
            "rack_unit",
            "oob_address",
            "inband_address",
        ],
        (
            (
                d.name,
                d.role,
                d.model,
                _blank(d.su),
                _blank(d.rack),
                _blank(d.rail),
                _blank(d.block),
                d.power_kw,
                d.rack_units,
                _blank(d.rack_unit),
                ip(d.name, "oob"),
                ip(d.name, "inband"),
            )
            for d in layout.devices
        ),
    )


def cabling_pieces(layout: Layout) -> Iterator[str]:
    g = GFormats()
    return csv_pieces(
        ["a_device", "a_port", "b_device", "b_port", "kind", "fabric", "speed_gbps", "length_class", "media",
         "length_m", "a_part", "b_part", "cable_part", "cable_qty"],
        (
            (
                lk.a_device,
                lk.a_port,
                lk.b_device,
                lk.b_port,
                lk.tier,
                lk.fabric,
                str(lk.speed_gbps),  # as the csv writer writes it: a row of str is joined in C (_plain_block)
                lk.length_class,
                lk.media,
                g[lk.length_m],
                lk.a_part,
                lk.b_part,
                lk.cable_part,
                g[lk.cable_count / lk.cable_shared],  # 2: two fibres (800G twin-port); 0.5: half a splitter
            )
            for lk in (*layout.links, *layout.border_links)  # border: the far end is the site's
        ),
    )


def ipplan_pieces(layout: Layout) -> Iterator[str]:
    return csv_pieces(
        ["device", "interface", "address", "network", "pool", "peer"],
        ((a.device, a.interface, a.address, a.network, a.pool, a.peer) for a in layout.addresses),
    )


def asns_pieces(layout: Layout) -> Iterator[str]:
    return csv_pieces(["device", "asn", "scope"], ((a.device, a.asn, a.scope) for a in layout.asns))


def racks_pieces(layout: Layout) -> Iterator[str]:
    return csv_pieces(
        [
            "name",
            "row",
            "position",
            "kind",
            "su",
            "budget_kw",
            "planned_kw",
            "liquid_kw",
            "air_kw",
            "cooling",
            "rack_units_used",
            "feed_capacity_kw",
            "feed_loss_kw",
            "on_feed_loss",
        ],
        (
            (
                r.name,
                r.row + 1,
                r.position,
                r.kind,
                _blank(r.su),
                r.budget_kw,
                r.planned_kw,
                r.liquid_kw,
                r.air_kw,
                r.cooling,
                r.rack_units_used,
                r.feed_capacity_kw,
                r.feed_loss_kw,
                r.on_feed_loss,
            )
            for r in layout.racks
        ),
    )


devices_csv = joined(devices_pieces)

cabling_csv = joined(cabling_pieces)

ipplan_csv = joined(ipplan_pieces)

asns_csv = joined(asns_pieces)

racks_csv = joined(racks_pieces)
