"""NVUE startup.yaml by shape: switches of one role and model differ only by their numbers (names,
addresses, ASNs), so a shape's text is rendered once, by render_nvue itself, from a stand-in intent
whose numbers are markers; the markers become %s fields, and every switch of the shape is then one
`template % values`, where render_nvue walks each switch's ports and sessions in Python.

The shape key holds everything of the intent that is not a field (port names, speeds, VLANs, QoS,
services, how many addresses and sessions...), so two switches share a template only where their
text is the same up to the fields. Each value is filled in as render_nvue writes it (yaml_scalar:
quoted where YAML needs it); a name to quote (the header writes it bare), a value twice among one
mapping's keys (where a dict would merge them), or a spec whose own text holds the marker, is
written by render_nvue itself. A ShapeCache lives for one render (iter_switch_configs): nothing
leaks between plans."""

from __future__ import annotations

import itertools
import operator
import re
import string
from dataclasses import replace

from topology.render.switches.intent import SwitchIntent
from topology.render.switches.nvue import render_nvue, yaml_scalar

_MARK = "swtextfield{:06d}q"  # a plain YAML word no switch's text holds: where a field's value goes
_MARKS = re.compile(r"swtextfield(\d{6})q")
# the values render_nvue writes as they are (yaml_scalar), checked a switch at a time in C:
# names (a device, a device:port) of ASCII letters, digits and _./:- from a letter or _, longer
# than any YAML keyword; and IPv4 addresses or prefixes
_NAME_CHARS = (string.ascii_letters + string.digits + "_./:-\n").encode()
_NAME_FIRST = frozenset(string.ascii_letters + "_")
_IPV4 = r"[0-9]+(?:\.[0-9]+){3}(?:/[0-9]+)?"
_ALL_IPV4 = re.compile(rf"{_IPV4}(?:\n{_IPV4})*+").fullmatch

_INT = frozenset({int})  # an ASN, an MLAG id: written as str() writes it (a bool would not be)
_PORT_SHAPE = operator.attrgetter("name", "speed_gbps", "mtu", "access_vlan", "lossless")
_PEER = operator.attrgetter("peer")
_ADDRESS = operator.attrgetter("address")
_SECONDARIES = operator.attrgetter("secondaries")
_NBR_SHAPE = operator.attrgetter("interface", "site", "next_hop_self")
_NBR_ADDRESS = operator.attrgetter("address")
_REMOTE_AS = operator.attrgetter("remote_as")


class ShapeCache:
    """Templates by shape key, for the switches of one render."""

    def __init__(self):
        self.templates: dict[tuple, tuple[str, operator.itemgetter]] = {}

    def render(self, sw: SwitchIntent) -> str:
        got = self.values_and_template(sw)
        if got is None:
            return render_nvue(sw)
        values, (template, order) = got
        return template % order(values)

    def values_and_template(self, sw: SwitchIntent) -> tuple[list[str], tuple[str, operator.itemgetter]] | None:
        """`sw`'s field values and its shape's (template, order), the template made if the shape is
        new; None where render_nvue writes the switch itself."""
        fields = _fields(sw)
        if fields is None:  # a name to quote, a mapping's key twice
            return None
        key, values = fields
        entry = self.templates.get(key, ())
        if entry == ():
            entry = self.templates[key] = _template(sw)
        if entry is None:  # the shape's constant text holds a marker: every switch of it by render_nvue
            return None
        return values, entry


def _template(sw: SwitchIntent) -> tuple[str, operator.itemgetter] | None:
    """render_nvue's text of `sw` with its fields as markers, the markers as %s, and the order
    in which the text holds the fields (a name is written twice, header and hostname; a bond's
    MLAG id not at all without a pair). None where the switch's own text holds a marker's word."""
    if _MARKS.search(render_nvue(sw)):  # a server's name, a note: text of the spec, not a field
        return None
    marks = iter(map(_MARK.format, itertools.count()))
    text = render_nvue(_stand_in(sw, marks))
    used = [int(m) for m in _MARKS.findall(text)]
    template = _MARKS.sub("%s", text.replace("%", "%%"))
    return template, operator.itemgetter(*used) if len(used) > 1 else (lambda v: (v[used[0]],))


