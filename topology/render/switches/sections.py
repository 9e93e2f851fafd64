"""Section functions: each fills one part of a switch's intent from the switch's links and
addresses, taking only what it needs as arguments (so a value's origin is one call away)."""

from __future__ import annotations

import bisect
import functools
import operator
import socket
from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

import netaddr

from topology.catalog import SwitchModel
from topology.layout.ipv4 import int_to_str
from topology.layout.mgmt_net import TIER as MGMT_UPLINK
from topology.layout.model import Address, Link
from topology.layout.oob_routing import TIERS as OOB_TIERS
from topology.render.switches.intent import JUMBO_MTU, Bgp, BorderPolicy, Breakout, Mgmt, Neighbor, Port, Svi

LOSSLESS_TIERS = {"node-leaf", "leaf-spine", "spine-core"}  # the RoCE compute fabric
# the storage fabric's RDMA cables (GDS): nodes' and servers' storage ports, leaf-spine
STORAGE_RDMA_TIERS = {"node-storage_leaf", "server-storage_leaf", "storage_leaf-storage_spine"}
STORAGE_VLAN = 200
INBAND_VLAN = 10


def rail_vlan(rail: int) -> int:
    return 100 + rail  # as ipam names the per-leaf gateway interface (vlan1NN)


def far_end(link: Link, device: str) -> tuple[str, str, str]:
    """(local port, peer device, peer port) of `link` seen from `device`."""
    if link.a_device == device:
        return link.a_port, link.b_device, link.b_port
    return link.b_port, link.a_device, link.a_port


def _oob_p2p(addr: Address) -> bool:
    """The OOB network's routed /31s: rack OOB switches to aggregation, aggregation to in-band."""
    return addr.pool == "oob" and addr.network.endswith("/31")


def ports(
    device: str, links: list[Link], addresses: dict[str, Address], access_vlan: dict[str, int],
    qos_tiers: frozenset[str] | set[str] = frozenset(),
) -> tuple[Port, ...]:
    """One port per planned cable end, with its planned address (routed) or access VLAN (bridged)."""
    out = []
    for lk in links:  # far_end inlined, Port's fields positional: 50k ports at 8k GPUs
        if lk.a_device == device:
            local, peer = lk.a_port, f"{lk.b_device}:{lk.b_port}"
        else:
            local, peer = lk.b_port, f"{lk.a_device}:{lk.a_port}"
        addr = addresses.get(local)
        address = addr.address if addr and (addr.pool in _ROUTED_POOLS or _oob_p2p(addr)) else ""
        out.append(Port(local, lk.speed_gbps, peer, address, (), access_vlan.get(local), lk.tier in qos_tiers,
                        JUMBO_MTU, lk.length_m))
    out.sort(key=_by_port_name)
    return tuple(out)


_ROUTED_POOLS = frozenset({"rails", "fabric_p2p", "border"})  # a port holds its address (else bridged or unnumbered)


def routed_address(addr: Address | None) -> str:
    """A port's own address (with its prefix length) where the port is routed: "" where it is
    bridged or unnumbered (`ports` tests the same inline, a call less per port)."""
    return addr.address if addr and (addr.pool in _ROUTED_POOLS or _oob_p2p(addr)) else ""


def _by_port_name(p: Port) -> tuple:
    return port_key(p.name)


def with_port_secondaries(port_list: tuple[Port, ...], pods: list[Address]) -> tuple[Port, ...]:
    """p2p rail ports also hold the gateway of their node's pod prefix (pool rail_pods)."""
    extra: dict[str, list[str]] = {}
    for a in pods:
        if not a.interface.startswith("vlan"):
            extra.setdefault(a.interface, []).append(a.address)
    if not extra:
        return port_list
    return tuple(replace(p, secondaries=tuple(extra[p.name])) if p.name in extra else p for p in port_list)


@functools.lru_cache(maxsize=4096)  # the same port names on every switch of a model
def port_key(name: str) -> tuple:
    digits = "".join(c if c.isdigit() else " " for c in name).split()
    return tuple(int(d) for d in digits) + (name,)


def breakouts(model: SwitchModel, port_list: tuple[Port, ...]) -> tuple[Breakout, ...]:
    """Cages whose planned ports are breakout sub-ports (swp1s0, swp1s1): split at the model's
    lane count for that speed, so unused sub-ports exist too."""
    if not model.breakout_name:
        return ()
    prefix, _, _ = model.breakout_name.partition("{cage}")
    cages: dict[str, int] = {}
    for p in port_list:
        rest = p.name.removeprefix(prefix)
        if rest != p.name and "s" in rest:
            cage = rest.split("s")[0]
            cages[f"{prefix}{cage}"] = p.speed_gbps
    return tuple(
        Breakout(cage, model.lanes[speed], speed)
        for cage, speed in sorted(cages.items(), key=lambda c: port_key(c[0]))
    )


