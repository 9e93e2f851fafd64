"""What changes between two layouts: devices and cables added, removed or changed."""

from __future__ import annotations

import dataclasses

from topology.layout.model import Layout
from topology.render.change_list import Changes
from topology.render.slurm_changes import scheduler_changes
from topology.render.switches.changes import switch_config_changes


def _compare(old: dict, new: dict, describe) -> Changes:
    c = Changes()
    c.added = [describe(k, new[k]) for k in new.keys() - old.keys()]
    c.removed = [describe(k, old[k]) for k in old.keys() - new.keys()]
    for k in old.keys() & new.keys():
        if old[k] != new[k]:
            a, b = dataclasses.asdict(old[k]), dataclasses.asdict(new[k])
            fields = ", ".join(f"{f}: {a[f]} -> {b[f]}" for f in a if a[f] != b[f])
            c.changed.append(f"{describe(k, new[k])} ({fields})")
    for lst in (c.added, c.removed, c.changed):
        lst.sort()
    return c


def _address_key(a) -> tuple:
    """An address is known by its interface; a rail leaf's pod gateways share the rail SVI with the
    subnet's gateway (ipam.rail_pod_prefixes), so each is known by its prefix too."""
    return (a.device, a.interface, a.network) if a.pool == "rail_pods" else (a.device, a.interface)


def diff_layouts(old: Layout, new: Layout) -> dict[str, Changes]:
    cable = lambda lk: (lk.a_device, lk.a_port)  # noqa: E731  a cable is known by its A end
    return {
        "devices": _compare(
            {d.name: d for d in old.devices}, {d.name: d for d in new.devices}, lambda k, d: f"{d.name} ({d.role})"
        ),
        "cables": _compare(
            {cable(lk): lk for lk in old.links},
            {cable(lk): lk for lk in new.links},
            lambda k, lk: f"{lk.a_device}:{lk.a_port} <-> {lk.b_device}:{lk.b_port}",
        ),
        "addresses": _compare(
            {_address_key(a): a for a in old.addresses},
            {_address_key(a): a for a in new.addresses},
            lambda k, a: f"{a.device} {a.interface} {a.address}",
        ),
        "switch configs": switch_config_changes(old, new),
        "scheduler (slurm)": scheduler_changes(old, new),
    }
