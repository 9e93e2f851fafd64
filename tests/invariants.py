"""Invariants every layout must hold; used on the examples and on generated specs."""

from __future__ import annotations

from collections import Counter, defaultdict

import netaddr

from topology import catalog
from topology.layout.model import Layout


def check_fabric(layout: Layout) -> None:
    cat = catalog.load()
    spec = layout.spec
    devices = layout.by_name
    # every link end names a device, and no port carries two cables
    ends = Counter()
    for lk in layout.links:
        assert lk.a_device in devices and lk.b_device in devices, lk
        ends[(lk.a_device, lk.a_port)] += 1
        ends[(lk.b_device, lk.b_port)] += 1
    assert max(ends.values()) == 1, [e for e, n in ends.items() if n > 1][:5]

    # no port beyond the switch's ports at the link's speed
    valid: dict[tuple[str, int], set[str]] = {}
    for lk in layout.links:
        for dev, port in ((lk.a_device, lk.a_port), (lk.b_device, lk.b_port)):
            model = devices[dev].model
            if model not in cat.switches:
                continue
            sw = cat.switches[model]
            speed = lk.speed_gbps
            if lk.tier == "oob-agg" and devices[dev].role == "oob_switch":
                names = {sw.uplink_port(i) for i in range(sw.uplink_cages)}
            elif lk.tier == "device-oob" and dev == lk.a_device:
                names = {sw.mgmt_port}
            else:
                key = (model, speed)
                if key not in valid:
                    valid[key] = {sw.port(i, speed) for i in range(sw.radix(speed))}
                names = valid[key]
            assert port in names, f"{dev} {port} is not a {speed}G port of {model}"

    # rail alignment: the NIC of GPU i goes to the rail-i leaf of the node's own SU
    node = cat.nodes[spec.node_model]
    gpu_of = {nic.netdev(spec.compute_fabric.kind): nic.gpu for nic in node.compute_nics}
    for lk in layout.links:
        if lk.tier == "node-leaf":
            n, leaf = devices[lk.a_device], devices[lk.b_device]
            assert leaf.role == "leaf" and leaf.rail == gpu_of[lk.a_port] and leaf.su == n.su, lk

    # every leaf has the same number of links to each spine of its group
    per_pair = defaultdict(Counter)
    for lk in layout.links:
        if lk.tier == "leaf-spine":
            per_pair[lk.a_device][lk.b_device] += 1
    counts = {n for c in per_pair.values() for n in c.values()}
    spans = {len(c) for c in per_pair.values()}
    assert len(counts) == 1 and len(spans) == 1, (counts, spans)
    if layout.facts["tiers"] == 2:
        spines = {d.name for d in layout.devices if d.role == "spine"}
        assert all(set(c) == spines for c in per_pair.values())

    # link counts per tier
    tiers = Counter(lk.tier for lk in layout.links)
    nodes = layout.facts["nodes"]
    assert tiers["node-leaf"] == nodes * node.rails
    leaves = [d for d in layout.devices if d.role == "leaf"]
    assert tiers["leaf-spine"] == len(leaves) * layout.facts["leaf_ports_up"]
    if layout.facts["tiers"] == 3:
        per_spine = Counter(lk.a_device for lk in layout.links if lk.tier == "spine-core")
        per_core = Counter(lk.b_device for lk in layout.links if lk.tier == "spine-core")
        assert len(per_spine) == sum(1 for d in layout.devices if d.role == "spine")
        assert len(set(per_spine.values())) == 1 and len(set(per_core.values())) == 1
        assert tiers["spine-core"] == sum(per_spine.values())
    check_switch_links(layout)


SWITCH_ROLES = ("leaf", "spine", "core", "storage_leaf", "storage_spine", "inband_switch", "inband_spine",
                "inband_core", "oob_switch", "oob_aggregation")


def _native(sw, port: str) -> int:
    if sw.uplink_cages and port in {sw.uplink_port(i) for i in range(sw.uplink_cages)}:
        return sw.uplink_speed_gbps
    return sw.native_gbps


def _unsplit(sw) -> set[str]:
    ports = {sw.port(i, sw.native_gbps) for i in range(sw.radix(sw.native_gbps))}
    return ports | {sw.uplink_port(i) for i in range(sw.uplink_cages)}


