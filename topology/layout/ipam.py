"""Every address, subnet and ASN of the pod, positional and checked against its pool.

Each address derives from a device's or link's `slot` (its position in the end state),
never from "next free": growing a pod from N to N+1 SUs renumbers nothing, and a pool too
small for `max_scalable_units` fails at plan time. Conventions follow RFC 3021 (/31 on
point-to-point links, parent .0 / child .1 as Arista AVD does) and RFC 7938 (one ASN for
the top tier, one per spine group, one per leaf).
"""

from __future__ import annotations

from math import ceil, log2

import netaddr

from topology.catalog import Catalog
from topology.catalog import load as load_catalog
from topology.errors import SpecError
from topology.layout.fabric import ComputeSizing, storage_leaves_per_su
from topology.layout.inband import pairs_for, size_inband
from topology.layout.inband_routing import inband_asns, uplink_regions
from topology.layout.ipv4 import int_to_str, p2p_texts
from topology.layout.model import Address, Asn, Device, Link, Rack
from topology.layout.oob_routing import oob_asns
from topology.layout.racks import agg_access_ports
from topology.layout.storage_converged import TIER as JUNCTION
from topology.layout.storage_converged import converged, links_per_switch
from topology.spec import PodSpec

INBAND_VLAN = 10  # the in-band SVI on each SU switch pair and on the cores
OOB_VLAN = 2  # a rack's OOB SVI on its OOB switches (SONiC refuses VLAN 1): vlan2, as on the switch
APPLIANCE_VLAN = 11  # the first of the UFM appliances' and storage servers' in-band subnets (services pair)
STORAGE_VLAN = 200  # the storage hosts' SVI on each storage leaf
GATEWAY_PAIR = 2  # switches sharing a VRR gateway; each also holds an address of its own


class Pool:
    """A pool cut into equal subnets by index; refuses an index beyond its end."""

    def __init__(self, spec: PodSpec, name: str, prefix_len: int, needed: int):
        self.name = name
        self.net = netaddr.IPNetwork(getattr(spec.addressing, name))
        if prefix_len < self.net.prefixlen:
            raise SpecError(f"addressing.{name}", f"{self.net} is smaller than one /{prefix_len} subnet")
        self.prefix_len = prefix_len
        self.size = 2 ** (32 - prefix_len)
        capacity = self.net.size // self.size
        if needed > capacity:
            raise SpecError(
                f"addressing.{name}",
                f"{self.net} holds {capacity} /{prefix_len} subnets; the end state "
                f"(max_scalable_units={spec.max_su}) needs {needed}",
            )
        self.first = int(self.net.first)
        # index -> (first address, network text, gateway .1 text): a subnet's hosts share them
        self._subnets: dict[int, tuple[int, str, str]] = {}

    def subnet(self, index: int) -> tuple[int, str]:
        base = self.first + index * self.size
        return base, f"{int_to_str(base)}/{self.prefix_len}"

    def subnet_texts(self, index: int) -> tuple[int, str, str]:
        """Subnet `index`'s first address, network text and gateway (.1) text, kept for its hosts."""
        shared = self._subnets.get(index)
        if shared is None:
            base, network = self.subnet(index)
            shared = self._subnets[index] = (base, network, int_to_str(base + 1))
        return shared

    def host(self, index: int, offset: int) -> tuple[str, str]:
        base, network, _ = self.subnet_texts(index)
        return f"{int_to_str(base + offset)}/{self.prefix_len}", network

    def gateway(self, index: int) -> str:
        """Subnet `index`'s first host address (.1), where its gateway is."""
        return self.subnet_texts(index)[2]

    def p2p(self, index: int) -> tuple[str, str]:
        """A /31 pool's subnet `index`: its lower and upper addresses' texts (the network is the
        lower's, with /31): each /31 is one link's, so none is kept."""
        return p2p_texts(self.first + index * self.size)


def prefix_for(hosts: int) -> int:
    """Smallest subnet holding `hosts` addresses plus network and broadcast."""
    return 32 - max(2, ceil(log2(hosts + 2)))


def check_overlaps(spec: PodSpec) -> None:
    pools = list(spec.addressing.pools().items())
    for i, (a, na) in enumerate(pools):
        for b, nb in pools[i + 1 :]:
            if na.first <= nb.last and nb.first <= na.last:
                raise SpecError(f"addressing.{a}", f"{na} overlaps addressing.{b} ({nb})")


