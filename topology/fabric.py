"""Compute, storage and in-band fabrics: spec in, devices and links out. Pure functions.

Compute fabric: rail-optimized Clos. In each SU the NIC serving GPU i of every node goes
to that SU's rail-i leaf. Leaves split their ports down/up by the oversubscription; every
leaf has the same number of links to each spine, so the spine count divides the leaf's
uplinks. Spines (and cores) are sized for `max_scalable_units`, so growth never recables.
When one spine layer cannot reach every leaf, leaves are grouped in blocks of whole SUs,
each block gets its own spine group, and a core tier joins the groups: spine i of every
block connects to core group i.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, gcd

from topology.catalog import Catalog, NodeModel, SwitchModel
from topology.catalog import load as load_catalog
from topology.errors import SpecError
from topology.model import Device, Link, Tier
from topology.names import Names, width
from topology.spec import PodSpec, ratio


def smallest_divisor_at_least(n: int, lo: int) -> int | None:
    """Smallest d with d | n and d >= lo, or None when lo > n."""
    for d in range(max(lo, 1), n + 1):
        if n % d == 0:
            return d
    return None


def split_ports(radix: int, oversubscription: str, down_used: int, field: str, what: str) -> tuple[int, int]:
    """(first uplink port index, uplinks) for a leaf with `down_used` down ports at the ratio.
    Down ports count from the first port, uplinks fill the top of the switch."""
    d, u = ratio(oversubscription)
    if down_used * u % d:
        raise SpecError(
            field,
            f"{down_used} down ports at {oversubscription} (down:up) need "
            f"{down_used * u / d:g} uplinks: not a whole number of ports",
        )
    up = down_used * u // d
    if down_used + up > radix:
        raise SpecError(
            what,
            f"{down_used} down ports + {up} uplinks at {oversubscription} exceed the "
            f"leaf's {radix} ports (at most {radix * d // (d + u)} down)",
        )
    return radix - up, up


def switch_speed(switch: SwitchModel, speed: int, field: str, model: str) -> int:
    radix = switch.radix(speed)
    if not radix:
        raise SpecError(
            field, f"{model} has no {speed}G ports (speeds: {', '.join(f'{s}G' for s in sorted(switch.lanes))})"
        )
    return radix


@dataclass(frozen=True)
class ComputeSizing:
    speed: int
    radix: int
    rails: int
    slots: int  # node slots per SU (one is given to the UFM in SU 1)
    down_capacity: int
    up: int
    tiers: int
    spines_per_block: int  # two tiers: all spines
    block_sus: int  # SUs per block (two tiers: max_scalable_units)
    blocks_max: int
    leaf_links_per_spine: int
    spine_down: int
    spine_up: int
    cores_per_group: int
    spine_links_per_core: int

    @property
    def spines_max(self) -> int:
        return self.spines_per_block * self.blocks_max

    @property
    def cores(self) -> int:
        return self.spines_per_block * self.cores_per_group if self.tiers == 3 else 0


def size_compute(spec: PodSpec, cat: Catalog) -> ComputeSizing:
    cf = spec.compute_fabric
    node = cat.nodes[spec.node_model]
    sw = cat.switches[cf.switch_model]
    want = "infiniband" if cf.kind == "infiniband" else "ethernet"
    if sw.kind != want:
        raise SpecError(
            "compute_fabric.switch_model", f"{cf.switch_model} is an {sw.kind} switch; a {cf.kind} fabric needs {want}"
        )
    if cf.fabric_manager:
        if cf.kind != "infiniband":
            raise SpecError(
                "compute_fabric.fabric_manager", "a UFM appliance manages InfiniBand fabrics; use kind: infiniband"
            )
        ufm = cat.appliances[cf.ufm_model]
        if ufm.fabric_links > node.rails:
            raise SpecError(
                "compute_fabric.ufm_model", f"{ufm.fabric_links} UFM links but only {node.rails} rail leaves per SU"
            )
        if spec.nodes_per_su < 2:
            raise SpecError("nodes_per_su", "must be at least 2 when a UFM takes one node slot")
    speed = node.compute_nic_speed_gbps
    radix = switch_speed(sw, speed, "compute_fabric.switch_model", cf.switch_model)
    slots = spec.nodes_per_su
    down_capacity, up = split_ports(
        radix, cf.oversubscription, slots, "compute_fabric.oversubscription", "nodes_per_su"
    )
    rails = node.rails
    leaves_max = spec.max_su * rails
    need = ceil(leaves_max * up / radix)

    if cf.spine_count is not None:
        s = cf.spine_count
        if up % s:
            raise SpecError(
                "compute_fabric.spine_count",
                f"{s} spines cannot share each leaf's {up} uplinks evenly (must divide {up})",
            )
        if s < need:
            raise SpecError(
                "compute_fabric.spine_count",
                f"{s} spines of {radix} ports cannot take {leaves_max * up} leaf uplinks (need at least {need})",
            )
        return ComputeSizing(
            speed, radix, rails, slots, down_capacity, up, 2, s, spec.max_su, 1, up // s, radix, 0, 0, 0
        )

    spines = smallest_divisor_at_least(up, need)
    if spines is not None:
        return ComputeSizing(
            speed, radix, rails, slots, down_capacity, up, 2, spines, spec.max_su, 1, up // spines, radix, 0, 0, 0
        )

    # Three tiers: blocks of whole SUs, one spine per leaf uplink in each block.
    spine_down = radix // 2
    spine_up = radix - spine_down
    block_sus = spine_down // rails
    if block_sus == 0:
        raise SpecError(
            "compute_fabric.switch_model", f"a spine of {radix} ports cannot take the {rails} rail leaves of one SU"
        )
    blocks_max = ceil(spec.max_su / block_sus)
    per_group = smallest_divisor_at_least(spine_up, ceil(blocks_max * spine_up / radix))
    if per_group is None:
        max_sus = radix * block_sus
        raise SpecError(
            "max_scalable_units",
            f"{spec.max_su} SUs exceed three tiers of {cf.switch_model} at {speed}G "
            f"(at most {max_sus} SUs of {rails} rails)",
        )
    return ComputeSizing(
        speed,
        radix,
        rails,
        slots,
        down_capacity,
        up,
        3,
        up,
        block_sus,
        blocks_max,
        1,
        spine_down,
        spine_up,
        per_group,
        spine_up // per_group,
    )


def names_for(spec: PodSpec, sizing: ComputeSizing) -> Names:
    return Names(
        su_width=width(spec.max_su),
        node_width=width(spec.nodes_per_su),
        spine_width=width(sizing.spines_max),
        core_width=width(max(sizing.cores, 100)),
    )


def compute_fabric(
    spec: PodSpec, cat: Catalog, sz: ComputeSizing, names: Names
) -> tuple[list[Device], list[Link], list[Tier]]:
    """The compute fabric as built now (`scalable_units`), sized for the end state: SUs of
    nodes and rail leaves, the UFM, then two tiers (leaves to spines) or three (leaves to the
    spines of their block, spines to core groups)."""
    devices, links = _scalable_units(spec, cat, sz, names)
    if spec.compute_fabric.fabric_manager:
        _ufm(spec, cat, sz, names, devices, links)
    if sz.tiers == 2:
        _two_tier(spec, sz, names, devices, links)
    else:
        _three_tier(spec, sz, names, devices, links)
    return devices, links, _compute_tiers(spec, sz, devices)


def _scalable_units(spec: PodSpec, cat: Catalog, sz: ComputeSizing, names: Names) -> tuple[list[Device], list[Link]]:
    """Each SU's nodes and rail leaves, and the node-to-leaf cables: the NIC of GPU i goes to
    the rail-i leaf (rail follows the GPU index, not the mlx5 index)."""
    cf = spec.compute_fabric
    node = cat.nodes[spec.node_model]
    sw = cat.switches[cf.switch_model]
    nics = [(nic.netdev(cf.kind), nic.gpu) for nic in node.compute_nics]
    devices: list[Device] = []
    links: list[Link] = []
    for su in range(1, spec.scalable_units + 1):
        node_slots = sz.slots - (1 if cf.fabric_manager and su == 1 else 0)
        for n in range(1, node_slots + 1):
            devices.append(
                Device(names.node(su, n), "gpu_node", spec.node_model, su=su, power_kw=node.power_kw,
                       rack_units=node.rack_units, slot=(su - 1) * sz.slots + n - 1)
            )
        for rail in range(sz.rails):
            devices.append(
                Device(names.leaf(su, rail), "leaf", cf.switch_model, su=su, rail=rail, power_kw=sw.power_kw,
                       rack_units=sw.rack_units, slot=(su - 1) * sz.rails + rail)
            )
        for n in range(1, node_slots + 1):
            for netdev, rail in nics:
                links.append(
                    Link(names.node(su, n), netdev, names.leaf(su, rail), sw.port(n - 1, sz.speed), "compute",
                         "node-leaf", sz.speed, slot=((su - 1) * sz.slots + n - 1) * sz.rails + rail)
                )
    return devices, links


def _ufm(
    spec: PodSpec, cat: Catalog, sz: ComputeSizing, names: Names, devices: list[Device], links: list[Link]
) -> None:
    """The UFM appliance takes SU 1's last node slot: its ports on that slot of the first leaves."""
    cf = spec.compute_fabric
    ufm = cat.appliances[cf.ufm_model]
    port = cat.switches[cf.switch_model].port
    devices.append(
        Device("ufm-01", "ufm", cf.ufm_model, su=1, power_kw=ufm.power_kw, rack_units=ufm.rack_units, slot=0)
    )
    for i in range(ufm.fabric_links):
        links.append(
            Link("ufm-01", ufm.port(i), names.leaf(1, i), port(sz.slots - 1, sz.speed), "compute", "ufm-leaf", sz.speed)
        )


