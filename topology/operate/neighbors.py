"""What validation compares: the planned cables (from cabling.csv and devices.csv, written by
`superpod plan`) and the neighbor records discovered on the devices (LLDP, ibnetdiscover)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from topology.errors import SpecError

Endpoint = tuple[str, str]  # (device, port)


@dataclass(frozen=True, slots=True)
class PlannedLink:
    a: Endpoint
    b: Endpoint
    fabric: str
    kind: str
    speed_gbps: int
    media: str = ""
    cable_id: str = ""  # the ID printed on the cable's label (labels.csv)
    site_end: bool = False  # b is the site's device (a border router): named by the site, never polled


@dataclass(frozen=True, slots=True)
class Neighbor:
    """One port's view of its far end, as the device at `local` reports it."""

    local: Endpoint
    remote: Endpoint
    speed_gbps: int | None = None  # the local port's running speed, where the source says
    source: str = ""  # file it came from, for the report


@dataclass(frozen=True, slots=True)
class PortState:
    """A local port's link state and speed (ethtool-like facts beside the LLDP data)."""

    up: bool | None
    speed_gbps: int | None
    virtual: bool = False  # veth, dummy, ...: its speed is made up, so the cable's speed is not checked


@dataclass
class Discovery:
    """Everything read from one --from folder."""

    neighbors: list[Neighbor]
    reporters: set[str]  # devices that sent a report (even an empty one)
    ports: dict[Endpoint, PortState]


@dataclass(frozen=True)
class Plan:
    links: tuple[PlannedLink, ...]
    racks: dict[str, str]  # device -> rack
    roles: dict[str, str]  # device -> role
    models: dict[str, str]  # device -> catalog model


def _rows(path: Path, needed: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise SpecError(str(path), "no such file: run `superpod plan` for this stack first (or give --plan-dir)")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise SpecError(str(path), f"missing column(s) {', '.join(missing)}")
        return list(reader)


def cable_ids(plan_dir: Path) -> dict[tuple[Endpoint, Endpoint], str]:
    """(a end, b end) -> the cable ID on its label; empty for a plan written before labels.csv."""
    path = plan_dir / "labels.csv"
    if not path.is_file():
        return {}
    ids = {}
    for r in _rows(path, ("cable_id", "a_device", "a_port", "b_device", "b_port")):
        ids.setdefault(((r["a_device"], r["a_port"]), (r["b_device"], r["b_port"])), r["cable_id"])
    return ids


def load_plan(plan_dir: Path) -> Plan:
    """The plan as `superpod plan` wrote it: day-two operations read the plan, never rebuild it."""
    ids = cable_ids(plan_dir)
    links = []
    for n, r in enumerate(_rows(plan_dir / "cabling.csv", ("a_device", "a_port", "b_device", "b_port",
                                                          "fabric", "kind", "speed_gbps")), start=2):
        try:
            speed = int(r["speed_gbps"])
        except ValueError:
            raise SpecError(f"cabling.csv line {n}: speed_gbps", f"not a number: {r['speed_gbps']!r}") from None
        a, b = (r["a_device"], r["a_port"]), (r["b_device"], r["b_port"])
        # border: the far end is the site's router, whose LLDP names are the site's, not the plan's
        links.append(PlannedLink(a, b, r["fabric"], r["kind"], speed, r.get("media", ""), ids.get((a, b), ""),
                                 site_end=r["kind"] == "border"))
    racks, roles, models = {}, {}, {}
    for r in _rows(plan_dir / "devices.csv", ("name", "role", "model", "rack")):
        racks[r["name"]] = r["rack"]
        roles[r["name"]] = r["role"]
        models[r["name"]] = r["model"]
    return Plan(tuple(links), racks, roles, models)