def check_switch_links(layout: Layout) -> None:
    """Switch-to-switch links run at the slower end's native port speed, unsplit at that end;
    no breakout cage carries two links to the same far switch; leaves are oversubscribed by
    bandwidth (down Gb/s : up Gb/s) as the spec asks (storage: no worse than asked)."""
    cat = catalog.load()
    devices = layout.by_name
    per_cage = Counter()
    for lk in layout.links:
        a, b = devices[lk.a_device], devices[lk.b_device]
        if a.role not in SWITCH_ROLES or b.role not in SWITCH_ROLES:
            continue
        sa, sb = cat.switches[a.model], cat.switches[b.model]
        na, nb = _native(sa, lk.a_port), _native(sb, lk.b_port)
        what = f"{lk.a_device} {lk.a_port} - {lk.b_device} {lk.b_port}: {lk.speed_gbps}G"
        if lk.speed_gbps < min(na, nb):  # only where unsplit uplinks cannot reach every spine
            if lk.fabric == "compute":
                leaf = next(t for t in layout.tiers if t.role == "leaf")
                assert layout.facts["tiers"] == 2 and layout.facts["spines_end_state"] > leaf.up_gbps // na, what
            else:
                leaves = sum(d.role == "storage_leaf" and d.name.startswith("storage-leaf") for d in layout.devices)
                assert lk.fabric == "storage" and layout.spec.max_su + leaves > sb.radix(nb), what
        else:
            assert lk.speed_gbps == min(na, nb), what
        for dev, port, native, sw in ((lk.a_device, lk.a_port, na, sa), (lk.b_device, lk.b_port, nb, sb)):
            far = lk.b_device if dev == lk.a_device else lk.a_device
            if native == lk.speed_gbps:
                assert port in _unsplit(sw), f"{dev} {port} is not an unsplit {native}G port of {sw.description}"
            else:  # the faster end of a link between models: a breakout leg
                cage = port.rsplit("/", 1)[0] if sw.split_name else port.rsplit("s", 1)[0]
                per_cage[(dev, cage, far)] += 1
    assert all(n == 1 for n in per_cage.values()), [k for k, n in per_cage.items() if n > 1][:3]
    spec = layout.spec
    for t in layout.tiers:
        if t.role == "leaf":
            d, u = (int(x) for x in spec.compute_fabric.oversubscription.split(":"))
            assert t.down_gbps * u == t.up_gbps * d, t
        elif t.role == "storage_leaf":
            d, u = (int(x) for x in spec.storage_fabric.oversubscription.split(":"))
            assert t.down_gbps * u <= t.up_gbps * d, t


def check_addresses(layout: Layout) -> None:
    spec = layout.spec
    pools = spec.addressing.pools()
    seen: dict[str, str] = {}
    vrr: dict[str, str] = {}
    p2p_ends = defaultdict(list)
    for a in layout.addresses:
        ip = netaddr.IPNetwork(a.address)
        net = netaddr.IPNetwork(a.network)
        assert ip.ip in net and net.prefixlen == ip.prefixlen, a
        assert net in pools[a.pool], f"{a} outside pool {pools[a.pool]}"
        key = str(ip.ip)
        if a.interface.endswith("-v0"):  # a VRR gateway: the one address both switches of a pair share
            key = f"{key} {a.interface}"
            assert vrr.setdefault(key, a.network) == a.network, a
            continue
        assert key not in seen, f"{key} used by {seen[key]} and {a.device} {a.interface}"
        seen[key] = f"{a.device} {a.interface}"
        if net.prefixlen == 31:
            p2p_ends[a.network].append((a.device, a.interface))
        if ip.prefixlen < 31:  # neither network nor broadcast address is a host's
            assert ip.ip not in (net.network, net.broadcast), a
    # each /31 is shared by exactly the two ends of one cable
    cable_of = {}
    for lk in layout.links:
        cable_of[(lk.a_device, lk.a_port)] = lk
        cable_of[(lk.b_device, lk.b_port)] = lk
    site_ends = {(lk.a_device, lk.a_port) for lk in layout.border_links}  # the site holds the other end
    for net, ends in p2p_ends.items():
        if len(ends) == 1 and ends[0] in site_ends:
            continue
        assert len(ends) == 2, (net, ends)
        assert cable_of[ends[0]] is cable_of[ends[1]], (net, ends)
    # no two subnets of different scopes overlap: a subnet is one pool's and one group's
    nets = sorted({(netaddr.IPNetwork(a.network).first, netaddr.IPNetwork(a.network).last) for a in layout.addresses})
    for (_, l1), (f2, _) in zip(nets, nets[1:], strict=False):
        assert f2 > l1, "overlapping subnets"
    # ASNs: one per leaf, unique; spines of a group share one; the top tier shares one
    by_scope = defaultdict(list)
    for a in layout.asns:
        by_scope[a.scope].append(a.asn)
        assert spec.addressing.asn_first <= a.asn <= spec.addressing.asn_last
    for scope in ("leaf", "storage-leaf", "inband-leaf"):
        assert len(set(by_scope[scope])) == len(by_scope[scope])
    for scope in ("top-tier", "storage-top-tier"):
        assert len(set(by_scope[scope])) <= 1
    distinct = [set(v) for v in by_scope.values()]
    for i, a in enumerate(distinct):
        for b in distinct[i + 1:]:
            assert not a & b


