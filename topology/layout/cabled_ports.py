"""Which ports of a few switches the links so far take: what a stage that adds links to them
(border uplinks, service bonds, OOB uplinks) must leave free."""

from __future__ import annotations

from topology.layout.model import Link


def ports_used(links: list[Link], devices: set[str]) -> dict[str, set[str]]:
    """The cabled ports of `devices` (a few switches: not a set per device of the pod)."""
    used: dict[str, set[str]] = {d: set() for d in devices}
    for lk in links:
        if lk.a_device in used:
            used[lk.a_device].add(lk.a_port)
        if lk.b_device in used:
            used[lk.b_device].add(lk.b_port)
    return used