def _switch(spec: PodSpec, name: str, role: str, slot: int, block: int | None = None) -> Device:
    cf = spec.compute_fabric
    sw = load_catalog().switches[cf.switch_model]
    return Device(name, role, cf.switch_model, block=block, power_kw=sw.power_kw, rack_units=sw.rack_units, slot=slot)


def _two_tier(spec: PodSpec, sz: ComputeSizing, names: Names, devices: list[Device], links: list[Link]) -> None:
    """Every leaf has `leaf_links_per_spine` links to every spine; spine ports by leaf ordinal."""
    port = load_catalog().switches[spec.compute_fabric.switch_model].port
    devices += [_switch(spec, names.spine(s), "spine", s) for s in range(sz.spines_per_block)]
    lps = sz.leaf_links_per_spine
    for g in range(spec.scalable_units * sz.rails):
        su, rail = divmod(g, sz.rails)
        for j in range(sz.up):
            s, link = divmod(j, lps)
            links.append(
                Link(names.leaf(su + 1, rail), port(sz.down_capacity + j, sz.speed), names.spine(s),
                     port(g * lps + link, sz.speed), "compute", "leaf-spine", sz.speed, slot=g * sz.up + j)
            )


def _three_tier(spec: PodSpec, sz: ComputeSizing, names: Names, devices: list[Device], links: list[Link]) -> None:
    """Leaves form blocks of whole SUs with one spine per leaf uplink; spine j of every block
    joins core group j."""
    port = load_catalog().switches[spec.compute_fabric.switch_model].port
    block_leaves = sz.block_sus * sz.rails
    blocks_built = ceil(spec.scalable_units / sz.block_sus)
    sb = sz.spines_per_block
    for b in range(blocks_built):
        devices += [_switch(spec, names.spine(b * sb + j), "spine", b * sb + j, block=b + 1) for j in range(sb)]
    devices += [_switch(spec, names.core(c), "core", c) for c in range(sz.cores)]
    for g in range(spec.scalable_units * sz.rails):
        su, rail = divmod(g, sz.rails)
        b, p = divmod(g, block_leaves)
        for j in range(sz.up):
            links.append(
                Link(names.leaf(su + 1, rail), port(sz.down_capacity + j, sz.speed), names.spine(b * sb + j),
                     port(p, sz.speed), "compute", "leaf-spine", sz.speed, slot=g * sz.up + j)
            )
    lpc = sz.spine_links_per_core
    for b in range(blocks_built):
        for j in range(sb):
            for k in range(sz.spine_up):
                g2, link = divmod(k, lpc)
                links.append(
                    Link(names.spine(b * sb + j), port(sz.spine_down + k, sz.speed),
                         names.core(j * sz.cores_per_group + g2), port(b * lpc + link, sz.speed), "compute",
                         "spine-core", sz.speed, slot=(b * sb + j) * sz.spine_up + k)
                )


