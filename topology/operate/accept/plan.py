"""What accept reads from the plan: the GPU nodes of the stack's inventory (SU, rack, model,
GPU count, rails with leaf and port) and each node cable's label ID from labels.csv. Read, never
rebuilt (the inventory and labels.csv come from `superpod plan`)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from topology.errors import SpecError


@dataclass(frozen=True)
class Rail:
    rail: int
    gpu: int
    hca: str
    netdev: str
    leaf: str
    leaf_port: str


@dataclass(frozen=True)
class NodePlan:
    name: str
    su: int
    rack: str
    model: str
    gpu_count: int
    rails: tuple[Rail, ...]

    def rail(self, number: int) -> Rail | None:
        return next((r for r in self.rails if r.rail == number), None)


@dataclass(frozen=True)
class AcceptPlan:
    nodes: dict[str, NodePlan]
    cables: dict[tuple[str, str], str]  # (device, port) -> cable label ID

    def cable(self, node: str, netdev: str) -> str:
        return self.cables.get((node, netdev), "")

    def sus(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for n in self.nodes.values():
            out.setdefault(n.su, []).append(n.name)
        return {su: sorted(names) for su, names in sorted(out.items())}

    def rail_pairs(self) -> list[tuple[int, int, str, str, int]]:
        """(su, rail, server, client, round): the SU's nodes paired in name order under each rail
        leaf, all in round 0; an odd node out is paired with the SU's first node in round 1, after
        round 0 (sharing a NIC with another pair at once would halve both), so every node's every
        rail is measured on its own."""
        pairs = []
        for su, names in self.sus().items():
            if len(names) < 2:
                continue
            couples = [(a, b, 0) for a, b in zip(names[0::2], names[1::2], strict=False)]  # odd: the last waits
            if len(names) % 2:
                couples.append((names[0], names[-1], 1))
            rails = sorted({r.rail for n in names for r in self.nodes[n].rails})
            pairs += [(su, rail, a, b, rnd) for rail in rails for a, b, rnd in couples
                      if self.nodes[a].rail(rail) and self.nodes[b].rail(rail)]
        return pairs


def node_plan(name: str, hv: dict) -> NodePlan:
    try:
        return NodePlan(
            name=name, su=int(hv["superpod_su"]), rack=hv.get("superpod_rack", "rack ?"),
            model=hv["superpod_node_model"], gpu_count=int(hv["superpod_gpu_count"]),
            rails=tuple(Rail(int(r["rail"]), int(r["gpu"]), r["hca"], r["netdev"], r["leaf"], r["leaf_port"])
                        for r in hv.get("rails") or ()),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise SpecError("--stack", f"host {name} lacks the plan's variable {e} (superpod_su, "
                                   "superpod_node_model, superpod_gpu_count, rails): regenerate the inventory "
                                   "with `superpod plan`") from None


def load_cables(labels_csv: Path | None) -> dict[tuple[str, str], str]:
    cables: dict[tuple[str, str], str] = {}
    if labels_csv is not None and labels_csv.is_file():
        with labels_csv.open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                cid = row["cable_id"].partition(".")[0]  # a twin-fibre link's labels share the ID
                cables.setdefault((row["a_device"], row["a_port"]), cid)
                cables.setdefault((row["b_device"], row["b_port"]), cid)
    return cables


def load_plan(host_vars: dict[str, dict], labels_csv: Path | None) -> AcceptPlan:
    """`host_vars`: each GPU node's variables as the inventory (and its overlays) give them."""
    return AcceptPlan({name: node_plan(name, hv) for name, hv in host_vars.items()}, load_cables(labels_csv))