def check_racks(layout: Layout) -> None:
    for r in layout.racks:
        assert r.planned_kw <= r.budget_kw + 1e-9, r
        assert abs(r.liquid_kw + r.air_kw - r.planned_kw) < 1e-6
    racked = {d.rack for d in layout.devices}
    assert racked == {r.name for r in layout.racks}
    assert all(d.rack for d in layout.devices)
    # every rack has both feeds
    for r in layout.racks:
        feeds = {d.name.rsplit("-", 1)[1][0] for d in layout.devices if d.role == "pdu" and d.rack == r.name}
        assert feeds == {"a", "b"}, r.name
    # every racked device has units of its own inside its rack; only zero-U gear (PDUs) has none
    units = layout.spec.racks.rack_units
    taken: dict[tuple[str, int], str] = {}
    for d in layout.devices:
        assert (d.rack_unit is None) == (d.rack_units == 0), d
        if d.rack_unit is None:
            continue
        assert 1 <= d.rack_unit and d.rack_unit + d.rack_units - 1 <= units, d
        for u in range(d.rack_unit, d.rack_unit + d.rack_units):
            assert (d.rack, u) not in taken, f"{d.name} and {taken[(d.rack, u)]} share {d.rack} U{u}"
            taken[(d.rack, u)] = d.name


def check_gateways_owned(layout: Layout) -> None:
    """Every gateway a host is given (every pool, OOB included) is an address of a named
    interface of another device, in the host's subnet."""
    owner = defaultdict(set)
    for a in layout.addresses:
        owner[(str(netaddr.IPNetwork(a.address).ip), a.network)].add((a.device, a.interface))
    for a in layout.addresses:
        if a.peer and not a.network.endswith("/31"):
            holders = owner.get((a.peer, a.network), set())
            # a host's gateway is another device's; a switch may answer for its own subnet (VRR)
            assert holders and all(dev != a.device or i.endswith("-v0") for dev, i in holders), (
                f"gateway {a.peer} of {a} owned by none")


def check_infiniband_switches_unaddressed(layout: Layout) -> None:
    """An InfiniBand switch routes no IP: only its management port (OOB) holds an address."""
    switches = catalog.load().switches
    ib = {d.name for d in layout.devices if d.model in switches and switches[d.model].kind == "infiniband"}
    held = [a for a in layout.addresses if a.device in ib and a.pool != "oob"]
    assert not held, f"InfiniBand switches hold addresses: {held[:3]}"


def check_all(layout: Layout) -> None:
    check_fabric(layout)
    check_addresses(layout)
    check_racks(layout)
    check_gateways_owned(layout)
    check_infiniband_switches_unaddressed(layout)


def check_growth(small: Layout, big: Layout) -> None:
    """Growing within max_scalable_units changes no existing cable, port, address or rack."""
    big_links = {(lk.a_device, lk.a_port): lk for lk in big.links}
    for lk in small.links:
        assert big_links.get((lk.a_device, lk.a_port)) == lk, lk
    big_addr = {(a.device, a.interface): a for a in big.addresses}
    for a in small.addresses:
        assert big_addr.get((a.device, a.interface)) == a, a
    big_asn = {a.device: a.asn for a in big.asns}
    for a in small.asns:
        assert big_asn[a.device] == a.asn
    big_dev = big.by_name
    for d in small.devices:
        assert big_dev[d.name].rack == d.rack, d
        assert big_dev[d.name].rack_unit == d.rack_unit, d
