"""Compute and storage fabrics: spec in, devices and links out (in-band: topology/layout/inband.py). Pure functions.

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
from math import ceil

from topology.catalog import Catalog, SwitchModel
from topology.catalog import load as load_catalog
from topology.catalog.ports import (
    cages_fit,
    most_down,
    smallest_divisor_at_least,
    split_ports,
    switch_speed,
    trunk_speed,
    two_tier_spines,
)
from topology.errors import SpecError
from topology.layout.model import Device, Link, Tier
from topology.layout.names import Names, width
from topology.spec import PodSpec, ratio


@dataclass(frozen=True)
class ComputeSizing:
    speed: int  # host-facing ports (the NIC's)
    radix: int  # ports at up_speed
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
    up_speed: int = 0  # leaf uplinks, spine and core ports: the cage's native speed
    legs: int = 1  # >1: two tiers over split cages, each leg of a cage to a different spine

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
        if ufm.fabric_links * cf.ufm_appliances > node.rails:
            raise SpecError(
                "compute_fabric.ufm_appliances",
                f"{cf.ufm_appliances} x {ufm.fabric_links} UFM links but only {node.rails} rail leaves per SU "
                f"(at most {node.rails // ufm.fabric_links} appliances)",
            )
        if spec.nodes_per_su < 2:
            raise SpecError("nodes_per_su", "must be at least 2 when a UFM takes one node slot")
    speed = node.compute_nic_speed_gbps
    switch_speed(sw, speed, "compute_fabric.switch_model", cf.switch_model)
    up_speed = trunk_speed(sw, sw)
    radix = sw.radix(up_speed)  # spines and cores: every port a switch-to-switch link
    slots = spec.nodes_per_su
    down_capacity, up = split_ports(
        sw, speed, up_speed, cf.oversubscription, slots, "compute_fabric.oversubscription", "nodes_per_su"
    )
    rails = node.rails
    leaves_max = spec.max_su * rails
    need = ceil(leaves_max * up / radix)

    if cf.spine_count is not None:  # two tiers only: a core tier's blocks get one spine per leaf uplink
        return _pinned_spines(cf.spine_count, sw, speed, up_speed, radix, rails, slots, down_capacity, up, spec.max_su)

    spines = smallest_divisor_at_least(up, need)
    if spines is not None:
        return ComputeSizing(
            speed, radix, rails, slots, down_capacity, up, 2, spines, spec.max_su, 1, up // spines, radix, 0, 0, 0,
            up_speed,
        )
    for leg, legs, leg_radix, leg_up, leg_need in _leg_options(sw, speed, up_speed, up, leaves_max):
        spines = smallest_divisor_at_least(leg_up, leg_need)
        if spines is not None:
            return ComputeSizing(
                speed, leg_radix, rails, slots, leg_radix - leg_up, leg_up, 2, spines, spec.max_su, 1,
                leg_up // spines, leg_radix, 0, 0, 0, leg, legs,
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
        up_speed,
    )


def _leg_options(sw: SwitchModel, speed: int, up_speed: int, up: int, leaves_max: int):
    """Before a core tier: the uplink cages split into legs no slower than the NICs, each leg to a
    different spine (NVIDIA's Spectrum-X RA reaches 16 SUs of SN5600 in two tiers this way).
    Yields (leg speed, legs a cage, ports at that speed, leg uplinks a leaf, least spines)."""
    for leg in sorted((v for v in sw.lanes if speed <= v < up_speed), reverse=True):
        legs, leg_radix = sw.lanes[leg] // sw.lanes[up_speed], sw.radix(leg)
        if leaves_max % legs == 0:
            leg_up = up * legs
            yield leg, legs, leg_radix, leg_up, max(legs, ceil(leaves_max * leg_up / leg_radix))


def _pinned_spines(
    s: int, sw: SwitchModel, speed: int, up_speed: int, radix: int, rails: int, slots: int, down_capacity: int,
    up: int, max_su: int,
) -> ComputeSizing:
    """Two tiers with `compute_fabric.spine_count` spines: unsplit uplinks where the count divides
    them and the spines' ports take them, else split legs as the automatic sizing would use."""
    leaves_max = max_su * rails
    need = ceil(leaves_max * up / radix)
    if up % s == 0 and s >= need:
        return ComputeSizing(speed, radix, rails, slots, down_capacity, up, 2, s, max_su, 1, up // s, radix, 0, 0, 0,
                             up_speed)
    works = smallest_divisor_at_least(up, need)
    for leg, legs, leg_radix, leg_up, leg_need in _leg_options(sw, speed, up_speed, up, leaves_max):
        if leg_up % s == 0 and s >= leg_need:
            return ComputeSizing(speed, leg_radix, rails, slots, leg_radix - leg_up, leg_up, 2, s, max_su, 1,
                                 leg_up // s, leg_radix, 0, 0, 0, leg, legs)
        works = works or smallest_divisor_at_least(leg_up, leg_need)
    hint = (f", e.g. {works}" if works
            else "; no two-tier count takes every leaf: leave spine_count unset for a core tier")
    if up % s:
        raise SpecError(
            "compute_fabric.spine_count",
            f"{s} spines cannot share each leaf's {up} uplinks evenly (must divide {up}{hint})",
        )
    raise SpecError(
        "compute_fabric.spine_count",
        f"{s} spines of {radix} ports cannot take {leaves_max * up} leaf uplinks (need at least {need}{hint})",
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
    speed, rails = sz.speed, sz.rails
    for su in range(1, spec.scalable_units + 1):
        node_slots = sz.slots - (1 if cf.fabric_manager and su == 1 else 0)
        first_slot = (su - 1) * sz.slots  # the SU's first node slot
        nodes = [names.node(su, n) for n in range(1, node_slots + 1)]
        for n, name in enumerate(nodes):
            devices.append(
                Device(name, "gpu_node", spec.node_model, su=su, power_kw=node.power_kw,
                       rack_units=node.rack_units, slot=first_slot + n)
            )
        for rail in range(rails):
            devices.append(
                Device(names.leaf(su, rail), "leaf", cf.switch_model, su=su, rail=rail, power_kw=sw.power_kw,
                       rack_units=sw.rack_units, slot=(su - 1) * rails + rail)
            )
        # each name and port once per SU and node, not once per cable
        leaf_of = {rail: names.leaf(su, rail) for _, rail in nics}
        for n, name in enumerate(nodes):
            port, first = sw.port(n, speed), (first_slot + n) * rails
            for netdev, rail in nics:
                links.append(Link(name, netdev, leaf_of[rail], port, "compute", "node-leaf", speed, first + rail))
    return devices, links


def _ufm(
    spec: PodSpec, cat: Catalog, sz: ComputeSizing, names: Names, devices: list[Device], links: list[Link]
) -> None:
    """The UFM appliances (an HA pair by default, as NVIDIA's SuperPOD RAs place them) share SU 1's
    last node slot: appliance i's links on that slot of the next rail leaves, so no two share a leaf."""
    cf = spec.compute_fabric
    ufm = cat.appliances[cf.ufm_model]
    port = cat.switches[cf.switch_model].port
    for a in range(cf.ufm_appliances):
        name = f"ufm-{a + 1:02d}"
        devices.append(
            Device(name, "ufm", cf.ufm_model, su=1, power_kw=ufm.power_kw, rack_units=ufm.rack_units, slot=a)
        )
        for i in range(ufm.fabric_links):
            leaf = names.leaf(1, a * ufm.fabric_links + i)
            links.append(Link(name, ufm.port(i), leaf, port(sz.slots - 1, sz.speed), "compute", "ufm-leaf", sz.speed))


def _switch(spec: PodSpec, name: str, role: str, slot: int, block: int | None = None) -> Device:
    cf = spec.compute_fabric
    sw = load_catalog().switches[cf.switch_model]
    return Device(name, role, cf.switch_model, block=block, power_kw=sw.power_kw, rack_units=sw.rack_units, slot=slot)


def _two_tier(spec: PodSpec, sz: ComputeSizing, names: Names, devices: list[Device], links: list[Link]) -> None:
    """Every leaf has `leaf_links_per_spine` links to every spine; spine ports by leaf ordinal."""
    port = load_catalog().switches[spec.compute_fabric.switch_model].port
    devices += [_switch(spec, names.spine(s), "spine", s) for s in range(sz.spines_per_block)]
    lps = sz.leaf_links_per_spine
    leaves_max = spec.max_su * sz.rails
    up_ports = [port(sz.down_capacity + j, sz.up_speed) for j in range(sz.up)]  # every leaf's, by uplink
    spines = [names.spine(s) for s in range(sz.spines_per_block)]
    for g in range(spec.scalable_units * sz.rails):
        su, rail = divmod(g, sz.rails)
        leaf = names.leaf(su + 1, rail)
        for j in range(sz.up):
            if sz.legs > 1:  # split cages: leg j to spine j mod spines; a spine's legs by link, then leaf
                link, s = divmod(j, sz.spines_per_block)
                spine_port = link * leaves_max + g
            else:
                s, link = divmod(j, lps)
                spine_port = g * lps + link
            links.append(
                Link(leaf, up_ports[j], spines[s], port(spine_port, sz.up_speed), "compute", "leaf-spine",
                     sz.up_speed, g * sz.up + j)
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
    # names and ports once each, not once per cable: a leaf's uplink j goes to its block's spine j
    speed, up = sz.up_speed, sz.up
    up_ports = [port(sz.down_capacity + j, speed) for j in range(up)]
    block_spines = [[names.spine(b * sb + j) for j in range(up)] for b in range(blocks_built)]
    for g in range(spec.scalable_units * sz.rails):
        su, rail = divmod(g, sz.rails)
        b, p = divmod(g, block_leaves)
        leaf, down, spines, first = names.leaf(su + 1, rail), port(p, speed), block_spines[b], g * up
        for j in range(up):
            links.append(Link(leaf, up_ports[j], spines[j], down, "compute", "leaf-spine", speed, first + j))
    lpc = sz.spine_links_per_core
    # a spine's uplink k: to core k // lpc of its group (spine j's group: the j-th), on that core's
    # ports for the spine's block
    spine_ports = [port(sz.spine_down + k, speed) for k in range(sz.spine_up)]
    group_cores = [[names.core(j * sz.cores_per_group + k // lpc) for k in range(sz.spine_up)] for j in range(sb)]
    for b in range(blocks_built):
        core_ports = [port(b * lpc + k % lpc, speed) for k in range(sz.spine_up)]
        for j in range(sb):
            spine, cores, first = names.spine(b * sb + j), group_cores[j], (b * sb + j) * sz.spine_up
            for k in range(sz.spine_up):
                links.append(
                    Link(spine, spine_ports[k], cores[k], core_ports[k], "compute", "spine-core", speed, first + k)
                )


def _compute_tiers(spec: PodSpec, sz: ComputeSizing, devices: list[Device]) -> list[Tier]:
    model = spec.compute_fabric.switch_model
    spines_built = sum(1 for d in devices if d.role == "spine")
    spine_down = sz.spine_down if sz.tiers == 3 else sz.radix
    tiers = [
        Tier("compute", "leaf", spec.scalable_units * sz.rails, sz.slots, sz.up, model, sz.speed, sz.up_speed),
        Tier("compute", "spine", spines_built, spine_down, sz.spine_up, model, sz.up_speed),
    ]
    if sz.tiers == 3:
        tiers.append(Tier("compute", "core", sz.cores, sz.radix, 0, model, sz.up_speed))
    return tiers


def _rounded_storage_spines(
    sw: SwitchModel, speed: int, trunk: int, spec: PodSpec, min_spines: int, up: int, server_up: int,
    server_leaves: int, server_down: int, per_su: int = 1,
) -> tuple[int, int, int]:
    """(spines, SU leaf uplinks, server leaf uplinks): the fewest spines, each leaf's uplinks
    rounded up to a multiple of them, that the leaves' cages and the spines' ports hold."""
    radix, step = sw.radix(trunk), min_spines
    node_ports = ceil(spec.nodes_per_su / per_su) * len(load_catalog().nodes[spec.node_model].storage_nics)
    for s in range(step, radix + 1, step):
        u, su = ceil(up / s) * s, ceil(server_up / s) * s
        fits = cages_fit(sw, speed, trunk, node_ports, u) and (
            not server_leaves or cages_fit(sw, speed, trunk, server_down, su))
        if fits and spec.max_su * per_su * u + server_leaves * su <= s * radix:
            return s, u, su
    raise SpecError(
        "storage_fabric.oversubscription",
        f"storage fabric: no spine count spreads {spec.max_su * per_su} SU leaves' and {server_leaves} server leaves' "
        "uplinks evenly "
        f"within {sw.cages} cages a leaf; use fewer storage_servers or fewer scalable units",
    )


def storage_leaves_per_su(spec: PodSpec, cat: Catalog) -> tuple[int, int]:
    """(storage leaves per SU, nodes per leaf): the seed's one leaf ("8+1") while it holds the
    SU's storage ports and their uplinks at the ratio, else the fewest leaves that do (nodes
    split evenly, in order)."""
    sf = spec.storage_fabric
    node = cat.nodes[spec.node_model]
    sw = cat.switches[sf.switch_model]
    speed, ppn = node.storage_nic_speed_gbps, len(node.storage_nics)
    trunks = [trunk_speed(sw, sw)] + sorted((v for v in sw.lanes if speed <= v < sw.native_gbps), reverse=True)

    def fits(nodes: int, d: int, u: int) -> bool:  # at some trunk speed storage_fabric may pick
        return any(cages_fit(sw, speed, t, nodes * ppn, ceil(nodes * ppn * speed * u / (d * t) / sf.min_spines)
                         * sf.min_spines) for t in trunks)

    d, u = ratio(sf.oversubscription)
    for leaves in range(1, spec.nodes_per_su + 1):
        if fits(ceil(spec.nodes_per_su / leaves), d, u):
            return leaves, ceil(spec.nodes_per_su / leaves)
    works = next((f"{r}:1" for r in (2, 4, 8, 16, 32) if fits(1, r, 1)), "a larger switch_model")
    raise SpecError(
        "storage_fabric.oversubscription",
        f"storage fabric: one node's {ppn} x {speed}G ports and their uplinks at {sf.oversubscription} "
        f"exceed {sf.switch_model}; e.g. {works}",
    )


STORAGE_UFMS = 2  # an HA pair, as for the compute fabric


def _storage_ufm(
    spec: PodSpec, cat: Catalog, ufm_slot: bool, leaf: str, first_port: int, speed: int,
    devices: list[Device], links: list[Link],
) -> None:
    """An InfiniBand storage fabric's own UFM pair (NVIDIA's DGX SuperPOD H100 RA, Table 7: four
    UFM appliances for its two InfiniBand fabrics, a pair each). It takes the storage ports of SU
    1's node slot that the compute UFM pair already holds, one link per appliance, so no node
    and no later SU moves."""
    ppn = len(cat.nodes[spec.node_model].storage_nics)
    if not ufm_slot or ppn < STORAGE_UFMS:
        raise SpecError(
            "storage_fabric.subnet_manager",
            "a storage UFM pair takes the storage ports of the node slot the compute UFM frees in SU 1, "
            "and this pod has no compute UFM (compute_fabric.fabric_manager: false); use subnet_manager: switch "
            "(the storage switches' embedded SM)",
        )
    model = spec.compute_fabric.ufm_model
    ufm = cat.appliances[model]
    port = cat.switches[spec.storage_fabric.switch_model].port
    for a in range(STORAGE_UFMS):
        name = f"storage-ufm-{a + 1:02d}"
        # slots after the compute pair's (at most 2), so per-slot numbering never collides
        devices.append(Device(name, "ufm", model, su=1, power_kw=ufm.power_kw, rack_units=ufm.rack_units,
                              slot=STORAGE_UFMS + a))
        links.append(Link(name, ufm.port(0), leaf, port(first_port + a, speed), "storage", "ufm-storage_leaf",
                          speed, slot=a))


def storage_fabric(
    spec: PodSpec, cat: Catalog, names: Names, ufm_slot: bool
) -> tuple[list[Device], list[Link], list[Tier]]:
    """The seed's storage design: one storage leaf per SU ("8+1"), 4:1 into storage spines,
    storage servers on their own leaves at 1:1, spines sized for max_scalable_units. An SU whose
    storage ports one leaf cannot hold gets as many leaves as it needs (`su01-storage-leaf-a`, ...)."""
    sf = spec.storage_fabric
    if not sf.enabled:
        return [], [], []
    node = cat.nodes[spec.node_model]
    sw = cat.switches[sf.switch_model]
    server = cat.appliances[sf.server_model]
    speed = node.storage_nic_speed_gbps
    switch_speed(sw, speed, "storage_fabric.switch_model", sf.switch_model)
    if sf.node_ports == "inband_bond" and sw.kind != "ethernet":
        raise SpecError("storage_fabric.node_ports", f"inband_bond needs an Ethernet storage fabric; {sf.switch_model} "
                        "is InfiniBand (its storage runs on port 1 of each card: use node_ports: dedicated)")
    if sf.storage_servers and server.storage_speed_gbps != speed:
        raise SpecError(
            "storage_fabric.server_model",
            f"{sf.server_model} runs {server.storage_speed_gbps}G; node storage NICs run {speed}G",
        )
    ppn = len(node.storage_nics)
    per_su, leaf_nodes = storage_leaves_per_su(spec, cat)
    su_leaves = spec.max_su * per_su  # the end state's node-side leaves
    # Server leaves run 1:1 and come in groups of one leaf per server port (a leaf pair for
    # dual-port servers): port p of every server in a group lands on the group's leaf p, so a
    # server keeps its storage when a leaf fails. Servers spread evenly over the groups, and
    # every server leaf provisions the same ports, so each has the same uplinks.
    group = server.storage_ports
    # Every leaf reaches every spine, so a spine's ports bound the leaves: at the cage's native
    # speed while they fit, else split cages whose legs each go to a different spine.
    native = trunk_speed(sw, sw)
    for trunk in [native] + sorted((v for v in sw.lanes if speed <= v < native), reverse=True):
        radix = sw.radix(trunk)
        legs = sw.lanes[trunk] // sw.lanes[native]  # a cage's legs at this speed
        min_spines = ceil(max(sf.min_spines, legs) / legs) * legs if legs > 1 else sf.min_spines
        down_cap, up = split_ports(
            sw, speed, trunk, sf.oversubscription, leaf_nodes * ppn, "storage_fabric.oversubscription",
            "storage_fabric.oversubscription", at_least=min_spines,
        )
        per_leaf = most_down(sw, speed, trunk, 1, 1)
        groups = ceil(sf.storage_servers / per_leaf) if group else 0
        server_leaves = groups * group
        if su_leaves + server_leaves <= radix:
            break
    else:
        most = (sw.radix(min(v for v in sw.lanes if v >= speed)) - server_leaves) // per_su
        raise SpecError(
            "max_scalable_units",
            f"storage fabric: {su_leaves} SU storage leaves + {server_leaves} server leaves exceed the ports of a "
            f"{sf.switch_model} storage spine (every leaf reaches every spine): at most {max(most, 0)} SUs",
        )
    server_down = ceil(sf.storage_servers / groups) if groups else 0
    server_up = ceil(server_down * speed / trunk / min_spines) * min_spines if groups else 0
    uplinks = [up] * su_leaves + [server_up] * server_leaves
    leaves_max = su_leaves + server_leaves
    try:
        spines = two_tier_spines(uplinks, radix, min_spines, "storage_fabric")
    except SpecError:
        # The ratio is a ceiling here: round every leaf's uplinks up to a spine count that fits.
        spines, up, server_up = _rounded_storage_spines(sw, speed, trunk, spec, min_spines, up, server_up,
                                                        server_leaves, server_down, per_su)
        down_cap = radix - up
        uplinks = [up] * su_leaves + [server_up] * server_leaves
    port = sw.port

    # Split cages interleave, so no two legs of one cage, at either end, reach the same switch:
    # a leaf's uplink j goes to spine j mod spines; on the spines, SU leaves then server leaves
    # take ports by link and leaf ordinal (strides of at least a cage's legs).
    legs = sw.lanes[trunk] // sw.lanes[native]
    su_stride, srv_stride = max(su_leaves, legs), max(server_leaves, legs)
    su_region = ceil((up // spines) * su_stride / legs) * legs
    if trunk != native and su_region + (server_up // spines) * srv_stride > radix:
        raise SpecError("storage_fabric.min_spines", f"{spines} storage spines cannot take the split uplinks "
                        f"of {leaves_max} leaves in {radix} ports: raise min_spines")

    def to_spine(j: int, per_spine: int, first: int, ordinal: int) -> tuple[int, int]:
        """(spine, spine port index) of a leaf's uplink j: unsplit, the leaf's links to a spine
        are adjacent from `first`."""
        if trunk == native:
            s, link = divmod(j, per_spine)
            return s, first + link
        link, s = divmod(j, spines)
        if ordinal < su_leaves:
            return s, link * su_stride + ordinal
        return s, su_region + link * srv_stride + ordinal - su_leaves

    devices: list[Device] = []
    links: list[Link] = []
    dev = lambda name, role, model, pw, ru, slot, su=None: devices.append(  # noqa: E731
        Device(name, role, model, su=su, power_kw=pw, rack_units=ru, slot=slot)
    )

    spine_names = [Names.numbered("storage-spine", s, spines) for s in range(spines)]
    for i, s in enumerate(spine_names):
        dev(s, "storage_spine", sf.switch_model, sw.power_kw, sw.rack_units, i)
    lps = up // spines
    netdevs = [nic.netdev(sw.kind) for nic in node.storage_nics]

    def leaf_name(su: int, i: int) -> str:  # one leaf per SU keeps the seed's name
        return names.storage_leaf(su) + (f"-{chr(ord('a') + i)}" if per_su > 1 else "")

    for su in range(1, spec.scalable_units + 1):
        for i in range(per_su):
            dev(leaf_name(su, i), "storage_leaf", sf.switch_model, sw.power_kw, sw.rack_units,
                (su - 1) * per_su + i, su)
        # with node_ports: inband_bond the nodes' storage rides bond0 (storage_converged.py)
        slots = spec.nodes_per_su - (1 if ufm_slot and su == 1 else 0) if sf.node_ports == "dedicated" else 0
        leaves = [leaf_name(su, i) for i in range(per_su)]  # names once per SU and node, not per cable
        for n in range(1, slots + 1):
            i, on_leaf = divmod(n - 1, leaf_nodes)
            node_name, first = names.node(su, n), ((su - 1) * spec.nodes_per_su + n - 1) * ppn
            for p, netdev in enumerate(netdevs):
                links.append(Link(node_name, netdev, leaves[i], port(on_leaf * ppn + p, speed), "storage",
                                  "node-storage_leaf", speed, first + p))
        for i in range(per_su):
            ordinal = (su - 1) * per_su + i
            for j in range(up):
                s, spine_port = to_spine(j, lps, ordinal * lps, ordinal)
                links.append(
                    Link(
                        leaves[i],
                        port(down_cap + j, trunk),
                        spine_names[s],
                        port(spine_port, trunk),
                        "storage",
                        "storage_leaf-storage_spine",
                        trunk,
                        slot=ordinal * up + j,
                    )
                )

    slps = server_up // spines
    base = su_leaves * lps
    for i in range(server_leaves):
        leaf = Names.numbered("storage-leaf", i, server_leaves)
        dev(leaf, "storage_leaf", sf.switch_model, sw.power_kw, sw.rack_units, su_leaves + i)
        for j in range(server_up):
            s, spine_port = to_spine(j, slps, base + i * slps, su_leaves + i)
            links.append(
                Link(
                    leaf,
                    port(radix - server_up + j, trunk),
                    spine_names[s],
                    port(spine_port, trunk),
                    "storage",
                    "storage_leaf-storage_spine",
                    trunk,
                    slot=su_leaves * up + i * server_up + j,
                )
            )
    per_group = server_down
    for i in range(sf.storage_servers):
        name = Names.numbered("storage", i, sf.storage_servers)
        dev(name, "storage_server", sf.server_model, server.power_kw, server.rack_units, i)
        g, leaf_port = divmod(i, per_group)
        for p in range(server.storage_ports):
            links.append(
                Link(
                    name,
                    server.port(p, sw.kind),
                    Names.numbered("storage-leaf", g * group + p, server_leaves),
                    sw.port(leaf_port, speed),
                    "storage",
                    "server-storage_leaf",
                    speed,
                    slot=i * server.storage_ports + p,
                )
            )
    if sw.kind == "infiniband" and sf.subnet_manager == "ufm":
        # the storage ports of SU 1's last node slot, which the compute UFM pair takes
        leaf, on_leaf = divmod(spec.nodes_per_su - 1, leaf_nodes)
        _storage_ufm(spec, cat, ufm_slot, leaf_name(1, leaf), on_leaf * ppn, speed, devices, links)
    tiers = [
        Tier(
            "storage",
            "storage_leaf",
            spec.scalable_units * per_su + server_leaves,
            leaf_nodes * ppn,
            up,
            sf.switch_model,
            speed,
            trunk,
        ),
        Tier("storage", "storage_spine", spines, radix, 0, sf.switch_model, trunk),
    ]
    return devices, links, tiers

