"""Growth that moves installed gear: a new plan compared with the one before it (its layout.json).

A pod grows by editing its spec and planning again. Gear already in the racks must stay where it
is: same rack and unit, same cables, same addresses. Scalable units are reserved up to
`max_scalable_units`, so adding one moves nothing; a change that is not reserved (more storage
servers, a different rack size) can re-pack the pod-wide racks or renumber addresses. `plan`
refuses such a plan, naming the spec fields that changed and what they move, unless the operator
re-plans on purpose (`--allow-moves`: nothing is installed yet)."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

from topology.errors import SpecError
from topology.layout.model import Layout
from topology.layout.plan_reader import Table, read_plan

SHOWN = 5  # moves named in the error; the count says how many more


def _objects(items, key: tuple[str, ...], fields: tuple[str, ...]) -> dict[tuple, tuple]:
    k, n = attrgetter(*key, *fields), len(key)
    return {t[:n]: t[n:] for t in map(k, items)}


# What "moved" means for gear already installed: its place, its cables' far ends, its addresses.
WATCHED = {
    "devices": (("name",), ("rack", "rack_unit")),
    "links": (("a_device", "a_port"), ("b_device", "b_port")),
    "addresses": (("device", "interface"), ("address",)),
}


def _moved(table: str, previous: Table, layout: Layout, devices: set[str]) -> dict[tuple, str]:
    """The rows of one of the old plan's tables whose thing the new layout puts elsewhere, by key.
    Where rows share a key (a leaf's rail address and its pod gateways share an interface) the
    last one decides, as it did when the old rows were read into a dict."""
    key, fields = WATCHED[table]
    new = _objects(getattr(layout, table), key, fields)
    columns = previous.columns  # one C-level call per row (an 8k pod's plan has 100k addresses)
    row = itemgetter(*(columns.index(c) for c in key), *(columns.index(c) for c in fields))
    n = len(key)
    found: dict[tuple, str] = {}
    for t in map(row, previous.rows):
        k, was = t[:n], t[n:]
        now = new.get(k)
        if now == was or (now is None and k[0] not in devices):
            if found:
                found.pop(k, None)  # a later row of the key stays put: the key did not move
            continue
        what = " ".join(str(p) for p in k)
        before = "/".join(str(v) for v in was)
        found[k] = f"{what} {before} -> {'/'.join(str(v) for v in now) if now else 'gone'}"
    return found


def moves(previous: Iterable[tuple[str, Any]], layout: Layout) -> list[str]:
    """One line per installed thing the new layout puts elsewhere (rows in both plans that differ;
    a cable or address whose device remains but which the new plan drops counts as moved).
    `previous`: the old layout.json's members as read_plan streams them, one table's rows at a
    time; a document without every watched table is not one this version wrote: nothing moves."""
    devices = {d.name for d in layout.devices}
    found, seen = [], set()
    for name, value in previous:
        if name in WATCHED:
            found += _moved(name, value, layout, devices).values()
            seen.add(name)
    return sorted(found) if seen == WATCHED.keys() else []


def changed_fields(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted names of the spec fields whose values differ."""
    names = []
    for k in sorted(old.keys() | new.keys()):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            names += changed_fields(a, b, f"{prefix}{k}.")
        elif a != b:
            names.append(f"{prefix}{k}")
    return names


def check_growth(previous_plan: Path, layout: Layout) -> None:
    """Raises SpecError naming the changed spec fields when the plan in `previous_plan` (a
    layout.json) has installed gear the new layout moves. No previous plan: nothing to check. The
    layouts are compared even when the spec is the same: a catalog overlay (or a new version of
    superpod) can move gear with the spec unchanged."""
    if not previous_plan.is_file():
        return
    spec = layout.spec.model_dump(mode="json")
    before: dict = {}

    def members():  # the old plan read as a stream (plan_reader.py): its spec kept, its rows dropped as compared
        for name, value in read_plan(previous_plan):
            if name == "spec":
                before["spec"] = value
            yield name, value

    try:
        found = moves(members(), layout)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):  # not a layout.json this version wrote
        return
    if not found:
        return
    fields = changed_fields(before.get("spec") or {}, spec)
    shown = "; ".join(found[:SHOWN]) + (f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    raise SpecError(
        ", ".join(fields) or "spec",
        f"moves gear the plan in {previous_plan.parent} placed ({len(found)}: {shown}); only scalable units are "
        "reserved to an end state (max_scalable_units): plan the end state's other counts from the start, "
        "or re-plan on purpose with --allow-moves (nothing installed yet)",
    )