def loopback(addresses: dict[str, Address]) -> str:
    lo = addresses.get("lo")
    return lo.address if lo else ""


def mgmt(model: SwitchModel, addresses: dict[str, Address]) -> Mgmt | None:
    a = addresses.get(model.mgmt_port)
    return Mgmt(model.mgmt_port, a.address, a.peer) if a else None


def neighbors(
    device: str, links: list[Link], addresses: Mapping[str, dict[str, Address]], asn: dict[str, int], unnumbered: bool
) -> tuple[Neighbor, ...]:
    """An eBGP session per link to another routed switch: remote-as is the peer's planned ASN;
    `addresses`: each device's own addresses by interface (own_addresses.OwnAddresses)."""
    out = []
    for lk in links:
        if lk.a_device == device:  # far_end inlined: 37k sessions at 8k GPUs
            local, peer, peer_port = lk.a_port, lk.b_device, lk.b_port
        else:
            local, peer, peer_port = lk.b_port, lk.a_device, lk.a_port
        remote_as = asn.get(peer)
        if remote_as is None:
            continue
        if unnumbered:
            out.append(Neighbor(peer, local, "", remote_as))
            continue
        peer_addr = addresses[peer].get(peer_port)
        if peer_addr is not None:
            out.append(Neighbor(peer, local, peer_addr.address.split("/")[0], remote_as))
    out.sort(key=_by_interface)
    return tuple(out)


def _by_interface(n: Neighbor) -> tuple:
    return port_key(n.interface)


@functools.lru_cache(maxsize=1 << 14)  # a subnet is parsed for the IPSet, the aggregate and the sort
def network(cidr: str) -> netaddr.IPNetwork:
    return netaddr.IPNetwork(cidr)


def _v4(addr: str) -> int:
    return int.from_bytes(socket.inet_aton(addr), "big")


def network_key(cidr: str) -> tuple:
    """netaddr's order of networks (version, first address, prefix length), for IPv4 without an
    IPNetwork per subnet: a 100k-GPU pod sorts some 300k rail /31s, each parsed once here."""
    addr, _, length = cidr.partition("/")
    if ":" in addr:
        return network(cidr).sort_key()
    plen = int(length) if length else 32
    value = int.from_bytes(socket.inet_aton(addr), "big")  # _v4 inline: a call less per subnet
    first = value & ~((1 << (32 - plen)) - 1)
    return 4, first, plen - 1, value - first


def address_key(addr: str) -> tuple:
    """netaddr's order of addresses (IPv4 before IPv6, then by value), without an IPAddress each."""
    if ":" in addr:
        return 6, int(netaddr.IPAddress(addr))
    return 4, _v4(addr)


def _bounds(cidr: str) -> netaddr.IPNetwork | _Bounds:
    """An IPv4 prefix's first and last address, parsed without netaddr (tens of thousands of /31s)."""
    addr, _, length = cidr.partition("/")
    if ":" in addr or not length:
        return netaddr.IPNetwork(cidr)
    host = (1 << (32 - int(length))) - 1
    first = _v4(addr) & ~host
    return _Bounds(first, first | host)


class _Bounds(NamedTuple):
    first: int
    last: int


_HOST_BITS = {str(n): (1 << (32 - n)) - 1 for n in range(33)}  # an IPv4 prefix length's host part


def _all_bounds(nets) -> dict[str, netaddr.IPNetwork | _Bounds]:
    """_bounds of each prefix, its steps inline for the common IPv4 prefix (100k at 100k GPUs, a
    call and a NamedTuple __new__ each were most of it); anything else by _bounds itself."""
    out, v4, new = {}, socket.inet_aton, tuple.__new__
    for cidr in nets:
        addr, _, length = cidr.partition("/")
        host = _HOST_BITS.get(length)
        if host is None or ":" in addr:
            out[cidr] = _bounds(cidr)
            continue
        first = int.from_bytes(v4(addr), "big") & ~host
        out[cidr] = new(_Bounds, (first, first | host))
    return out


_FIRST_LAST = operator.attrgetter("first", "last")  # of a _Bounds or a netaddr.IPNetwork
_FIRST = operator.attrgetter("first")


