"""The technician's work list: one line per cable to touch, grouped by the rack where the
hands go ('rack-b07, su01-leaf-rail3 swp5: move to swp6')."""

from __future__ import annotations

import re
from dataclasses import dataclass

from topology.operate.cabling_check import Cable, Finding, Result
from topology.operate.neighbors import Endpoint, Plan, PlannedLink


@dataclass(frozen=True, slots=True)
class Task:
    rack: str
    device: str
    port: str
    action: str
    cable_id: str = ""  # the label on the planned cable this task is about, where there is one

    def line(self) -> str:
        where = f"{self.device} {self.port}".rstrip()
        label = f" [cable {self.cable_id}]" if self.cable_id else ""
        return f"{self.rack}, {where}: {self.action}{label}"


def _other(c: Cable, end: Endpoint) -> Endpoint:
    return c[1] if c[0] == end else c[0]


def _name(e: Endpoint) -> str:
    return f"{e[0]} {e[1]}"


def _move(at: Endpoint, to: Endpoint) -> str:
    """Move the cable end plugged at `at` to `to` (same device: just the port)."""
    return f"move to {to[1]}" if at[0] == to[0] else f"move to {_name(to)}"


def work_list(result: Result, plan: Plan) -> list[Task]:
    tasks: list[Task] = []
    done: set[Cable] = set()

    def add(end: Endpoint, action: str, *links: PlannedLink) -> None:
        ids = ", ".join(lk.cable_id for lk in links if lk.cable_id)
        tasks.append(Task(plan.racks.get(end[0], "rack ?"), end[0], end[1], action, ids))

    for f in result.findings:
        if f.kind == "swap":
            _swap(f, add)
            done.update(f.found)
    for f in result.findings:
        if f.kind == "miswired":
            lk = f.planned
            for c in f.found:
                if c in done:
                    continue
                done.add(c)
                if lk.a in c:
                    add(_other(c, lk.a), _move(_other(c, lk.a), lk.b) + f" (its other end is {_name(lk.a)})", lk)
                elif lk.b in c:
                    add(_other(c, lk.b), _move(_other(c, lk.b), lk.a) + f" (its other end is {_name(lk.b)})", lk)
        elif f.kind == "missing":
            if f.planned.b[0] in result.not_heard or f.planned.a[0] in result.not_heard:
                continue  # the silent device's own line covers it
            add(f.planned.a, f"connect to {_name(f.planned.b)}: no link seen ({f.detail})", f.planned)
        elif f.kind == "wrong_speed":
            lk = f.planned
            add(lk.a, f"link to {_name(lk.b)} runs at {f.speed_gbps}G, planned {lk.speed_gbps}G: "
                      f"check the optic or cable (planned {lk.media or 'media'}) and the port's speed setting", lk)
        elif f.kind == "unplanned":
            (a, b), = f.found
            if a[0] not in plan.racks and b[0] in plan.racks:
                a, b = b, a
            add(a, f"remove the cable to {_name(b)} (not in the plan)")
    for device in result.not_heard:
        add((device, ""), "not heard from: check power, its management access and that lldpd runs")
    return sorted(tasks, key=lambda t: (t.rack, t.device, _port_key(t.port)))


def _swap(f: Finding, add) -> None:
    l1, l2 = f.planned, f.other
    # orient both so that x1, x2 are the ends that share a device when any do
    for (x1, y1), (x2, y2) in (((l1.a, l1.b), (l2.a, l2.b)), ((l1.b, l1.a), (l2.b, l2.a)),
                               ((l1.a, l1.b), (l2.b, l2.a)), ((l1.b, l1.a), (l2.a, l2.b))):
        if x1[0] == x2[0]:
            add(x1, f"swap with {x2[1]} (swapped pair: {x1[1]} goes to {_name(y1)}, {x2[1]} to {_name(y2)})", l1, l2)
            return
    x1, y1, x2, y2 = l1.a, l1.b, l2.a, l2.b
    add(x1, f"swapped with {_name(x2)}: {x1[1]} goes to {_name(y1)}, {_name(x2)} to {_name(y2)}", l1, l2)


def _port_key(port: str) -> tuple:
    """swp2 before swp10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", port))
