"""NVUE startup.yaml of a compute-fabric switch (leaf, spine, core) straight from its cables, for a
shape already written: no intent, no Port or Neighbor per cable end (418k ports and 240k sessions
at 100k GPUs, most of the switch configs' CPU).

A compute switch's text is its shape's template (nvue_shape.py) filled with its numbers. Which
template is decided by a signature read off its cables: per cable end, in the layout's order, the
local port, speed and tier, whether the port holds an address, how many pod gateways it carries,
whether the far end is a BGP session; the switch's role and model; its management port; how many
networks and summaries it originates. Everything of the intent that is not a field (port order
and shapes, lossless ports, breakouts, session interfaces, services) follows from these, so two
switches of one signature share their shape key. The first switch of a signature is made by the
plain path (IntentInputs.intent, ShapeCache): its values must equal the ones read here, else the
signature stays with the plain path, as does any switch this reader does not write as it is (a
rail gateway or another bridged port, an eth0 cable ending here, no ASN or loopback, a value to
quote, a mapping's key twice): tests/test_nvue_fabric.py holds both paths to the same text."""

from __future__ import annotations

import operator

from topology.catalog import SwitchModel
from topology.layout.ipam import OOB_VLAN
from topology.layout.model import Device
from topology.layout.oob_routing import TIERS as OOB_TIERS
from topology.render.switches import sections
from topology.render.switches.build import IntentInputs, host_subnets
from topology.render.switches.credentials import render_credentials
from topology.render.switches.nvue import yaml_scalar
from topology.render.switches.nvue_shape import ShapeCache, all_ipv4, plain_names
from topology.render.switches.pairing import vrr_mac

# the compute fabric's cables with neither an access VLAN nor another special meaning on the switch
FABRIC_TIERS = frozenset({"node-leaf", "leaf-spine", "spine-core"})
_INT = frozenset({int})