def _merged(nets) -> list[tuple[int, int]]:
    """Sorted, merged integer ranges (first, last) of networks."""
    out: list[list[int]] = []
    for lo, hi in sorted(map(_FIRST_LAST, nets)):  # attributes read in C: 33k host subnets at 8k GPUs
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


class HostSpace:
    """The pod's host subnets (rails, storage) as merged integer ranges: answers "does this
    prefix hold anybody else's host addresses" by bisection, where an IPSet difference per
    switch cost a third of the switch renderer's time at 8k GPUs."""

    def __init__(self, networks):
        # each subnet parsed once: a leaf's aggregates read its own subnets' bounds from here (100k rail /31s)
        self.bounds_of = _all_bounds(set(networks))
        self.ranges = _merged(self.bounds_of.values())
        self.starts = [lo for lo, _ in self.ranges]

    def holds_other(self, span: netaddr.IPNetwork, mine: list[tuple[int, int]]) -> bool:
        lo, hi = span.first, span.last
        i = max(bisect.bisect_right(self.starts, lo) - 1, 0)
        for r_lo, r_hi in self.ranges[i:]:
            if r_lo > hi:
                break
            a, b = max(r_lo, lo), min(r_hi, hi)
            if a <= b and not _covered(a, b, mine):
                return True
        return False


def _covered(a: int, b: int, ranges: list[tuple[int, int]]) -> bool:
    """[a, b] lies wholly inside the union of sorted, merged `ranges`."""
    for lo, hi in ranges:
        if hi < a:
            continue
        return lo <= a and b <= hi  # merged: the one range reaching a must reach b
    return False


def aggregates(own: list[str], space: HostSpace) -> tuple[str, ...]:
    """The fewest prefixes covering this switch's host subnets: one spanning prefix when it holds
    nobody else's addresses (the plan aligns each leaf's block), else the exact merge."""
    if not own:
        return ()
    known = space.bounds_of
    bounds = [known[n] if n in known else _bounds(n) for n in own]
    if all(b.__class__ is _Bounds for b in bounds):  # IPv4: integers, not an IPNetwork per /31 (100k at 100k GPUs)
        first, plen = _spanning(bounds)
        span = _Bounds(first, first | ((1 << (32 - plen)) - 1))
        if not space.holds_other(span, _merged(bounds)):
            return (f"{int_to_str(first)}/{plen}",)
    nets = [network(n) for n in own]
    span = nets[0].cidr if len(nets) == 1 else netaddr.spanning_cidr(nets)
    if not space.holds_other(span, _merged(nets)):
        return (str(span),)
    return tuple(str(n) for n in netaddr.cidr_merge(nets))


def _prefix_len(b: _Bounds) -> int:
    return 32 - (b.last - b.first).bit_length()


def _spanning(bounds: list[_Bounds]) -> tuple[int, int]:
    """(first address, prefix length) of netaddr.spanning_cidr over IPv4 subnets, step for step:
    from the highest subnet (by first address, then the smaller subnet), widen until the lowest
    subnet's first address is inside."""
    if len(bounds) == 1:
        return bounds[0].first, _prefix_len(bounds[0])
    # netaddr's sort key is (first, prefix length), host bits always 0 here: the lowest subnet's first
    # address, and the highest subnet (the last first address; of those, the longest prefix, the least
    # last address), each found in C (a 100k-GPU leaf spans a hundred subnets)
    firsts = list(map(_FIRST, bounds))
    low, high = min(firsts), max(firsts)
    last = min(b.last for b in bounds if b.first == high)
    ipnum, plen = last, 32 - (last - high).bit_length()
    while plen > 0 and ipnum > low:
        plen -= 1
        ipnum &= -(1 << (32 - plen))
    return ipnum, plen


def bgp(
    asn: int, router_id: str, nbrs: tuple[Neighbor, ...], subnets: list[str], aggs: tuple[str, ...], unnumbered: bool
) -> Bgp:
    """Originates the loopback and each connected host subnet (a `network` needs the exact route),
    and announces only the summaries where they differ from the subnets themselves."""
    exact = sorted(set(subnets), key=network_key)
    summaries = () if set(aggs) == set(exact) else aggs
    networks = ((f"{router_id}/32",) if router_id else ()) + tuple(exact)
    return Bgp(asn, router_id, nbrs, networks, summaries, unnumbered)


