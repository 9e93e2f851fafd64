"""The layout as a few data-only resources, so that the Pulumi state is the pod's state.

One resource per scalable unit (its devices and the cables inside it), per pod-wide tier
(spine, core, storage, in-band, OOB: their switches and the cables between SUs) and per rack
row. Each holds maps keyed by device name, cable end and rack name: `pulumi preview --diff`
then lists exactly the devices, cables and racks a spec change adds, removes or alters, while an
8192-GPU pod stays near a hundred resources instead of one per cable. Nothing outside the
state is created; the provider only keeps counts and a digest.

Each map travels as one canonical JSON string (sorted keys, no spaces). Pulumi's Python SDK
serializes a map value by value in Python and reads it back the same way: 334k values at 100k
GPUs, about 2.5 s of the program's CPU, where a string is one value. The CLI decodes JSON strings
in a diff (`~ devices: (json) { + "su02-node01": ... }`), so the diff names the same entries.
States written before hold the maps themselves; the provider reads either (`parts_of`) and
digests both to the same value, so such a stack shows no change after the upgrade.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from topology.layout.model import Device, Layout, Link, Rack
from topology.layout.names import row_letters

# pod-wide devices (no SU) by role -> the tier that holds them
TIER_OF_ROLE = {
    "spine": "spine",
    "core": "core",
    "storage_leaf": "storage",
    "storage_spine": "storage",
    "storage_server": "storage",
    "inband_switch": "inband",
    "inband_core": "inband",
    "inband_spine": "inband",
    "mgmt_node": "inband",
    "oob_switch": "oob",
    "oob_aggregation": "oob",
    "pdu": "oob",
    "cdu": "oob",
    "ufm": "spine",
}
# compute cables between SUs go with their upper tier; other fabrics are their own tier
TIER_OF_COMPUTE_LINK = {"leaf-spine": "spine", "spine-core": "core"}


@dataclass
class Slice:
    devices: dict[str, str] = field(default_factory=dict)
    cables: dict[str, str] = field(default_factory=dict)
    racks: dict[str, str] = field(default_factory=dict)


@dataclass
class Slices:
    sus: dict[int, Slice]
    tiers: dict[str, Slice]
    rows: dict[str, Slice]


def device_entry(d: Device) -> str:
    return f"{d.role} {d.model} {d.rack or '-'}"


def cable_key(lk: Link) -> str:
    return f"{lk.a_device}:{lk.a_port}"  # a port carries one cable (build checks it)


def cable_entry(lk: Link) -> str:
    return f"{lk.b_device}:{lk.b_port} {lk.tier} {lk.speed_gbps}G {lk.media or '-'}"


def rack_entry(r: Rack) -> str:
    su = f"su{r.su:02d}" if r.su else "pod"
    return f"{r.kind} {su} {r.planned_kw:g}/{r.budget_kw:g} kW {r.cooling}"


def slice_layout(layout: Layout) -> Slices:
    sus: dict[int, Slice] = defaultdict(Slice)
    tiers: dict[str, Slice] = defaultdict(Slice)
    rows: dict[str, Slice] = defaultdict(Slice)
    su_of = {}
    for d in layout.devices:
        su_of[d.name] = d.su
        target = sus[d.su] if d.su is not None else tiers[TIER_OF_ROLE.get(d.role, d.role)]
        target.devices[d.name] = device_entry(d)
    for lk in layout.links:
        su = su_of[lk.a_device]
        if su is not None and su == su_of[lk.b_device]:
            target = sus[su]
        elif lk.fabric == "compute":
            target = tiers[TIER_OF_COMPUTE_LINK.get(lk.tier, lk.tier)]
        else:
            target = tiers[lk.fabric]
        target.cables[cable_key(lk)] = cable_entry(lk)
    for r in layout.racks:
        rows[row_letters(r.row)].racks[r.name] = rack_entry(r)
    return Slices(dict(sorted(sus.items())), dict(tiers), dict(sorted(rows.items())))


PARTS = ("devices", "cables", "racks")


def encoded(part: dict[str, str]) -> str:
    """One of a slice's maps as the record's input: canonical JSON, the same for the same map."""
    return json.dumps(part, sort_keys=True, separators=(",", ":"))


def parts_of(props: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A record's devices, cables and racks as maps, from its inputs (JSON strings) or from a
    state written before they were encoded (the maps themselves)."""
    parts = {}
    for k in PARTS:
        value = props.get(k) or {}
        parts[k] = json.loads(value) if isinstance(value, str) else value
    return parts


def digest(props: dict[str, Any]) -> str:
    parts = parts_of(props)
    body = json.dumps([parts[k] for k in PARTS], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


class RecordProvider(ResourceProvider):
    """Keeps a slice of the layout in state; touches nothing outside it."""

    def _outs(self, props: dict[str, Any]) -> dict[str, Any]:
        parts = parts_of(props)
        return {
            "digest": digest(parts),
            "device_count": len(parts["devices"]),
            "cable_count": len(parts["cables"]),
            "rack_count": len(parts["racks"]),
        }

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["slice"], self._outs(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get("digest") != digest(news))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._outs(news))


class LayoutRecord(Resource, module="superpod", name="LayoutRecord"):
    """Devices, cables and racks of one slice. Outputs: digest and counts."""

    digest: pulumi.Output[str]
    device_count: pulumi.Output[int]
    cable_count: pulumi.Output[int]
    rack_count: pulumi.Output[int]

    def __init__(self, name: str, piece: Slice, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "slice": name,
            "devices": encoded(piece.devices),
            "cables": encoded(piece.cables),
            "racks": encoded(piece.racks),
            "digest": None,
            "device_count": None,
            "cable_count": None,
            "rack_count": None,
        }
        super().__init__(RecordProvider(), name, props, opts)
