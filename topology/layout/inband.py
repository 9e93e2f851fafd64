"""In-band management fabric: spec in, devices and links out. Pure functions.

Each SU has one switch per node in-band port (bond members on different switches); the two
switches of a pair carry the nodes' bonds (MLAG peer links or EVPN-MH). When one pair cannot
hold an SU's nodes beside its uplinks and peer links, the SU gets as many pairs as it needs
(`su01-inband-a/b`, `-c/d`, ...), nodes split evenly over them in order.

Two tiers while the in-band cores can reach every switch: switches uplink to the cores, where
the mgmt nodes attach. Beyond that (NVIDIA's DGX SuperPOD reference architectures add a core
tier to the compute fabric past 8-16 SUs the same way: blocks of leaves, each block's spines,
spine i of every block into core group i; B200 RA "Compute fabric component count"), the in-band
fabric gets three tiers: switches in blocks under in-band spines (one per switch uplink),
spine j of every block into in-band core group j, and the mgmt nodes move to a services pair
(`inband-svc-a/b`), a switch pair of its own that takes the first two places of block 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, gcd

from topology.catalog import Catalog, NodeModel, SwitchModel
from topology.catalog.ports import (
    cages_fit_peers,
    smallest_divisor_at_least,
    switch_speed,
    trunk_speed,
    two_tier_spines,
)
from topology.errors import SpecError
from topology.layout.model import Device, Link, Tier
from topology.layout.names import Names
from topology.spec import PodSpec

SIDES = 2  # a pair: the bond's two members land on different switches


@dataclass(frozen=True)
class InbandSizing:
    sides: int  # switches per pair (1 for a node model with one in-band port)
    pairs_per_su: int
    nodes_per_pair: int
    speed: int  # host ports
    up_speed: int  # uplinks, spine and core ports
    peer_links: int
    first_up: int  # port index (at up_speed) of a switch's first uplink
    first_peer: int  # port index (at the switch's native speed) of its first peer link
    tiers: int  # 2: switches -> cores; 3: switches -> spines -> cores
    cores: int  # end state, all groups
    switches_max: int  # end state: SU switches (and the services pair in three tiers)
    block_switches: int = 0  # three tiers: switches per block
    blocks_max: int = 0
    spine_down: int = 0
    spine_up: int = 0
    cores_per_group: int = 0
    spine_links_per_core: int = 0
    spines_per_block: int = 0  # three tiers: one spine per switch uplink

    @property
    def spines_max(self) -> int:
        return self.spines_per_block * self.blocks_max


@dataclass(frozen=True)
class _Models:
    """The catalog entries the in-band fabric is built from (one lookup for every step)."""
    node: NodeModel
    sw: SwitchModel
    core_key: str
    core_sw: SwitchModel

    @classmethod
    def of(cls, spec: PodSpec, cat: Catalog) -> _Models:
        ib = spec.management.inband
        core_key = ib.core_switch_model or ib.switch_model
        return cls(cat.nodes[spec.node_model], cat.switches[ib.switch_model], core_key, cat.switches[core_key])


def pairs_for(spec: PodSpec, cat: Catalog) -> tuple[int, int]:
    """(pairs per SU, nodes per pair): the fewest pairs whose switches hold their share of the
    SU's nodes beside the uplinks and peer links (one pair for the seed's 32 nodes)."""
    ib = spec.management.inband
    m = _Models.of(spec, cat)
    node, sw, core_sw = m.node, m.sw, m.core_sw
    speed = node.inband_nic_speed_gbps
    switch_speed(sw, speed, "management.inband.switch_model", ib.switch_model)
    up_speed = trunk_speed(sw, core_sw)
    peers = ib.peer_links if ib.pairing == "mlag" and len(node.inband_nics) == SIDES else 0
    up = ib.uplinks_per_switch
    if not cages_fit_peers(sw, speed, up_speed, sw.native_gbps, 1, up, peers):
        most = max((u for u in range(1, min(up, sw.radix(up_speed)))
                    if cages_fit_peers(sw, speed, up_speed, sw.native_gbps, 1, u, peers)), default=0)
        raise SpecError(
            "management.inband.uplinks_per_switch",
            f"in-band fabric: {up} x {up_speed}G uplinks + {peers} peer links leave no host port on "
            f"{ib.switch_model} ({sw.cages} cages); use at most {most}",
        )
    for pairs in range(1, spec.nodes_per_su + 1):
        per_pair = ceil(spec.nodes_per_su / pairs)
        if cages_fit_peers(sw, speed, up_speed, sw.native_gbps, per_pair, up, peers):
            return pairs, per_pair
    raise AssertionError("one node per pair always fits once one host port does")


def size_inband(spec: PodSpec, cat: Catalog) -> InbandSizing:
    ib = spec.management.inband
    m = _Models.of(spec, cat)
    node, sw, core_key, core_sw = m.node, m.sw, m.core_key, m.core_sw
    mgmt = cat.appliances[ib.mgmt_node_model]
    speed = node.inband_nic_speed_gbps
    switch_speed(sw, speed, "management.inband.switch_model", ib.switch_model)
    switch_speed(core_sw, speed, "management.inband.core_switch_model", core_key)
    # Host ports follow the NIC; uplinks and peer links run unsplit (the slower model's speed).
    up_speed = trunk_speed(sw, core_sw)
    switch_speed(core_sw, up_speed, "management.inband.core_switch_model", core_key)
    sides = len(node.inband_nics)
    peer_links = ib.peer_links if ib.pairing == "mlag" and sides == SIDES else 0
    pairs, per_pair = pairs_for(spec, cat)
    up = ib.uplinks_per_switch
    up_cages = ceil(up / sw.lanes[up_speed])
    first_up = sw.radix(up_speed) - up
    first_peer = (sw.cages - up_cages) * sw.lanes[sw.native_gbps] - peer_links
    su_switches = spec.max_su * pairs * sides
    mgmt_ports = ib.mgmt_nodes * mgmt.inband_ports
    # the cores pair up like the SU switches: the mgmt nodes' bonds span them; a peer link takes
    # a whole cage's worth of uplink-speed ports
    peer_units = peer_links * core_sw.lanes[up_speed] // core_sw.lanes[core_sw.native_gbps]
    core_radix = core_sw.radix(up_speed)
    base = dict(sides=sides, pairs_per_su=pairs, nodes_per_pair=per_pair, speed=speed, up_speed=up_speed,
                peer_links=peer_links, first_up=first_up, first_peer=first_peer)
    try:
        cores = _inband_cores([up] * su_switches, core_radix - peer_units, mgmt_ports, ib.min_core_switches)
    except SpecError:
        cores = 0
    if peer_links and cores not in (0, 2):
        # MLAG pairs exactly two cores (the mgmt nodes' bonds span them): a pod that needs more
        # takes the three-tier shape instead, blocks under in-band spines and the mgmt nodes on
        # the services pair, as a pod too large for any two-tier core set already does
        cores = 0
    if cores:
        return InbandSizing(**base, tiers=2, cores=cores, switches_max=su_switches)
    # Three tiers: blocks of switches under one spine per switch uplink; the services pair last.
    spine_down = core_radix // 2 // 2 * 2  # whole pairs per block
    spine_up = core_radix - spine_down
    switches_max = su_switches + SIDES
    blocks_max = ceil(switches_max / spine_down)
    # each core keeps whole cages for its border uplinks (topology/layout/border.py) beside the spines
    spine_ports = core_radix - ib.border_uplinks * core_sw.lanes[up_speed]
    per_group = smallest_divisor_at_least(spine_up, ceil(blocks_max * spine_up / max(spine_ports, 1)))
    if per_group is None:
        most = (core_radix * spine_down - SIDES) // (pairs * sides)
        raise SpecError(
            "management.inband.core_switch_model",
            f"in-band fabric: {spec.max_su} SUs ({switches_max} in-band switches) exceed three tiers of "
            f"{core_key} at {up_speed}G (at most {most} SUs); choose a core_switch_model with more ports",
        )
    if up * per_group < ib.min_core_switches:
        raise SpecError(
            "management.inband.min_core_switches",
            f"asks for at least {ib.min_core_switches} in-band cores; this fabric takes {up * per_group} "
            f"(MLAG pairs two cores in two tiers; three tiers have one core per in-band spine uplink: "
            f"{up} x {per_group}): ask for at most {up * per_group}, or more uplinks_per_switch",
        )

    def svc_fits(m: int) -> bool:
        return cages_fit_peers(sw, speed, up_speed, sw.native_gbps, ceil(m * mgmt.inband_ports / SIDES), up, peer_links)

    if not svc_fits(ib.mgmt_nodes):
        most = max((m for m in range(min(ib.mgmt_nodes, sw.radix(speed) * SIDES)) if svc_fits(m)), default=0)
        raise SpecError(
            "management.inband.mgmt_nodes",
            f"in-band fabric: {ib.mgmt_nodes} mgmt nodes exceed the services pair's host ports (use at most {most})",
        )
    return InbandSizing(
        **base, tiers=3, cores=up * per_group, switches_max=switches_max, block_switches=spine_down,
        blocks_max=blocks_max, spine_down=spine_down, spine_up=spine_up, cores_per_group=per_group,
        spine_links_per_core=spine_up // per_group, spines_per_block=up,
    )


def _inband_cores(uplinks: list[int], radix: int, mgmt_ports: int, min_cores: int) -> int:
    """In-band core count. Mgmt node ports are dealt round-robin over the cores (from the top
    port down), so each core carries ceil(mgmt_ports / cores) of them beside its uplinks; while
    every core can hold all of them, the count is the one of a plain two-tier set (as before)."""
    field = "management.inband.core_switch_model"
    if mgmt_ports < radix:
        try:
            return two_tier_spines(uplinks, radix - mgmt_ports, min_cores, field)
        except SpecError:
            pass
    common = 0
    for u in uplinks:
        common = gcd(common, u)
    total = sum(uplinks)
    for cores in range(max(min_cores, 1), common + 1):
        if common % cores == 0 and total // cores + ceil(mgmt_ports / cores) <= radix:
            return cores
    raise SpecError(
        "management.inband.mgmt_nodes",
        f"in-band fabric: {mgmt_ports} mgmt node ports and {total} switch uplinks do not fit {radix}-port cores "
        f"that divide each switch's {common} uplinks",
    )


def svc_name(side: int) -> str:
    return f"inband-svc-{chr(ord('a') + side)}"


def inband_fabric(
    spec: PodSpec, cat: Catalog, names: Names, ufm_slot: bool
) -> tuple[list[Device], list[Link], list[Tier]]:
    """In-band management: each SU's switch pairs (bond members on different switches), uplinked
    to in-band cores (two tiers) or to in-band spines and cores (three tiers)."""
    sz = size_inband(spec, cat)
    ib = spec.management.inband
    m = _Models.of(spec, cat)
    node, sw, core_key, core_sw = m.node, m.sw, m.core_key, m.core_sw
    mgmt = cat.appliances[ib.mgmt_node_model]
    devices: list[Device] = []
    links: list[Link] = []
    top_name = "inband-core"
    core_names = [Names.numbered(top_name, c, sz.cores) for c in range(sz.cores)]
    spine_names = [Names.numbered("inband-spine", s, sz.spines_max) for s in range(sz.spines_max)]
    devices += [
        Device(c, "inband_core", core_key, power_kw=core_sw.power_kw, rack_units=core_sw.rack_units, slot=i)
        for i, c in enumerate(core_names)
    ]
    port = sw.port
    up = ib.uplinks_per_switch
    lpc = up // sz.cores if sz.tiers == 2 else 0
    core_peer_speed = core_sw.native_gbps

    def core_port(g: int, link: int) -> int:
        # A core cage broken out to slower switches gives its legs to different switches.
        if core_sw.lanes[sz.up_speed] > core_sw.lanes[core_peer_speed]:
            return link * sz.switches_max + g
        return g * lpc + link

    def uplinks(sw_name: str, g: int) -> None:
        """Switch ordinal g (end state) to the cores (two tiers) or its block's spines (three,
        where the services pair comes first)."""
        g += SIDES if sz.tiers == 3 and not sw_name.startswith("inband-svc") else 0
        for j in range(up):
            if sz.tiers == 2:
                c, link = divmod(j, lpc)
                far, far_port, tier = core_names[c], core_sw.port(core_port(g, link), sz.up_speed), "inband-core"
            else:
                b, p = divmod(g, sz.block_switches)
                far, far_port, tier = spine_names[b * up + j], core_sw.port(p, sz.up_speed), "inband-spine"
            # slot: the switch's end-state ordinal x uplinks + j (its /31, ipam.py)
            links.append(Link(sw_name, port(sz.first_up + j, sz.up_speed), far, far_port, "inband", tier,
                              sz.up_speed, slot=g * up + j))

    def pair_peer_links(a: str, b: str, pair: int) -> None:
        for k in range(sz.peer_links):
            p = port(sz.first_peer + k, sw.native_gbps)
            links.append(Link(a, p, b, p, "inband", "inband-peer", sw.native_gbps, slot=pair * sz.peer_links + k))

    for su in range(1, spec.scalable_units + 1):
        slots = spec.nodes_per_su - (1 if ufm_slot and su == 1 else 0)
        for pair in range(sz.pairs_per_su):
            ordinal = (su - 1) * sz.pairs_per_su + pair
            for side in range(sz.sides):
                g = ordinal * sz.sides + side
                sw_name = names.inband(su, pair * sz.sides + side)
                devices.append(Device(sw_name, "inband_switch", ib.switch_model, su=su, power_kw=sw.power_kw,
                                      rack_units=sw.rack_units, slot=g))
                netdev = node.inband_nics[side].netdev("ethernet")  # once per switch, not per node
                for n in range(pair * sz.nodes_per_pair + 1, min(slots, (pair + 1) * sz.nodes_per_pair) + 1):
                    links.append(Link(names.node(su, n), netdev, sw_name, port((n - 1) % sz.nodes_per_pair, sz.speed),
                                      "inband", "node-inband", sz.speed, (su - 1) * spec.nodes_per_su + n - 1))
                uplinks(sw_name, g)
            if sz.peer_links:
                pair_peer_links(names.inband(su, pair * sz.sides), names.inband(su, pair * sz.sides + 1), ordinal)

    svc_ordinal = spec.max_su * sz.pairs_per_su  # three tiers: the services pair's subnet and MACs
    if sz.tiers == 3:
        for b in range(ceil((SIDES + spec.scalable_units * sz.pairs_per_su * sz.sides) / sz.block_switches)):
            _spines(spec, sz, core_sw, core_key, spine_names, core_names, b, devices, links)
        for side in range(SIDES):
            devices.append(Device(svc_name(side), "inband_switch", ib.switch_model, power_kw=sw.power_kw,
                                  rack_units=sw.rack_units, slot=svc_ordinal * SIDES + side))
            uplinks(svc_name(side), side)
        if sz.peer_links:
            pair_peer_links(svc_name(0), svc_name(1), svc_ordinal)

    for m in range(ib.mgmt_nodes):
        name = Names.numbered("mgmt", m, ib.mgmt_nodes)
        devices.append(
            Device(name, "mgmt_node", ib.mgmt_node_model, power_kw=mgmt.power_kw, rack_units=mgmt.rack_units, slot=m)
        )
        for p in range(mgmt.inband_ports):
            k = m * mgmt.inband_ports + p
            if sz.tiers == 2:
                far = core_names[k % sz.cores]
                far_port = core_sw.port(core_sw.radix(sz.speed) - 1 - k // sz.cores, sz.speed)
            else:  # the services pair: port p of every mgmt node on side p, from the first port up
                far, far_port = svc_name(k % SIDES), port(k // SIDES, sz.speed)
            links.append(Link(name, mgmt.port(p + 1), far, far_port, "inband", "mgmt-core", sz.speed))
    if sz.tiers == 2 and sz.peer_links:
        mgmt_ports = ib.mgmt_nodes * mgmt.inband_ports
        top = ceil(ceil(mgmt_ports / sz.cores) / core_sw.lanes[sz.speed])  # cages the mgmt nodes take from the top
        for k in range(sz.peer_links):
            peer_port = core_sw.port((core_sw.cages - top) * core_sw.lanes[core_peer_speed] - 1 - k, core_peer_speed)
            links.append(Link(core_names[0], peer_port, core_names[1], peer_port, "inband", "inband-peer",
                              core_peer_speed, slot=spec.max_su * sz.peer_links + k))
    built = sum(1 for d in devices if d.role == "inband_switch")
    tiers = [Tier("inband", "inband_switch", built, sz.nodes_per_pair, up, ib.switch_model, sz.speed, sz.up_speed)]
    if sz.tiers == 3:
        spines = sum(1 for d in devices if d.role == "inband_spine")
        tiers.append(Tier("inband", "inband_spine", spines, sz.spine_down, sz.spine_up, core_key, sz.up_speed))
    tiers.append(Tier("inband", "inband_core", sz.cores, core_sw.radix(sz.up_speed), 0, core_key, sz.up_speed))
    return devices, links, tiers


def _spines(
    spec: PodSpec, sz: InbandSizing, core_sw: SwitchModel, core_key: str, spine_names: list[str],
    core_names: list[str], b: int, devices: list[Device], links: list[Link],
) -> None:
    """Block b's in-band spines (one per switch uplink); spine j's top ports go to core group j."""
    up = spec.management.inband.uplinks_per_switch
    lpc = sz.spine_links_per_core
    for j in range(up):
        s = b * up + j
        devices.append(Device(spine_names[s], "inband_spine", core_key, block=b + 1, power_kw=core_sw.power_kw,
                              rack_units=core_sw.rack_units, slot=s))
        for k in range(sz.spine_up):
            g2, link = divmod(k, lpc)
            links.append(Link(spine_names[s], core_sw.port(sz.spine_down + k, sz.up_speed),
                              core_names[j * sz.cores_per_group + g2], core_sw.port(b * lpc + link, sz.up_speed),
                              "inband", "inband-spine-core", sz.up_speed, slot=s * sz.spine_up + k))