def plan(
    spec: PodSpec,
    cat: Catalog,
    sz: ComputeSizing,
    devices: list[Device],
    links: list[Link],
    racks: list[Rack],
    rack_positions: int,
) -> tuple[list[Address], list[Asn]]:
    check_overlaps(spec)
    node = cat.nodes[spec.node_model]
    cf = spec.compute_fabric
    routed = cf.kind == "roce"
    out: list[Address] = []
    add = out.append
    by_tier: dict[str, list[Link]] = {}
    for link in links:
        by_tier.setdefault(link.tier, []).append(link)
    nodes_max = spec.max_su * spec.nodes_per_su

    if spec.addressing.rail_pods is not None and not routed:
        raise SpecError("addressing.rail_pods", "pod prefixes are planned on RoCE rails (this pod: "
                        f"compute_fabric.kind {cf.kind}: an IPoIB rail is one subnet for the whole pod already); "
                        "unset rail_pods")

    # Rails: a /31 per GPU NIC (leaf .0, NIC .1), or one subnet per rail leaf; IPoIB per rail.
    if routed and spec.addressing.rail_mode == "p2p":
        # Each leaf's /31s form one aligned block (a power of two of them), so the leaf announces
        # one aggregate for its rail instead of a host route per GPU NIC.
        block = 2 ** ceil(log2(spec.nodes_per_su))
        leaf_slot = {d.name: d.slot for d in devices if d.role == "leaf"}
        pool = Pool(spec, "rails", 31, spec.max_su * sz.rails * block)
        first = pool.first  # pool.p2p's sum inline: 100k links at 100k GPUs
        for lk in by_tier.get("node-leaf", ()):
            node_in_su = (lk.slot // sz.rails) % spec.nodes_per_su
            lower, upper = p2p_texts(first + (leaf_slot[lk.b_device] * block + node_in_su) * 2)
            net = lower + "/31"
            add(Address(lk.b_device, lk.b_port, net, net, "rails", upper))
            add(Address(lk.a_device, lk.a_port, upper + "/31", net, "rails", lower))
        if spec.addressing.rail_pods is not None:
            out += rail_pod_prefixes(spec, sz, by_tier.get("node-leaf", ()), out)
    elif routed or spec.addressing.ipoib:
        per_leaf = routed
        groups = spec.max_su * sz.rails if per_leaf else sz.rails
        plen = prefix_for((spec.nodes_per_su if per_leaf else nodes_max) + 1)
        pool = Pool(spec, "rails", plen, groups)
        gateways_done: set[str] = set()
        subnet = pool.subnet_texts  # a subnet's network and gateway texts once, not once per NIC
        for lk in by_tier.get("node-leaf", ()):
            node_slot, rail = divmod(lk.slot, sz.rails)
            su0, n0 = divmod(node_slot, spec.nodes_per_su)
            index = su0 * sz.rails + rail if per_leaf else rail
            host = (n0 if per_leaf else node_slot) + 2  # .1 is the gateway
            base, net, gw = subnet(index)
            if not per_leaf:
                gw = ""
            add(Address(lk.a_device, lk.a_port, f"{int_to_str(base + host)}/{plen}", net, "rails", gw))
            if per_leaf and lk.b_device not in gateways_done:
                gateways_done.add(lk.b_device)
                add(Address(lk.b_device, f"vlan{100 + rail}", f"{gw}/{plen}", net, "rails"))
        if per_leaf and spec.addressing.rail_pods is not None:
            out += rail_pod_prefixes(spec, sz, by_tier.get("node-leaf", ()), out)

    # Switch-to-switch /31s, one region per tier sized for the end state; the in-band uplinks always route.
    regions = []
    if routed:
        regions += [
            ("leaf-spine", spec.max_su * sz.rails * sz.up),
            ("spine-core", sz.spines_max * sz.spine_up if sz.tiers == 3 else 0),
        ]
    storage_up = [lk for lk in by_tier.get("storage_leaf-storage_spine", ())]
    if storage_up and cat.switches[spec.storage_fabric.switch_model].kind == "ethernet":
        regions.append(("storage_leaf-storage_spine", _storage_uplinks_max(spec, cat, storage_up)))
    if converged(spec):  # SU in-band switches to their storage leaves, by end-state switch slot
        regions.append((JUNCTION, size_inband(spec, cat).switches_max * links_per_switch(spec, cat)[0]))
    regions += uplink_regions(spec, cat)  # last: the fabrics' /31s never move
    pool = Pool(spec, "fabric_p2p", 31, sum(n for _, n in regions))
    offset = 0
    for tier, count in regions:
        first = pool.first + offset * 2  # the region's first /31: pool.p2p's sum once a region, not a link
        for lk in by_tier.get(tier, ()):
            lower, upper = p2p_texts(first + lk.slot * 2)
            net = lower + "/31"
            # the upper tier (b end) is the parent: .0; the lower tier is .1
            add(Address(lk.b_device, lk.b_port, net, net, "fabric_p2p", upper))
            add(Address(lk.a_device, lk.a_port, upper + "/31", net, "fabric_p2p", lower))
        offset += count

    # Loopbacks (/32) of routed switches, by role region.
    loop_roles = (["leaf", "spine", "core"] if routed else []) + (
        ["storage_leaf", "storage_spine"] if cat.switches[spec.storage_fabric.switch_model].kind == "ethernet" else []
    ) + (["inband_switch"] if converged(spec) else [])  # they route the nodes' storage (storage_converged.py)
    region_size = _loopback_regions(spec, sz, devices)
    if loop_roles:
        pool = Pool(spec, "loopbacks", 32, sum(region_size[r] for r in loop_roles))
        offset = 0
        for role in loop_roles:
            for d in devices:
                if d.role == role:
                    address, net = pool.host(offset + d.slot, 0)
                    add(Address(d.name, "lo", address, net, "loopbacks"))
            offset += region_size[role]

    # In-band: one subnet per in-band pair (an SU has one unless its nodes need more; gateway .1,
    # node n of the pair at .1+n), one for pod services (the mgmt nodes). The gateway is a VRR
    # address on both switches of the pair that carries the bonds (the SU's pair; for services
    # the cores, or the services pair of a three-tier in-band fabric); each switch's own SVI
    # address is at the top.
    pairs, per_pair = pairs_for(spec, cat)
    services = spec.max_su * pairs
    svc_pair = any(d.role == "inband_switch" and d.su is None for d in devices)
    plen = prefix_for(per_pair + 1 + GATEWAY_PAIR)
    services_hosts = spec.management.inband.mgmt_nodes + 1 + GATEWAY_PAIR
    plen = min(plen, prefix_for(services_hosts))
    # The UFM appliances and storage servers (topology/layout/inband_services.py): subnets of their own
    # after the services subnet, as many as they fill at the pool's size (so their count never
    # resizes the SUs' subnets), gateway VRR on the services pair's vlan11, vlan12, ...
    mgmt_nodes = spec.management.inband.mgmt_nodes
    service_slot = {lk.a_device: lk.slot - mgmt_nodes for lk in by_tier.get("service-inband", ())}
    per_app = 2 ** (32 - plen) - 3 - GATEWAY_PAIR
    app_subnets = ceil(len(service_slot) / per_app)
    pool = Pool(spec, "inband", plen, services + 1 + app_subnets)
    for d in devices:
        if d.role == "gpu_node":
            su0, n0 = divmod(d.slot, spec.nodes_per_su)
            pair, n0 = divmod(n0, per_pair)
            address, net = pool.host(su0 * pairs + pair, n0 + 2)
            gw = pool.gateway(su0 * pairs + pair)
            add(Address(d.name, "bond0", address, net, "inband", gw))
        elif d.role == "mgmt_node":
            address, net = pool.host(services, d.slot + 2)
            add(Address(d.name, "bond0", address, net, "inband", pool.gateway(services)))
        elif d.name in service_slot:
            k, i = divmod(service_slot[d.name], per_app)
            address, net = pool.host(services + 1 + k, i + 2)
            add(Address(d.name, "bond0", address, net, "inband", pool.gateway(services + 1 + k)))
        elif d.role == "inband_switch":
            pair, side = divmod(d.slot, 2)
            out.extend(_vrr_gateway(pool, pair, d.name, side, INBAND_VLAN, "inband"))
            if d.su is None:  # the services pair of three tiers: the appliances' gateways too
                for k in range(app_subnets):
                    out.extend(_vrr_gateway(pool, services + 1 + k, d.name, side, APPLIANCE_VLAN + k, "inband"))
        elif d.role == "inband_core" and d.slot < GATEWAY_PAIR and not svc_pair:
            out.extend(_vrr_gateway(pool, services, d.name, d.slot, INBAND_VLAN, "inband"))
            for k in range(app_subnets):
                out.extend(_vrr_gateway(pool, services + 1 + k, d.name, d.slot, APPLIANCE_VLAN + k, "inband"))

    # Storage: a subnet per storage leaf for the ports cabled to it (IPoIB: one on-link subnet).
    if spec.storage_fabric.enabled and cat.switches[spec.storage_fabric.switch_model].kind == "infiniband":
        out += _ipoib_storage(spec, len(node.storage_nics), by_tier)
    elif spec.storage_fabric.enabled:
        ppn = len(node.storage_nics)
        # A subnet per storage leaf: the SU leaves' (index = SU), then each server leaf's, the
        # gateway .1 on the leaf's storage SVI. Server leaves are pod-wide, so their index is stable.
        server_links: dict[str, list[Link]] = {}
        for lk in by_tier.get("server-storage_leaf", ()):
            server_links.setdefault(lk.b_device, []).append(lk)
        per_server_leaf = max((len(v) for v in server_links.values()), default=0)
        per_su, leaf_nodes = storage_leaves_per_su(spec, cat)  # an SU's leaves: a subnet each
        plen = min(prefix_for(leaf_nodes * ppn + 1), prefix_for(per_server_leaf + 1))
        pool = Pool(spec, "storage", plen, spec.max_su * per_su + len(server_links))
        gateway_of: dict[str, int] = {}
        for lk in by_tier.get("node-storage_leaf", ()):
            su0, rest = divmod(lk.slot, spec.nodes_per_su * ppn)
            i, rest = divmod(rest, leaf_nodes * ppn)
            index = su0 * per_su + i
            address, net = pool.host(index, rest + 2)
            add(Address(lk.a_device, lk.a_port, address, net, "storage", pool.gateway(index)))
            gateway_of[lk.b_device] = index
        for k, leaf in enumerate(sorted(server_links)):
            index = spec.max_su * per_su + k
            gateway_of[leaf] = index
            for host, lk in enumerate(sorted(server_links[leaf], key=lambda x: x.slot)):
                address, net = pool.host(index, host + 2)
                add(Address(lk.a_device, lk.a_port, address, net, "storage", pool.gateway(index)))
        for leaf, index in sorted(gateway_of.items()):
            address, net = pool.host(index, 1)
            add(Address(leaf, f"vlan{STORAGE_VLAN}", address, net, "storage"))

    out += _oob(spec, devices, links, racks, rack_positions)
    asns, nxt = _asns(spec, cat, sz, devices, region_size)
    oob, nxt = oob_asns(devices, racks, rack_positions, nxt)  # the OOB region follows the fabrics'
    inband, nxt = inband_asns(spec, cat, devices, nxt)  # the in-band leaves' and spines' after it
    a = spec.addressing
    if nxt - 1 > a.asn_last:
        raise SpecError(
            "addressing.asn_last",
            f"ASN range {a.asn_first}-{a.asn_last} holds "
            f"{a.asn_last - a.asn_first + 1} ASNs; the end state needs {nxt - a.asn_first}",
        )
    return out, asns + oob + inband


def rail_pod_prefixes(spec: PodSpec, sz: ComputeSizing, node_leaf: list[Link], rails: list[Address]) -> list[Address]:
    """Per GPU NIC a routed prefix for its pods: the leaf holds its first address beside the NIC's own
    link (per_leaf: on the rail SVI with the subnet's gateway; p2p: on the port with the /31) and
    originates it; nv-ipam hands the rest to the node's pods (roles/gpu_operator). Positional: a
    rail's prefixes form one aligned block (the rail's aggregate, what pods route to), a leaf's one
    aligned block inside it (what it announces). The address's peer is the node's rail address,
    naming the NIC the prefix belongs to."""
    plen = spec.addressing.rail_pod_prefix
    per_leaf, per_rail = _rail_pod_blocks(spec)
    pool = Pool(spec, "rail_pods", plen, sz.rails * per_rail)
    node_address = {(a.device, a.interface): a.address.split("/")[0] for a in rails if a.pool == "rails"}
    out = []
    for lk in node_leaf:
        node_slot, rail = divmod(lk.slot, sz.rails)
        su0, n0 = divmod(node_slot, spec.nodes_per_su)
        base, net = pool.subnet(rail * per_rail + su0 * per_leaf + n0)
        interface = f"vlan{100 + rail}" if spec.addressing.rail_mode == "per_leaf" else lk.b_port
        out.append(Address(lk.b_device, interface, f"{int_to_str(base + 1)}/{plen}", net, "rail_pods",
                           node_address[(lk.a_device, lk.a_port)]))
    return out


def _rail_pod_blocks(spec: PodSpec) -> tuple[int, int]:
    """Pod prefixes per leaf block and per rail block (powers of two: each block one aligned CIDR)."""
    per_leaf = 2 ** ceil(log2(spec.nodes_per_su))
    return per_leaf, 2 ** ceil(log2(spec.max_su * per_leaf))


def rail_pod_aggregate(spec: PodSpec, rail: int) -> str:
    """The block holding every pod prefix of a rail in the end state: what the rail's pods route
    to, the same for the pod's whole life (growth fills it, never moves it)."""
    _, per_rail = _rail_pod_blocks(spec)
    size = per_rail * 2 ** (32 - spec.addressing.rail_pod_prefix)
    first = int(netaddr.IPNetwork(spec.addressing.rail_pods).first) + rail * size
    return f"{int_to_str(first)}/{32 - int(log2(size))}"


def _ipoib_storage(spec: PodSpec, ppn: int, by_tier: dict[str, list[Link]]) -> list[Address]:
    """An InfiniBand storage fabric is one partition, so one IPoIB subnet whose hosts are all
    on-link: no gateway, since no device routes it (IB switches hold no addresses). Node ports
    first by their end-state slot, then the storage servers' ports, so growth renumbers nothing."""
    node_ports = spec.max_su * spec.nodes_per_su * ppn
    server_links = sorted(by_tier.get("server-storage_leaf", ()), key=lambda lk: lk.slot)
    pool = Pool(spec, "storage", prefix_for(node_ports + len(server_links)), 1)
    out = []
    for lk in by_tier.get("node-storage_leaf", ()):
        address, net = pool.host(0, 1 + lk.slot)
        out.append(Address(lk.a_device, lk.a_port, address, net, "storage"))
    for lk in server_links:
        address, net = pool.host(0, 1 + node_ports + lk.slot)
        out.append(Address(lk.a_device, lk.a_port, address, net, "storage"))
    return out


def _vrr_gateway(pool: Pool, index: int, switch: str, side: int, vlan: int, pool_name: str) -> list[Address]:
    """One switch of a pair: its own SVI address (from the top of the subnet, side 0 lower) and
    the shared VRR gateway .1 (Cumulus names the virtual interface vlanN-v0)."""
    base, net = pool.subnet(index)
    top = base + pool.size - 1  # broadcast
    own = f"{int_to_str(top - GATEWAY_PAIR + side)}/{pool.prefix_len}"
    return [
        Address(switch, f"vlan{vlan}", own, net, pool_name),
        Address(switch, f"vlan{vlan}-v0", f"{int_to_str(base + 1)}/{pool.prefix_len}", net, pool_name),
    ]


def _storage_uplinks_max(spec: PodSpec, cat: Catalog, storage_up: list[Link]) -> int:
    """Storage leaf uplinks of the end state: every SU's leaf plus the server leaves."""
    per_su_leaf = sum(1 for lk in storage_up if lk.a_device == storage_up[0].a_device)  # SU 1's (first) leaf
    server_links = sum(1 for lk in storage_up if not lk.a_device.startswith("su"))
    return spec.max_su * storage_leaves_per_su(spec, cat)[0] * per_su_leaf + server_links


def _storage_leaves_per_su(spec: PodSpec) -> int:
    return storage_leaves_per_su(spec, load_catalog())[0] if spec.storage_fabric.enabled else 1


def _loopback_regions(spec: PodSpec, sz: ComputeSizing, devices: list[Device]) -> dict[str, int]:
    storage_leaves = max((d.slot for d in devices if d.role == "storage_leaf"), default=-1) + 1
    return {
        "leaf": spec.max_su * sz.rails,
        "spine": sz.spines_max,
        "core": sz.cores,
        "storage_leaf": max(storage_leaves, spec.max_su * _storage_leaves_per_su(spec)),
        "storage_spine": sum(1 for d in devices if d.role == "storage_spine"),
        "inband_switch": max([size_inband(spec, load_catalog()).switches_max]
                             + [d.slot + 1 for d in devices if d.role == "inband_switch"]) if converged(spec) else 0,
    }


def _oob(
    spec: PodSpec, devices: list[Device], links: list[Link], racks: list[Rack], rack_positions: int
) -> list[Address]:
    """OOB: one subnet per rack position (gateway .1, the rack's OOB switches next, then
    every managed device in the order it is cabled). The gateway is the rack's OOB switches'
    VRR address (`vlan2-v0`); they route over /31s to the aggregation switches, which route over
    /31s to the in-band network (topology/layout/mgmt_net.py): /31s cut after the end state's rack
    subnets, aggregation ports first, then the aggregation uplinks, the upper end .0."""
    oob_links: dict[str, list[Link]] = {}
    for lk in links:
        if lk.tier == "device-oob":
            oob_links.setdefault(lk.b_device, []).append(lk)
    switches_in: dict[str, list[str]] = {r.name: [] for r in racks}
    for d in devices:  # one pass, not one per rack: 9,400 racks x 100k devices at 100k GPUs
        if d.role == "oob_switch" and d.rack in switches_in:
            switches_in[d.rack].append(d.name)
    for names in switches_in.values():
        names.sort()
    per_rack = max((sum(len(oob_links.get(s, ())) for s in sw) + len(sw) for sw in switches_in.values()), default=1)
    plen = prefix_for(per_rack + 1)
    # Rack ordinals cover every position of the end state's rows.
    pool = Pool(spec, "oob", plen, rack_positions)
    out = []
    for r in racks:
        index = r.ordinal
        gw = pool.gateway(index)
        host = 2
        for sw in switches_in[r.name]:
            address, net = pool.host(index, host)
            # no peer: the switch answers for the gateway itself and routes upward over its /31s
            out.append(Address(sw, f"vlan{OOB_VLAN}", address, net, "oob"))
            out.append(Address(sw, f"vlan{OOB_VLAN}-v0", f"{gw}/{plen}", net, "oob"))
            host += 1
        for sw in switches_in[r.name]:
            for lk in sorted(oob_links.get(sw, ()), key=lambda x: x.a_device):
                address, net = pool.host(index, host)
                out.append(Address(lk.a_device, lk.a_port, address, net, "oob", gw))
                host += 1
    aggs = sum(1 for d in devices if d.role == "oob_aggregation")
    agg_ports = agg_access_ports(spec, load_catalog())
    first = rack_positions * pool.size // 2  # the first /31 after the rack subnets
    regions = {"oob-agg": 0, "oob-uplink": aggs * agg_ports}
    p2p = Pool(spec, "oob", 31, first + aggs * agg_ports + aggs * spec.management.oob.aggregation_uplinks)
    for lk in links:
        if lk.tier in regions:
            lower, upper = p2p.p2p(first + regions[lk.tier] + lk.slot)
            net = lower + "/31"
            out.append(Address(lk.b_device, lk.b_port, net, net, "oob", upper))
            out.append(Address(lk.a_device, lk.a_port, upper + "/31", net, "oob", lower))
    return out


def _asns(
    spec: PodSpec, cat: Catalog, sz: ComputeSizing, devices: list[Device], region_size: dict[str, int]
) -> tuple[list[Asn], int]:
    """The fabrics' ASNs by region (each sized for the end state), and the first ASN after them."""
    a = spec.addressing
    out: list[Asn] = []
    nxt = a.asn_first
    if spec.compute_fabric.kind == "roce":
        top = "core" if sz.tiers == 3 else "spine"
        groups = sz.blocks_max if sz.tiers == 3 else 0
        for d in devices:
            if d.role == top:
                out.append(Asn(d.name, nxt, "top-tier"))
            elif d.role == "spine":
                out.append(Asn(d.name, nxt + 1 + d.block - 1, "spine-group"))
            elif d.role == "leaf":
                out.append(Asn(d.name, nxt + 1 + groups + d.slot, "leaf"))
        nxt += 1 + groups + region_size["leaf"]
    if spec.storage_fabric.enabled and cat.switches[spec.storage_fabric.switch_model].kind == "ethernet":
        for d in devices:
            if d.role == "storage_spine":
                out.append(Asn(d.name, nxt, "storage-top-tier"))
            elif d.role == "storage_leaf":
                out.append(Asn(d.name, nxt + 1 + d.slot, "storage-leaf"))
        nxt += 1 + region_size["storage_leaf"]
    if converged(spec):  # an SU's in-band switches peer with its storage leaves
        for d in devices:
            if d.role == "inband_switch" and d.su is not None:
                out.append(Asn(d.name, nxt + d.slot, "inband-leaf"))
        nxt += region_size["inband_switch"]
    return out, nxt