def _compute_tiers(spec: PodSpec, sz: ComputeSizing, devices: list[Device]) -> list[Tier]:
    model = spec.compute_fabric.switch_model
    spines_built = sum(1 for d in devices if d.role == "spine")
    spine_down = sz.spine_down if sz.tiers == 3 else sz.radix
    tiers = [
        Tier("compute", "leaf", spec.scalable_units * sz.rails, sz.slots, sz.up, model, sz.speed),
        Tier("compute", "spine", spines_built, spine_down, sz.spine_up, model, sz.speed),
    ]
    if sz.tiers == 3:
        tiers.append(Tier("compute", "core", sz.cores, sz.radix, 0, model, sz.speed))
    return tiers


def _two_tier_spines(uplinks: list[int], radix: int, min_spines: int, field: str) -> int:
    """Spine count for a two-tier leaf set: divides every leaf's uplinks, fits the ports."""
    need = max(min_spines, ceil(sum(uplinks) / radix))
    common = 0
    for u in uplinks:
        common = gcd(common, u)
    spines = smallest_divisor_at_least(common, need)
    if spines is None:
        raise SpecError(
            field,
            f"leaf uplinks ({', '.join(map(str, sorted(set(uplinks))))}) cannot be "
            f"spread evenly over {need} or more spines of {radix} ports",
        )
    return spines


