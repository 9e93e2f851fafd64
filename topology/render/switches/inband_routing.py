"""BGP sections of the in-band network (topology/layout/inband_routing.py): the SU pairs' uplink and
peer-link sessions, the in-band spines', and the cores' sessions down to them.

Each function takes what it needs; build.py composes them with the border (sections.border_bgp)
and the OOB network's sessions (sections.oob_neighbors) where a switch has those too.
"""

from __future__ import annotations

from collections.abc import Mapping

from topology.layout.inband_routing import UPLINK_TIERS
from topology.layout.ipam import INBAND_VLAN
from topology.layout.model import Address, Link
from topology.render.switches.intent import Bgp, Neighbor, Pairing
from topology.render.switches.sections import address_key, neighbors


def uplink_neighbors(device: str, links: list[Link], addresses: Mapping[str, dict[str, Address]],
                     asn: dict[str, int]) -> tuple[Neighbor, ...]:
    """An eBGP session per routed in-band /31 (up to the cores or spines, or down from them)."""
    return neighbors(device, [lk for lk in links if lk.tier in UPLINK_TIERS], addresses, asn, unnumbered=False)


def peer_link_neighbor(pair: Pairing | None, own_asn: int, asn: dict[str, int]) -> tuple[Neighbor, ...]:
    """The session across an MLAG pair's peer link, between the two switches' own vlan10 addresses
    (the peer link carries vlan10): a member that loses its uplinks routes through its partner.
    The same ASN on both (the cores, the services pair) makes it iBGP: next-hop-self, so the
    partner's uplink next hops, unknown here, are never the next hop. EVPN-MH pairs have no peer
    link (their members' uplink tracking takes the node ports down instead): no session."""
    if pair is None or not pair.peer_link or not pair.peer_ip or pair.peer not in asn:
        return ()
    remote = asn[pair.peer]
    return (Neighbor(pair.peer, f"vlan{INBAND_VLAN}", pair.peer_ip, remote, next_hop_self=remote == own_asn),)


def router_id(own: dict[str, Address]) -> str:
    """A switch without a loopback: the lowest of its own addresses (SVI or /31), unique in the pod."""
    mine = [a.address.split("/")[0] for a in own.values() if not a.interface.endswith("-v0")]
    return min(mine, key=address_key)


def spine_bgp(asn: int, own: dict[str, Address], nbrs: tuple[Neighbor, ...]) -> Bgp:
    """An in-band spine originates nothing: it carries its block's subnets up and the cores' down."""
    return Bgp(asn, router_id(own), nbrs, (), ())