class FabricShapes:
    """Compute and rack OOB switches' NVUE text by signature, for one render (nothing leaks between plans)."""

    def __init__(self, inputs: IntentInputs, shapes: ShapeCache):
        self.inputs, self.shapes = inputs, shapes
        self.cumulus = {fabric for fabric, os_name in inputs.os_of.items() if os_name == "cumulus"}
        self.unnumbered = inputs.spec.compute_fabric.bgp_peering == "unnumbered"
        self.snmp = bool(inputs.services.snmp_users)  # NVUE's SNMP agent: eth0's address is shape, not field
        # signature -> (template, order, credentials.json), or None: the plain path writes its switches
        self.known: dict[tuple, tuple | None] = {}
        self.orders: dict[tuple[str, ...], tuple[int, ...]] = {}  # port names in cable order -> sorted order

    def render(self, d: Device, fabric: str, model: SwitchModel) -> tuple[str, str | None] | None:
        """(startup.yaml, credentials.json or None) of switch `d`; None where the plain path writes it."""
        if fabric not in self.cumulus:
            return None
        if fabric == "compute":
            got = self._read_compute(d, model)
        elif d.role == "oob_switch":
            got = self._read_oob(d, model)
        else:
            return None
        if got is None:
            return None
        sig, values = got
        entry = self.known.get(sig, ())
        if entry == ():
            entry = self.known[sig] = self._learn(d, fabric, model, values)
        if entry is None:
            return None
        template, order, credentials = entry
        return template % order(values), credentials

    def _learn(self, d: Device, fabric: str, model: SwitchModel, values: list[str]) -> tuple | None:
        """The template of a new signature, from the plain path's intent of its first switch, when
        that intent's values are the ones read off the cables."""
        sw = self.inputs.intent(d, fabric, model)
        got = self.shapes.values_and_template(sw)
        if got is None or got[0] != values:
            return None
        template, order = got[1]
        return template, order, render_credentials(sw)

    def _order(self, names: tuple[str, ...]) -> tuple[int, ...]:
        """The cable ends by port name, stable, as sections.ports and sections.neighbors sort them."""
        order = self.orders.get(names)
        if order is None:
            order = self.orders[names] = tuple(sorted(range(len(names)), key=lambda k: sections.port_key(names[k])))
        return order

    def _mine(self, own: dict, model: SwitchModel) -> tuple[list[str], object]:
        """The switch's own addresses among the fields (loopback, eth0's), and eth0's part of the signature."""
        lo, mgmt = own.get("lo"), own.get(model.mgmt_port)
        mine = [*([lo.address] if lo is not None and lo.address else ()),
                *(((mgmt.peer,) if self.snmp else (mgmt.address, mgmt.peer)) if mgmt else ())]
        return mine, None if mgmt is None else (mgmt.address if self.snmp else True)

    def _read_compute(self, d: Device, model: SwitchModel) -> tuple[tuple, list[str]] | None:
        """(signature, field values in nvue_shape's order) of a compute switch, or None where the
        plain path must write it."""
        inputs, name, unnumbered = self.inputs, d.name, self.unnumbered
        by_end, asn_of = inputs.by_end, inputs.asn
        own = by_end[name]
        my_asn, lo = asn_of.get(name), own.get("lo")
        if my_asn is None or lo is None or not lo.address:
            return None
        if d.rail is not None and f"vlan{sections.rail_vlan(d.rail)}" in own:  # a rail's gateway: bridged ports
            return None
        ends, peers, addresses, sessions = [], [], [], {}  # ends: (port, speed, tier) of each cable end here
        asn_get, own_get, routed = asn_of.get, own.get, sections.routed_address
        for lk in inputs.links_of[name]:  # sections.far_end inlined: one call less per cable end
            if lk.a_device == name:
                local, peer, peer_port = lk.a_port, lk.b_device, lk.b_port
            else:
                local, peer, peer_port = lk.b_port, lk.a_device, lk.a_port
            tier = lk.tier
            if tier not in FABRIC_TIERS:
                if tier == "device-oob" and lk.b_device != name:  # this switch's eth0 cable: no port of its own
                    continue
                return None
            remote_as = asn_get(peer)
            if remote_as is not None:
                if unnumbered:
                    sessions[len(ends)] = ("", peer, remote_as)
                elif (theirs := by_end[peer].get(peer_port)) is not None:
                    sessions[len(ends)] = (theirs.address.partition("/")[0], peer, remote_as)
            ends.append((local, lk.speed_gbps, tier))
            peers.append(f"{peer}:{peer_port}")
            addresses.append(routed(own_get(local)))
        if not ends:
            return None
        names, speeds, tiers = zip(*ends, strict=True)
        order = self._order(names)
        pods = by_end.pods(name)
        extra: dict[str, list[str]] = {}  # a p2p rail port's pod gateways (sections.with_port_secondaries)
        for a in pods:
            if not a.interface.startswith("vlan"):
                extra.setdefault(a.interface, []).append(a.address)
        by_port = [k for k in order if k in sessions]
        nbrs = list(map(sessions.__getitem__, by_port))
        if unnumbered:
            if len({names[k] for k in by_port}) != len(by_port):
                return None
        elif len({n[0] for n in nbrs}) != len(nbrs):
            return None
        router_id = lo.address.split("/")[0]
        subnets = host_subnets(own, {}, d, pods)
        bgp = sections.bgp(my_asn, router_id, (), subnets, sections.aggregates(subnets, inputs.host_space), unnumbered)
        if len(set(bgp.networks)) != len(bgp.networks) or len(set(bgp.aggregates)) != len(bgp.aggregates):
            return None
        mine, mgmt_sig = self._mine(own, model)
        port_addresses = list(filter(None, map(addresses.__getitem__, order)))
        if extra:
            port_addresses += [s for k in order for s in extra.get(names[k], ())]
        bgp_addresses = [*([] if unnumbered else map(_ADDRESS, nbrs)), router_id, *bgp.networks, *bgp.aggregates]
        values = _plain_values(name, mine, list(map(peers.__getitem__, order)), port_addresses, [], [],
                               bgp_addresses, nbrs, my_asn)
        if values is None:
            return None
        sig = ("compute", d.role, d.model, names, speeds, tiers, tuple(map(bool, addresses)),
               tuple(len(extra.get(n, ())) for n in names) if extra else None, mgmt_sig,
               tuple(sessions), len(bgp.networks), len(bgp.aggregates))
        return sig, values

    def _read_oob(self, d: Device, model: SwitchModel) -> tuple[tuple, list[str]] | None:
        """(signature, field values) of a rack's OOB switch: its devices' eth0 and BMC ports in the
        rack's OOB VLAN, its routed uplinks to aggregation, its rack gateway (a VRR address); or
        None where the plain path must write it."""
        inputs, name = self.inputs, d.name
        by_end, asn_of = inputs.by_end, inputs.asn
        own = by_end[name]
        my_asn = asn_of.get(name)
        if my_asn is None or "lo" in own or by_end.pods(name):
            return None
        ends, peers, addresses, sessions = [], [], [], {}
        asn_get, own_get, routed = asn_of.get, own.get, sections.routed_address
        for lk in inputs.links_of[name]:  # sections.far_end inlined: one call less per cable end
            if lk.a_device == name:
                local, peer, peer_port = lk.a_port, lk.b_device, lk.b_port
            else:
                local, peer, peer_port = lk.b_port, lk.a_device, lk.a_port
            tier = lk.tier
            if tier == "device-oob":  # a device's management port here (in the OOB VLAN), or this switch's eth0
                if lk.b_device != name:
                    if local == model.mgmt_port:
                        continue
                    return None
            elif tier in OOB_TIERS:  # a routed /31 to aggregation: a session
                remote_as = asn_get(peer)
                if remote_as is not None and (theirs := by_end[peer].get(peer_port)) is not None:
                    sessions[len(ends)] = (theirs.address.partition("/")[0], peer, remote_as)
            else:
                return None
            ends.append((local, lk.speed_gbps, tier))
            peers.append(f"{peer}:{peer_port}")
            addresses.append(routed(own_get(local)))
        if not ends or not sessions:
            return None
        names, speeds, tiers = zip(*ends, strict=True)
        order = self._order(names)
        nbrs = [sessions[k] for k in order if k in sessions]
        if len({n[0] for n in nbrs}) != len(nbrs):
            return None
        svi, gw = own.get(f"vlan{OOB_VLAN}"), own.get(f"vlan{OOB_VLAN}-v0")
        svi_addresses, quoted, svi_sig = [], [], None
        if svi is not None:
            if gw is not None and not gw.address:
                return None
            svi_addresses = [svi.address, *([gw.address] if gw else ())]
            quoted = [yaml_scalar(vrr_mac(d.slot))] if gw else []
            svi_sig = gw is not None
        router_id = sections.fixed_router_id(name, own, inputs.links_of[name])
        bgp = sections.oob_bgp(my_asn, own, (), router_id)
        if not router_id or len(set(bgp.networks)) != len(bgp.networks):
            return None
        mine, mgmt_sig = self._mine(own, model)
        values = _plain_values(name, mine, list(map(peers.__getitem__, order)),
                               list(filter(None, map(addresses.__getitem__, order))), svi_addresses, quoted,
                               [*map(_ADDRESS, nbrs), router_id, *bgp.networks], nbrs, my_asn)
        if values is None:
            return None
        sig = ("oob", d.role, d.model, names, speeds, tiers, tuple(map(bool, addresses)), mgmt_sig,
               tuple(sessions), len(bgp.networks), svi_sig)
        return sig, values


def _plain_values(name: str, mine: list[str], peers: list[str], port_addresses: list[str], svi_addresses: list[str],
                  quoted: list[str], bgp_addresses: list[str], nbrs: list[tuple], asn: int) -> list[str] | None:
    """The field values in nvue_shape's order (name, own addresses, port peers, port addresses, SVI
    addresses, quoted MACs, BGP addresses, session peers, ASNs), where each is written as it is;
    None where nvue_shape would quote or write one otherwise."""
    nbr_peers = list(map(_PEER, nbrs))
    nums = [asn, *map(_REMOTE_AS, nbrs)]
    # nvue_shape's checks of the name, of the peers, of the addresses, each one pass over them all
    if not (plain_names([name, *peers, *nbr_peers]) and all_ipv4(mine + port_addresses + svi_addresses + bgp_addresses)
            and _INT.issuperset(map(type, nums))):
        return None
    return [name, *mine, *peers, *port_addresses, *svi_addresses, *quoted, *bgp_addresses, *nbr_peers,
            *map(str, nums)]


_ADDRESS, _PEER, _REMOTE_AS = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