def storage_fabric(
    spec: PodSpec, cat: Catalog, names: Names, ufm_slot: bool
) -> tuple[list[Device], list[Link], list[Tier]]:
    """The seed's storage design: one storage leaf per SU ("8+1"), 4:1 into storage spines,
    storage servers on their own leaves at 1:1, spines sized for max_scalable_units."""
    sf = spec.storage_fabric
    if not sf.enabled:
        return [], [], []
    node = cat.nodes[spec.node_model]
    sw = cat.switches[sf.switch_model]
    server = cat.appliances[sf.server_model]
    speed = node.storage_nic_speed_gbps
    radix = switch_speed(sw, speed, "storage_fabric.switch_model", sf.switch_model)
    if sf.storage_servers and server.storage_speed_gbps != speed:
        raise SpecError(
            "storage_fabric.server_model",
            f"{sf.server_model} runs {server.storage_speed_gbps}G; node storage NICs run {speed}G",
        )
    ppn = len(node.storage_nics)
    down_cap, up = split_ports(
        radix, sf.oversubscription, spec.nodes_per_su * ppn, "storage_fabric.oversubscription", "nodes_per_su"
    )
    # Server leaves run 1:1; servers spread evenly, so every server leaf has the same uplinks.
    server_ports = sf.storage_servers * server.storage_ports
    server_leaves = ceil(server_ports / (radix // 2))
    server_down = ceil(server_ports / server_leaves) if server_leaves else 0
    uplinks = [up] * spec.max_su + [server_down] * server_leaves
    spines = _two_tier_spines(uplinks, radix, sf.min_spines, "storage_fabric")
    port = sw.port
    devices: list[Device] = []
    links: list[Link] = []
    dev = lambda name, role, model, pw, ru, slot, su=None: devices.append(  # noqa: E731
        Device(name, role, model, su=su, power_kw=pw, rack_units=ru, slot=slot)
    )

    spine_names = [Names.numbered("storage-spine", s, spines) for s in range(spines)]
    for i, s in enumerate(spine_names):
        dev(s, "storage_spine", sf.switch_model, sw.power_kw, sw.rack_units, i)
    lps = up // spines
    for su in range(1, spec.scalable_units + 1):
        leaf = names.storage_leaf(su)
        dev(leaf, "storage_leaf", sf.switch_model, sw.power_kw, sw.rack_units, su - 1, su)
        slots = spec.nodes_per_su - (1 if ufm_slot and su == 1 else 0)
        for n in range(1, slots + 1):
            for p, nic in enumerate(node.storage_nics):
                links.append(
                    Link(
                        names.node(su, n),
                        nic.netdev(sw.kind),
                        leaf,
                        port((n - 1) * ppn + p, speed),
                        "storage",
                        "node-storage_leaf",
                        speed,
                        slot=((su - 1) * spec.nodes_per_su + n - 1) * ppn + p,
                    )
                )
        for j in range(up):
            s, link = divmod(j, lps)
            links.append(
                Link(
                    leaf,
                    port(down_cap + j, speed),
                    spine_names[s],
                    port((su - 1) * lps + link, speed),
                    "storage",
                    "storage_leaf-storage_spine",
                    speed,
                    slot=(su - 1) * up + j,
                )
            )

    slps = server_down // spines
    base = spec.max_su * lps
    for i in range(server_leaves):
        leaf = Names.numbered("storage-leaf", i, server_leaves)
        dev(leaf, "storage_leaf", sf.switch_model, sw.power_kw, sw.rack_units, spec.max_su + i)
        for j in range(server_down):
            s, link = divmod(j, slps)
            links.append(
                Link(
                    leaf,
                    port(radix - server_down + j, speed),
                    spine_names[s],
                    port(base + i * slps + link, speed),
                    "storage",
                    "storage_leaf-storage_spine",
                    speed,
                    slot=spec.max_su * up + i * server_down + j,
                )
            )
    for i in range(sf.storage_servers):
        name = Names.numbered("storage", i, sf.storage_servers)
        dev(name, "storage_server", sf.server_model, server.power_kw, server.rack_units, i)
        for p in range(server.storage_ports):
            k = i * server.storage_ports + p
            leaf_i, leaf_port = divmod(k, server_down)
            links.append(
                Link(
                    name,
                    server.port(p),
                    Names.numbered("storage-leaf", leaf_i, server_leaves),
                    port(leaf_port, speed),
                    "storage",
                    "server-storage_leaf",
                    speed,
                    slot=k,
                )
            )
    tiers = [
        Tier(
            "storage",
            "storage_leaf",
            spec.scalable_units + server_leaves,
            spec.nodes_per_su * ppn,
            up,
            sf.switch_model,
            speed,
        ),
        Tier("storage", "storage_spine", spines, radix, 0, sf.switch_model, speed),
    ]
    return devices, links, tiers


def _inband_cores(uplinks: list[int], radix: int, mgmt_ports: int, min_cores: int) -> int:
    """In-band core count. Mgmt node ports are dealt round-robin over the cores (from the top
    port down), so each core carries ceil(mgmt_ports / cores) of them beside its uplinks; while
    every core can hold all of them, the count is the one of a plain two-tier set (as before)."""
    field = "management.inband.core_switch_model"
    if mgmt_ports < radix:
        try:
            return _two_tier_spines(uplinks, radix - mgmt_ports, min_cores, field)
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
        f"{mgmt_ports} mgmt node ports and {total} in-band uplinks do not fit {radix}-port cores "
        f"that divide each switch's {common} uplinks",
    )


def inband_fabric(
    spec: PodSpec, cat: Catalog, names: Names, ufm_slot: bool
) -> tuple[list[Device], list[Link], list[Tier]]:
    """In-band management: each SU has one switch per node in-band port (bond members on
    different switches), uplinked to in-band core switches where the mgmt nodes attach."""
    ib = spec.management.inband
    node: NodeModel = cat.nodes[spec.node_model]
    sw = cat.switches[ib.switch_model]
    core_key = ib.core_switch_model or ib.switch_model
    core_sw = cat.switches[core_key]
    mgmt = cat.appliances[ib.mgmt_node_model]
    speed = node.inband_nic_speed_gbps
    radix = switch_speed(sw, speed, "management.inband.switch_model", ib.switch_model)
    core_radix = switch_speed(core_sw, speed, "management.inband.core_switch_model", core_key)
    sides = len(node.inband_nics)
    # MLAG pairs the two switches of an SU with peer-link cables just below the uplinks.
    peer_links = ib.peer_links if ib.pairing == "mlag" and sides == 2 else 0
    if spec.nodes_per_su + ib.uplinks_per_switch + peer_links > radix:
        raise SpecError(
            "management.inband.uplinks_per_switch",
            f"{spec.nodes_per_su} nodes + {ib.uplinks_per_switch} uplinks + {peer_links} MLAG peer links exceed "
            f"{ib.switch_model}'s {radix} ports at {speed}G",
        )
    mgmt_ports = ib.mgmt_nodes * mgmt.inband_ports
    uplinks = [ib.uplinks_per_switch] * (spec.max_su * sides)
    # the cores pair up like the SU switches: the mgmt nodes' bonds span them
    cores = _inband_cores(uplinks, core_radix - peer_links, mgmt_ports, ib.min_core_switches)
    if peer_links and cores != 2:
        raise SpecError(
            "management.inband.pairing",
            f"MLAG pairs exactly two in-band cores and this pod needs {cores}; use pairing: evpn_mh",
        )
    port = sw.port
    core_names = [Names.numbered("inband-core", c, cores) for c in range(cores)]
    devices = [
        Device(c, "inband_core", core_key, power_kw=core_sw.power_kw, rack_units=core_sw.rack_units, slot=i)
        for i, c in enumerate(core_names)
    ]
    links: list[Link] = []
    lpc = ib.uplinks_per_switch // cores
    for su in range(1, spec.scalable_units + 1):
        slots = spec.nodes_per_su - (1 if ufm_slot and su == 1 else 0)
        for side in range(sides):
            sw_name = names.inband(su, side)
            devices.append(
                Device(
                    sw_name,
                    "inband_switch",
                    ib.switch_model,
                    su=su,
                    power_kw=sw.power_kw,
                    rack_units=sw.rack_units,
                    slot=(su - 1) * sides + side,
                )
            )
            for n in range(1, slots + 1):
                links.append(
                    Link(
                        names.node(su, n),
                        node.inband_nics[side].netdev("ethernet"),
                        sw_name,
                        port(n - 1, speed),
                        "inband",
                        "node-inband",
                        speed,
                        slot=(su - 1) * spec.nodes_per_su + n - 1,
                    )
                )
            g = (su - 1) * sides + side
            for j in range(ib.uplinks_per_switch):
                c, link = divmod(j, lpc)
                links.append(
                    Link(
                        sw_name,
                        port(radix - ib.uplinks_per_switch + j, speed),
                        core_names[c],
                        core_sw.port(g * lpc + link, speed),
                        "inband",
                        "inband-core",
                        speed,
                    )
                )
        first_peer_port = radix - ib.uplinks_per_switch - peer_links
        for k in range(peer_links):
            links.append(
                Link(
                    names.inband(su, 0),
                    port(first_peer_port + k, speed),
                    names.inband(su, 1),
                    port(first_peer_port + k, speed),
                    "inband",
                    "inband-peer",
                    speed,
                    slot=(su - 1) * peer_links + k,
                )
            )
    for m in range(ib.mgmt_nodes):
        name = Names.numbered("mgmt", m, ib.mgmt_nodes)
        devices.append(
            Device(name, "mgmt_node", ib.mgmt_node_model, power_kw=mgmt.power_kw, rack_units=mgmt.rack_units, slot=m)
        )
        for p in range(mgmt.inband_ports):
            k = m * mgmt.inband_ports + p
            links.append(
                Link(
                    name,
                    mgmt.port(p + 1),
                    core_names[k % cores],
                    core_sw.port(core_radix - 1 - k // cores, speed),
                    "inband",
                    "mgmt-core",
                    speed,
                )
            )
    top = ceil(mgmt_ports / cores)  # core ports the mgmt nodes take from the top down
    for k in range(peer_links):
        core_port = core_sw.port(core_radix - 1 - top - k, speed)
        links.append(
            Link(core_names[0], core_port, core_names[1], core_port, "inband", "inband-peer", speed,
                 slot=spec.max_su * peer_links + k)
        )
    tiers = [
        Tier(
            "inband",
            "inband_switch",
            spec.scalable_units * sides,
            spec.nodes_per_su,
            ib.uplinks_per_switch,
            ib.switch_model,
            speed,
        ),
        Tier("inband", "inband_core", cores, core_radix, 0, core_key, speed),
    ]
    return devices, links, tiers
