"""Component resources that mirror the layout: Pod -> ScalableUnit (one per SU), Tier (spine,
core, storage, in-band, OOB) and Racks (one record per row). Each holds a LayoutRecord with its
slice of devices and cables and exports counts a reader wants in `pulumi stack output`."""

from __future__ import annotations

from collections import Counter

import pulumi

from topology.layout.model import Layout
from topology.pulumi.records import LayoutRecord, Slice, slice_layout

SWITCH_ROLES = {"leaf", "spine", "core", "storage_leaf", "storage_spine", "inband_switch", "inband_spine",
                "inband_core",
                "oob_switch", "oob_aggregation"}


def _roles(piece: Slice) -> Counter:
    return Counter(entry.split(" ", 1)[0] for entry in piece.devices.values())


class ScalableUnit(pulumi.ComponentResource):
    def __init__(self, name: str, piece: Slice, gpus_per_node: int, opts: pulumi.ResourceOptions | None = None):
        super().__init__("superpod:index:ScalableUnit", name, None, opts)
        roles = _roles(piece)
        self.record = LayoutRecord(f"{name}-layout", piece, pulumi.ResourceOptions(parent=self))
        self.nodes = roles["gpu_node"]
        self.gpus = self.nodes * gpus_per_node
        self.switches = {r: n for r, n in sorted(roles.items()) if r in SWITCH_ROLES}
        self.cables = len(piece.cables)
        self.racks = sorted({entry.rsplit(" ", 1)[1] for entry in piece.devices.values()} - {"-"})
        self.register_outputs(
            {"nodes": self.nodes, "gpus": self.gpus, "switches": self.switches, "cables": self.cables,
             "racks": self.racks, "digest": self.record.digest}
        )


class Tier(pulumi.ComponentResource):
    def __init__(self, name: str, piece: Slice, opts: pulumi.ResourceOptions | None = None):
        super().__init__("superpod:index:Tier", name, None, opts)
        self.record = LayoutRecord(f"tier-{name}-layout", piece, pulumi.ResourceOptions(parent=self))
        self.devices = dict(sorted(_roles(piece).items()))
        self.cables = len(piece.cables)
        self.register_outputs({"devices": self.devices, "cables": self.cables, "digest": self.record.digest})


class Racks(pulumi.ComponentResource):
    def __init__(self, name: str, rows: dict[str, Slice], layout: Layout, opts: pulumi.ResourceOptions | None = None):
        super().__init__("superpod:index:Racks", name, None, opts)
        self.rows = {row: LayoutRecord(f"row-{row}-layout", piece, pulumi.ResourceOptions(parent=self))
                     for row, piece in rows.items()}
        self.count = len(layout.racks)
        self.planned_kw = round(sum(r.planned_kw for r in layout.racks), 1)
        self.register_outputs({"racks": self.count, "rows": len(rows), "planned_kw": self.planned_kw})


class Pod(pulumi.ComponentResource):
    """The pod: its SUs, pod-wide tiers and racks, as slices of one layout."""

    def __init__(self, name: str, layout: Layout, gpus_per_node: int, opts: pulumi.ResourceOptions | None = None):
        super().__init__("superpod:index:Pod", name, None, opts)
        slices = slice_layout(layout)
        child = pulumi.ResourceOptions(parent=self)
        self.scalable_units = {su: ScalableUnit(f"su{su:02d}", piece, gpus_per_node, child)
                               for su, piece in slices.sus.items()}
        self.tiers = {t: Tier(t, piece, child) for t, piece in slices.tiers.items()}
        self.racks = Racks("racks", slices.rows, layout, child)
        self.register_outputs({
            "gpus": layout.facts["gpus"],
            "nodes": layout.facts["nodes"],
            "scalable_units": len(self.scalable_units),
            "tiers": sorted(self.tiers),
        })