def border_neighbors(links: list[Link], addresses: dict[str, Address], site_asn: int | None) -> tuple[Neighbor, ...]:
    """The in-band cores' eBGP sessions to the site's border routers (topology/layout/border.py): the
    site's end of each /31 is the planned peer; without a site ASN, `remote-as external`."""
    out = []
    for lk in links:
        addr = addresses.get(lk.a_port)
        if lk.tier == "border" and addr is not None:
            out.append(Neighbor(lk.b_device, lk.a_port, addr.peer, site_asn if site_asn is not None else "external",
                                site=True))
    return tuple(sorted(out, key=lambda n: port_key(n.interface)))


def border_bgp(asn: int, own: dict[str, Address], nbrs: tuple[Neighbor, ...], summaries: tuple[str, ...],
               site_routes: tuple[str, ...] = ("0.0.0.0/0",), announce: tuple[str, ...] | None = None) -> Bgp:
    """Originates the management subnets this core holds (its in-band SVIs, its OOB /31s) and
    announces the pod's management pools to the site as summaries (NVIDIA's north-south design:
    aggregate summary routes toward the edge), nothing else; takes in only `site_routes` (the
    site's default route), on its site sessions only (`nbrs` may hold its OOB sessions too);
    router-id: its first border address. `announce`: the summaries the site may see (default all)."""
    held = sorted({a.network for a in own.values() if not a.interface.endswith("-v0") and (
        a.pool == "inband" or _oob_p2p(a))}, key=network_key)  # not eth0's rack subnet: that is the mgmt VRF's
    router_id = min((a.address.split("/")[0] for a in own.values() if a.pool == "border"), key=address_key)
    aggregates = summaries if held else ()
    out = aggregates if announce is None else tuple(a for a in aggregates if a in announce)
    return Bgp(asn, router_id, nbrs, tuple(held), aggregates, border=BorderPolicy(tuple(site_routes), out))


def gateway_svis(vlan_gateways: dict[int, str], pods: list[Address] = ()) -> tuple[Svi, ...]:
    """An SVI per gateway VLAN; a rail leaf's pod gateways (pool rail_pods) join its rail VLAN."""
    extra: dict[str, list[str]] = {}
    for a in pods:
        extra.setdefault(a.interface, []).append(a.address)
    ordered = {k: tuple(sorted(v, key=lambda a: address_key(a.split("/")[0]))) for k, v in extra.items()}
    return tuple(Svi(vlan, gw, secondaries=ordered.get(f"vlan{vlan}", ()))
                 for vlan, gw in sorted(vlan_gateways.items()))


def oob_neighbors(
    device: str, links: list[Link], addresses: Mapping[str, dict[str, Address]], asn: dict[str, int]
) -> tuple[Neighbor, ...]:
    """The sessions on this switch's OOB /31s (not its eth0: that is a bridged port of the rack)."""
    return neighbors(device, [lk for lk in links if lk.tier in OOB_TIERS], addresses, asn, unnumbered=False)


def oob_bgp(asn: int, own: dict[str, Address], nbrs: tuple[Neighbor, ...], router_id: str) -> Bgp:
    """A rack OOB switch originates its rack subnet, the upstream of the aggregation uplinks the
    in-band subnets it holds (the mgmt nodes' among them), an aggregation switch nothing of its
    own; no loopback: `router_id` is fixed_router_id's."""
    svis = [a for a in own.values() if a.interface.startswith("vlan") and not a.interface.endswith("-v0")]
    held = sorted({a.network for a in svis if a.pool in ("oob", "inband")}, key=network_key)
    return Bgp(asn, router_id, nbrs, tuple(held), ())


def fixed_router_id(device: str, own: dict[str, Address], links: list[Link]) -> str:
    """A router-id from the switch's own position, for a switch without a loopback: its own SVI
    address (a rack OOB switch's place in its rack subnet, an in-band switch's in its subnet),
    else its first OOB uplink's /31 (an aggregation switch's uplinks are cut by its ordinal).
    Never the lowest routed address: a new rack's /31 can undercut it, and a changed router-id
    resets every session of a running switch during an expansion."""
    svis = sorted((a for a in own.values() if a.interface.startswith("vlan") and not a.interface.endswith("-v0")
                   and a.pool in ("oob", "inband")), key=lambda a: int(a.interface.removeprefix("vlan")))
    if svis:
        return svis[0].address.split("/")[0]
    uplinks = sorted((lk for lk in links if lk.tier == MGMT_UPLINK and lk.a_device == device), key=lambda lk: lk.slot)
    if uplinks and uplinks[0].a_port in own:
        return own[uplinks[0].a_port].address.split("/")[0]
    raise ValueError(f"{device}: no SVI and no OOB uplink to take a fixed router-id from")
