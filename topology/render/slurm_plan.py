"""Slurm from the layout: which nodes, with what hardware, features and GPUs, under which switches.

One typed structure (`SlurmPlan`) goes both into the inventory (`superpod_slurm`, which the
slurm roles template from) and into `topology/render/slurm_files.py` (build/<stack>/slurm/).

The switch tree comes from the compute links, not from names: nodes that reach the same set of
leaves form the lowest switch. In a rail-optimized SU every node reaches every rail leaf of its
SU, so that set is the SU's rail leaves and an SU is the lowest group (a job inside it crosses one
switch per rail). Above it: the spine block the SU's leaves reach (three tiers), then the top of
the fabric (the spines of a two-tier pod, the cores of a three-tier one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from topology import catalog
from topology.layout.model import Layout

# RealMemory is what slurmd may hand to jobs: below the DIMMs' total, since firmware and the
# kernel keep some (slurmd drains a node whose RealMemory exceeds what it finds: "Low RealMemory").
USABLE_MEMORY_SHARE = 0.95
CONTROLLERS_MAX = 2  # a primary and one backup (slurmctld's StateSaveLocation must be shared)


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlurmController(_Plan):
    name: str
    address: str  # in-band


class SlurmNodeGroup(_Plan):
    """One NodeName line: the nodes of one rack (in one SU), which share every feature."""

    names: str  # hostlist expression, e.g. su01-node[01-04]
    hosts: list[str]
    addresses: list[str]  # in-band, in the order of hosts
    features: list[str]


class SlurmGres(_Plan):
    """One GPU of a node: its device file and the cores of its NUMA node."""

    index: int
    file: str
    cores: str


class SlurmSwitch(_Plan):
    name: str
    nodes: str = ""  # lowest level: hostlist of its nodes
    switches: str = ""  # above: hostlist of the switches below it
    leaves: list[str] = []  # lowest level: the fabric's leaves it stands for (for the reader)


class SlurmPlan(_Plan):
    cluster_name: str
    controllers: list[SlurmController]
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mb: int
    gpu_type: str
    gpu_count: int
    node_groups: list[SlurmNodeGroup]
    gres: list[SlurmGres]
    switches: list[SlurmSwitch]  # lowest level first, the top last
    partition: str
    all_nodes: str  # hostlist of every GPU node


def hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed form: su01-node01, su01-node02, su01-node04 -> su01-node[01-02,04].
    Names share a prefix and a zero-padded number; others are listed as they are."""
    by_prefix: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None:
            plain.append(name)
            continue
        by_prefix.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
    parts = list(plain)
    for (prefix, width), numbers in by_prefix.items():
        numbers = sorted(set(numbers))
        runs: list[str] = []
        start = prev = numbers[0]
        for n in numbers[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}{runs[0]}" if len(numbers) == 1 else f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)


def gpu_type(gpu_model: str) -> str:
    """The GPU's short name for `--gres=gpu:<type>:N` (catalog key h100-sxm5-80gb -> h100)."""
    return gpu_model.split("-")[0]


def _su(n: int) -> str:
    return f"su{n:02d}"


def _inband(layout: Layout) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in layout.addresses:
        if a.pool == "inband":
            out.setdefault(a.device, a.address.split("/")[0])
    return out


