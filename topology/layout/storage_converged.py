"""Storage over the in-band bond (`storage_fabric.node_ports: inband_bond`): NVIDIA's Ethernet
variant for DGX nodes. The DGX BasePOD deployment guide ("Networking", DGX H100/H200 ports) bonds
port 2 of the two dual-port ConnectX-7 cards (slot 1 and slot 2) "for in-band management and
storage ethernet networks", and cables port 1 only for InfiniBand storage.

So nodes cable no storage ports: their storage traffic leaves bond0 (its in-band address and
gateway) for the SU's in-band pair, which routes it over cabled, addressed /31s to the SU's
storage leaf, and on through the storage spines to the storage servers' leaves. Each in-band
switch of an SU has the same links to the SU's storage leaves (switch k to leaf k mod leaves),
sized at the storage fabric's oversubscription for the nodes it serves. Ports are positional: on
the in-band switch the cages right after its end-state host cages, on the storage leaf the
start of the node-port region the bond leaves free (a broken-out cage's legs to different
switches); growing the pod moves none of them.
"""

from __future__ import annotations

from math import ceil

from topology.catalog import Catalog
from topology.catalog.ports import cage_of, trunk_speed
from topology.errors import SpecError
from topology.layout.inband import size_inband
from topology.layout.model import Device, Link
from topology.spec import PodSpec, ratio

TIER = "inband-storage_leaf"


def converged(spec: PodSpec) -> bool:
    return spec.storage_fabric.enabled and spec.storage_fabric.node_ports == "inband_bond"


def links_per_switch(spec: PodSpec, cat: Catalog) -> tuple[int, int]:
    """(links from each SU in-band switch to the storage leaves, their speed): the nodes' bond
    bandwidth on that switch at the storage fabric's oversubscription, unsplit at the slower
    model's native speed."""
    sz = size_inband(spec, cat)
    inband_sw = cat.switches[spec.management.inband.switch_model]
    speed = trunk_speed(inband_sw, cat.switches[spec.storage_fabric.switch_model])
    down, up = ratio(spec.storage_fabric.oversubscription)
    return _links(sz.nodes_per_pair * sz.speed, down, up, speed), speed


def _links(host_gbps: int, down: int, up: int, speed: int) -> int:
    return max(1, ceil(host_gbps * up / (down * speed)))


def storage_junction(spec: PodSpec, cat: Catalog, devices: list[Device], links: list[Link]) -> list[Link]:
    if not converged(spec):
        return []
    ib = spec.management.inband
    sz = size_inband(spec, cat)
    inband_sw = cat.switches[ib.switch_model]
    leaf_sw = cat.switches[spec.storage_fabric.switch_model]
    per_switch, speed = links_per_switch(spec, cat)
    switches_per_su = sz.pairs_per_su * sz.sides
    # on the in-band switch: the cages after its hosts', below its peer links and uplinks
    first = ceil(sz.nodes_per_pair / inband_sw.lanes[sz.speed]) * inband_sw.lanes[speed]
    last_cage = (first + per_switch - 1) // inband_sw.lanes[speed]
    below = min(sz.first_up // inband_sw.lanes[sz.up_speed],
                sz.first_peer // inband_sw.lanes[inband_sw.native_gbps] if sz.peer_links else inband_sw.cages)
    if last_cage >= below:
        free = below * inband_sw.lanes[speed] - first  # ports between the hosts and the peer links / uplinks
        host_gbps = sz.nodes_per_pair * sz.speed
        works = next((f'"{r}:1"' for r in (2, 4, 8, 16, 32) if _links(host_gbps, r, 1, speed) <= free), None)
        fix = f"storage_fabric.oversubscription {works}" if works else "a larger management.inband.switch_model"
        raise SpecError(
            "storage_fabric.node_ports",
            f"storage fabric: inband_bond needs {per_switch} x {speed}G storage links on each {ib.switch_model} "
            f"in-band switch beside its {sz.nodes_per_pair} nodes, peer links and uplinks; use {fix} "
            "or node_ports: dedicated",
        )
    leaves: dict[int, list[str]] = {}
    for d in devices:
        if d.role == "storage_leaf" and d.su is not None:
            leaves.setdefault(d.su, []).append(d.name)
    uplink_cages: dict[str, int] = {}
    storage_sw = cat.switches[spec.storage_fabric.switch_model]
    for lk in links:
        if lk.tier == "storage_leaf-storage_spine" and lk.a_device.startswith("su"):
            cage = cage_of(storage_sw, lk.a_port)
            uplink_cages[lk.a_device] = min(cage, uplink_cages.get(lk.a_device, cage))
    out: list[Link] = []
    for d in sorted((d for d in devices if d.role == "inband_switch" and d.su is not None), key=lambda d: d.slot):
        k = d.slot - (d.su - 1) * switches_per_su  # the switch's place in its SU
        su_leaves = sorted(leaves[d.su])
        leaf = su_leaves[k % len(su_leaves)]
        q, legs = k // len(su_leaves), leaf_sw.lanes[speed]  # the switch's place on its leaf; legs a cage
        for j in range(per_switch):
            # a broken-out leaf cage gives each of its legs to a different in-band switch
            leaf_port = ((q // legs) * per_switch + j) * legs + q % legs
            if leaf_port // leaf_sw.lanes[speed] >= uplink_cages.get(leaf, leaf_sw.cages):
                raise SpecError(
                    "storage_fabric.node_ports",
                    f"inband_bond: {leaf} cannot take {per_switch} x {speed}G links from each of its in-band "
                    "switches below its storage uplinks; use node_ports: dedicated",
                )
            out.append(Link(d.name, inband_sw.port(first + j, speed), leaf, leaf_sw.port(leaf_port, speed),
                            "storage", TIER, speed, slot=d.slot * per_switch + j))
    return out
