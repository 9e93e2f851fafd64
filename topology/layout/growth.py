"""Growth that moves installed gear: a new plan compared with the one before it (its layout.json).

A pod grows by editing its spec and planning again. Gear already in the racks must stay where it
is: same rack and unit, same cables, same addresses. Scalable units are reserved up to
`max_scalable_units`, so adding one moves nothing; a change that is not reserved (more storage
servers, a different rack size) can re-pack the pod-wide racks or renumber addresses. `plan`
refuses such a plan, naming the spec fields that changed and what they move, unless the operator
re-plans on purpose (`--allow-moves`: nothing is installed yet)."""

from __future__ import annotations

import json
from operator import attrgetter, itemgetter
from pathlib import Path

from topology.errors import SpecError
from topology.layout.model import Layout

SHOWN = 5  # moves named in the error; the count says how many more


def _rows(table: dict, key: tuple[str, ...], fields: tuple[str, ...]) -> dict[tuple, tuple]:
    columns = table["columns"]
    k = itemgetter(*(columns.index(c) for c in key), *(columns.index(c) for c in fields))
    n = len(key)  # one C-level call per row (an 8k pod's plan has 100k addresses)
    return {t[:n]: t[n:] for t in map(k, table["rows"])}


def _objects(items, key: tuple[str, ...], fields: tuple[str, ...]) -> dict[tuple, tuple]:
    k, n = attrgetter(*key, *fields), len(key)
    return {t[:n]: t[n:] for t in map(k, items)}


# What "moved" means for gear already installed: its place, its cables' far ends, its addresses.
WATCHED = (
    ("devices", ("name",), ("rack", "rack_unit")),
    ("links", ("a_device", "a_port"), ("b_device", "b_port")),
    ("addresses", ("device", "interface"), ("address",)),
)


def moves(previous: dict, layout: Layout) -> list[str]:
    """One line per installed thing the new layout puts elsewhere (rows in both plans that differ;
    a cable or address whose device remains but which the new plan drops counts as moved)."""
    devices = {d.name for d in layout.devices}
    found = []
    for table, key, fields in WATCHED:
        old = _rows(previous[table], key, fields)
        new = _objects(getattr(layout, table), key, fields)
        for k, was in old.items():
            now = new.get(k)
            if now == was or (now is None and k[0] not in devices):
                continue
            what = " ".join(str(p) for p in k)
            before = "/".join(str(v) for v in was)
            found.append(f"{what} {before} -> {'/'.join(str(v) for v in now) if now else 'gone'}")
    return sorted(found)


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
    try:
        previous = json.loads(previous_plan.read_text(encoding="utf-8"))
        found = moves(previous, layout)
    except (ValueError, KeyError, TypeError):  # not a layout.json this version wrote: nothing to compare
        return
    if not found:
        return
    fields = changed_fields(previous.get("spec") or {}, spec)
    shown = "; ".join(found[:SHOWN]) + (f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    raise SpecError(
        ", ".join(fields) or "spec",
        f"moves gear the plan in {previous_plan.parent} placed ({len(found)}: {shown}); only scalable units are "
        "reserved to an end state (max_scalable_units): plan the end state's other counts from the start, "
        "or re-plan on purpose with --allow-moves (nothing installed yet)",
    )
