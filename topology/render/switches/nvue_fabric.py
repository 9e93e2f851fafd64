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
from topology.layout.model import Device
from topology.render.switches import sections
from topology.render.switches.build import IntentInputs, host_subnets
from topology.render.switches.credentials import render_credentials
from topology.render.switches.nvue_shape import ShapeCache, all_ipv4, plain_names

# the compute fabric's cables with neither an access VLAN nor another special meaning on the switch
FABRIC_TIERS = frozenset({"node-leaf", "leaf-spine", "spine-core"})
_INT = frozenset({int})


class FabricShapes:
    """Compute switches' NVUE text by signature, for one render (nothing leaks between plans)."""

    def __init__(self, inputs: IntentInputs, shapes: ShapeCache):
        self.inputs, self.shapes = inputs, shapes
        spec = inputs.spec
        self.on = inputs.os_of["compute"] == "cumulus"
        self.unnumbered = spec.compute_fabric.bgp_peering == "unnumbered"
        self.snmp = bool(inputs.services.snmp_users)  # NVUE's SNMP agent: eth0's address is shape, not field
        # signature -> (template, order, credentials.json), or None: the plain path writes its switches
        self.known: dict[tuple, tuple | None] = {}
        self.orders: dict[tuple[str, ...], tuple[int, ...]] = {}  # port names in cable order -> sorted order

    def render(self, d: Device, model: SwitchModel) -> tuple[str, str | None] | None:
        """(startup.yaml, credentials.json or None) of compute switch `d`; None where the plain path writes it."""
        got = self._read(d, model)
        if got is None:
            return None
        sig, values = got
        entry = self.known.get(sig, ())
        if entry == ():
            entry = self.known[sig] = self._learn(d, model, values)
        if entry is None:
            return None
        template, order, credentials = entry
        return template % order(values), credentials

    def _learn(self, d: Device, model: SwitchModel, values: list[str]) -> tuple | None:
        """The template of a new signature, from the plain path's intent of its first switch, when
        that intent's values are the ones read off the cables."""
        sw = self.inputs.intent(d, "compute", model)
        got = self.shapes.values_and_template(sw)
        if got is None or got[0] != values:
            return None
        template, order = got[1]
        return template, order, render_credentials(sw)

    def _read(self, d: Device, model: SwitchModel) -> tuple[tuple, list[str]] | None:
        """(signature, field values in nvue_shape's order), or None where the plain path must write it."""
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
        for lk in inputs.links_of[name]:
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
        order = self.orders.get(names)
        if order is None:  # ports and sessions by port name, stable, as sections.ports and neighbors sort them
            order = self.orders[names] = tuple(sorted(range(len(names)), key=lambda k: sections.port_key(names[k])))
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
        mgmt = own.get(model.mgmt_port)
        mine = [lo.address, *(((mgmt.peer,) if self.snmp else (mgmt.address, mgmt.peer)) if mgmt else ())]
        port_addresses = list(filter(None, map(addresses.__getitem__, order)))
        if extra:
            port_addresses += [s for k in order for s in extra.get(names[k], ())]
        sorted_peers = list(map(peers.__getitem__, order))
        nbr_peers = list(map(_PEER, nbrs))
        bgp_addresses = [*([] if unnumbered else map(_ADDRESS, nbrs)), router_id, *bgp.networks, *bgp.aggregates]
        nums = [my_asn, *map(_REMOTE_AS, nbrs)]
        if not (plain_names([name]) and plain_names(sorted_peers + nbr_peers) and all_ipv4(mine + port_addresses)
                and all_ipv4(bgp_addresses) and _INT.issuperset(map(type, nums))):
            return None  # a value nvue_shape quotes or writes otherwise: the plain path
        sig = (d.role, d.model, names, speeds, tiers, tuple(map(bool, addresses)),
               tuple(len(extra.get(n, ())) for n in names) if extra else None,
               None if mgmt is None else (mgmt.address if self.snmp else True),
               tuple(sessions), len(bgp.networks), len(bgp.aggregates))
        return sig, [name, *mine, *sorted_peers, *port_addresses, *bgp_addresses, *nbr_peers, *map(str, nums)]


_ADDRESS, _PEER, _REMOTE_AS = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