def _fields(sw: SwitchIntent) -> tuple[tuple, list[str]] | None:
    """(shape key, field values in _stand_in's order), or None where the shape cannot hold the switch."""
    ports, mgmt, bgp, pairing, svis, bonds = sw.ports, sw.mgmt, sw.bgp, sw.pairing, sw.svis, sw.bonds
    snmp = bool(sw.services.snmp_users)  # the SNMP agent listens on eth0's address without its prefix
    peers = list(map(_PEER, ports))
    # the addresses among the fields, in their order, then the names and numbers in theirs
    own = [*([sw.loopback] if sw.loopback else ()),
           *(((mgmt.gateway,) if snmp else (mgmt.address, mgmt.gateway)) if mgmt else ())]
    port_addresses = [*filter(None, map(_ADDRESS, ports)), *itertools.chain.from_iterable(map(_SECONDARIES, ports))]
    svi_addresses = []
    for s in svis:
        if len({s.address, *s.secondaries}) != 1 + len(s.secondaries):
            return None  # one mapping's keys
        svi_addresses += (s.address, *s.secondaries, *((s.vrr,) if s.vrr else ()))
    # MAC addresses (a pair's, its VRR gateway's) YAML reads as numbers: quoted, each
    quoted = [*(s.vrr_mac for s in svis if s.vrr),
              *((pairing.system_mac, *((pairing.backup_ip,) if pairing.backup_ip else ())) if pairing else ())]
    nums = [*(b.pair_id for b in bonds), *((pairing.priority,) if pairing else ())]
    bgp_key, bgp_addresses, nbr_peers = None, [], []
    if bgp:
        nbrs = bgp.neighbors
        keys = tuple(map(_NBR_SHAPE, nbrs))
        if bgp.unnumbered:
            if len(set(map(operator.itemgetter(0), keys))) != len(keys):
                return None
        else:
            bgp_addresses = list(map(_NBR_ADDRESS, nbrs))
            if len(set(bgp_addresses)) != len(bgp_addresses):
                return None
        if len(set(bgp.networks)) != len(bgp.networks) or len(set(bgp.aggregates)) != len(bgp.aggregates):
            return None
        bgp_addresses += (*([bgp.router_id] if bgp.router_id else ()), *bgp.networks, *bgp.aggregates)
        nbr_peers = list(map(_PEER, nbrs))
        nums += (bgp.asn, *map(_REMOTE_AS, nbrs))
        bgp_key = (bgp.unnumbered, bgp.max_paths, bgp.border, bool(bgp.router_id), len(bgp.networks),
                   len(bgp.aggregates), keys)
    if not plain_names([sw.name]):  # the header's comment writes the name as it is
        return None
    bond_peers = [b.peer for b in bonds]
    before = [sw.name, *own, *peers, *port_addresses, *svi_addresses, *bond_peers]
    after = [*bgp_addresses, *nbr_peers]
    if (plain_names([*peers, *bond_peers, *nbr_peers]) and all_ipv4([*own, *port_addresses, *svi_addresses])
            and all_ipv4(bgp_addresses) and _INT.issuperset(map(type, nums))):
        # every value as it is, checked once for the switch; a MAC address (quoted) and a backup address each
        values = [*before, *map(yaml_scalar, quoted), *after, *map(str, nums)]
    else:  # an ASN "external", an IPv6 address: each value as render_nvue writes it
        values = [sw.name, *map(yaml_scalar, [*before[1:], *quoted, *after, *nums])]
    key = (sw.role, sw.model, sw.os_release, sw.notes, bool(sw.loopback),
           (mgmt.interface, mgmt.vrf, mgmt.address if snmp else None) if mgmt else None,
           tuple(map(_PORT_SHAPE, ports)), tuple(map(bool, map(_ADDRESS, ports))),
           tuple(map(len, map(_SECONDARIES, ports))), sw.breakouts, sw.vlans,
           tuple((s.vlan, len(s.secondaries), bool(s.vrr), s.vrr_mac if not s.vrr else "") for s in svis),
           tuple((b.name, b.members, b.access_vlan, b.edge) for b in bonds),
           (pairing.mode, pairing.peer_link, bool(pairing.backup_ip)) if pairing else None,
           sw.qos, sw.services, bgp_key)
    return key, values


def plain_names(names: list[str]) -> bool:
    joined = "\n".join(names)
    return (joined.isascii() and not joined.encode().translate(None, _NAME_CHARS)
            and joined.count("\n") == len(names) - 1 and min(map(len, names)) > 5
            and _NAME_FIRST.issuperset(map(operator.itemgetter(0), names)))


def all_ipv4(addresses: list[str]) -> bool:
    joined = "\n".join(addresses)
    return not addresses or (joined.count("\n") == len(addresses) - 1 and _ALL_IPV4(joined) is not None)


def _stand_in(sw: SwitchIntent, marks) -> SwitchIntent:
    """`sw` with a marker for each field, made in _fields' order of values (one copy per port and
    session: a shape's first switch is copied once, a leaf's hundred records among them)."""
    m = lambda: next(marks)  # noqa: E731
    name = m()
    loopback = m() if sw.loopback else ""
    mgmt = sw.mgmt
    if mgmt:
        mgmt = replace(mgmt, gateway=m()) if sw.services.snmp_users else replace(mgmt, address=m(), gateway=m())
    peers = [m() for _ in sw.ports]
    addresses = [m() if p.address else "" for p in sw.ports]
    secondaries = [tuple(m() for _ in p.secondaries) for p in sw.ports]
    ports = tuple(replace(p, peer=peer, address=address, secondaries=sec)
                  for p, peer, address, sec in zip(sw.ports, peers, addresses, secondaries, strict=True))
    svis = [replace(s, address=m(), secondaries=tuple(m() for _ in s.secondaries), vrr=m() if s.vrr else "")
            for s in sw.svis]
    bond_peers = [m() for _ in sw.bonds]
    svis = tuple(replace(s, vrr_mac=m()) if s.vrr else s for s in svis)
    pairing = sw.pairing
    if pairing:
        pairing = replace(pairing, system_mac=m(), backup_ip=m() if pairing.backup_ip else "")
    bgp = sw.bgp
    if bgp:
        nbrs = bgp.neighbors
        nbr_addresses = [n.address for n in nbrs] if bgp.unnumbered else [m() for _ in nbrs]
        router_id = m() if bgp.router_id else ""
        networks = tuple(m() for _ in bgp.networks)
        aggregates = tuple(m() for _ in bgp.aggregates)
        nbr_peers = [m() for _ in nbrs]
    bonds = tuple(replace(b, peer=peer, pair_id=m()) for b, peer in zip(sw.bonds, bond_peers, strict=True))
    if pairing:
        pairing = replace(pairing, priority=m())
    if bgp:
        asn = m()
        nbrs = tuple(replace(n, address=address, peer=peer, remote_as=m())
                     for n, address, peer in zip(nbrs, nbr_addresses, nbr_peers, strict=True))
        bgp = replace(bgp, asn=asn, router_id=router_id, networks=networks, aggregates=aggregates, neighbors=nbrs)
    return replace(sw, name=name, loopback=loopback, mgmt=mgmt, ports=ports, svis=svis, bonds=bonds,
                   pairing=pairing, bgp=bgp)