def _switches(layout: Layout) -> tuple[list[SlurmSwitch], dict[int, str]]:
    """The switch tree, lowest level first, and the spine block of each SU (three tiers)."""
    by_name = layout.by_name
    leaves_of: dict[str, set[str]] = {}
    spines_of: dict[str, set[str]] = {}
    for lk in layout.links:
        if lk.fabric != "compute":
            continue
        if lk.tier == "node-leaf":
            leaves_of.setdefault(lk.a_device, set()).add(lk.b_device)
        elif lk.tier == "leaf-spine":
            spines_of.setdefault(lk.a_device, set()).add(lk.b_device)
    groups: dict[frozenset[str], list[str]] = {}
    for node in layout.role("gpu_node"):
        groups.setdefault(frozenset(leaves_of.get(node.name, ())), []).append(node.name)
    lowest: list[tuple[SlurmSwitch, set[int]]] = []
    for leaves, nodes in groups.items():
        sus = {by_name[leaf].su for leaf in leaves}
        if len(sus) != 1 or not leaves:
            raise ValueError(f"slurm topology: nodes {hostlist(nodes)} reach leaves of SUs {sorted(sus)}: "
                             "the lowest switch group must be one SU's rail leaves")
        (su,) = sus
        spine_blocks = {by_name[s].block for leaf in leaves for s in spines_of.get(leaf, ())}
        lowest.append((SlurmSwitch(name=_su(su), nodes=hostlist(nodes), leaves=sorted(leaves)), spine_blocks))
    lowest.sort(key=lambda item: item[0].name)
    names = [s.name for s, _ in lowest]
    if len(names) != len(set(names)):
        raise ValueError("slurm topology: an SU's nodes reach different leaf sets; the SU is not rail-optimized")
    switches = [s for s, _ in lowest]
    blocks: dict[int, list[str]] = {}
    block_of_su: dict[int, str] = {}
    for s, spine_blocks in lowest:
        if None in spine_blocks or not spine_blocks:  # two tiers: every leaf reaches every spine
            continue
        if len(spine_blocks) != 1:
            raise ValueError(f"slurm topology: {s.name}'s leaves reach spine blocks {sorted(spine_blocks)}")
        block = next(iter(spine_blocks))
        blocks.setdefault(block, []).append(s.name)
        block_of_su[int(s.name[2:])] = f"block{block:02d}"
    if blocks:
        block_switches = [SlurmSwitch(name=f"block{b:02d}", switches=hostlist(sus))
                          for b, sus in sorted(blocks.items())]
        switches += block_switches
        if len(block_switches) > 1:
            switches.append(SlurmSwitch(name="cores", switches=hostlist(b.name for b in block_switches)))
    elif len(lowest) > 1:
        switches.append(SlurmSwitch(name="spines", switches=hostlist(names)))
    return switches, block_of_su


def slurm_plan(layout: Layout) -> SlurmPlan:
    spec = layout.spec
    node_model = catalog.load().nodes[spec.node_model]
    host = node_model.host
    inband = _inband(layout)
    nodes = layout.role("gpu_node")
    switches, blocks = _switches(layout)
    racks: dict[tuple[int, str], list[str]] = {}
    for d in nodes:
        racks.setdefault((d.su, d.rack), []).append(d.name)
    groups = []
    for (su, rack), hosts in sorted(racks.items(), key=lambda item: (item[0][0], item[1][0])):
        features = [_su(su), rack, spec.compute_fabric.kind] + ([blocks[su]] if su in blocks else [])
        groups.append(SlurmNodeGroup(names=hostlist(hosts), hosts=hosts, addresses=[inband.get(h, "") for h in hosts],
                                     features=features))
    controllers = [SlurmController(name=d.name, address=inband.get(d.name, ""))
                   for d in layout.role("mgmt_node")[:CONTROLLERS_MAX]]
    gres = [SlurmGres(index=i, file=f"/dev/nvidia{i}", cores=host.numa_cores(numa))
            for i, numa in enumerate(host.gpu_numa)]
    return SlurmPlan(
        cluster_name=re.sub(r"[^a-z0-9_]", "_", spec.name.lower()),
        controllers=controllers,
        sockets=host.sockets,
        cores_per_socket=host.cores_per_socket,
        threads_per_core=host.threads_per_core,
        real_memory_mb=int(host.memory_gb * 1024 * USABLE_MEMORY_SHARE),
        gpu_type=gpu_type(node_model.gpu),
        gpu_count=node_model.gpu_count,
        node_groups=groups,
        gres=gres,
        switches=switches,
        partition="gpu",
        all_nodes=hostlist(d.name for d in nodes),
    )
