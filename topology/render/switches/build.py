"""Layout -> one SwitchIntent per Ethernet switch, composed from the section functions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import netaddr

from topology import catalog
from topology.layout.ipam import OOB_VLAN
from topology.layout.model import Address, Device, Layout, Link
from topology.render.switches import inband_routing, pairing, sections
from topology.render.switches.intent import Qos, Services, SnmpUser, SwitchIntent
from topology.render.switches.own_addresses import OwnAddresses
from topology.render.switches.qos import ROCE_QOS, STORAGE_QOS
from topology.render.telemetry import GNMI_PORT

FABRIC_OF_ROLE = {
    "leaf": "compute",
    "spine": "compute",
    "core": "compute",
    "storage_leaf": "storage",
    "storage_spine": "storage",
    "inband_switch": "inband",
    "inband_core": "inband",
    "inband_spine": "inband",
    "oob_switch": "oob",
    "oob_aggregation": "oob",
}


def switch_os(spec, fabric: str) -> str:
    return {
        "compute": spec.compute_fabric.switch_os,
        "storage": spec.storage_fabric.switch_os,
        "inband": spec.management.inband.switch_os,
        "oob": spec.management.oob.switch_os,
    }[fabric]


def _access_vlans(device: Device, links: list[Link], own: dict[str, Address], layout: Layout) -> dict[str, int]:
    """Bridged host ports: per-leaf rails, storage host ports, in-band and OOB device ports."""
    out: dict[str, int] = {}
    name = device.name
    # a rail leaf's own gateway VLAN, looked up once (not per cable); far_end inlined: 418k ports at 100k GPUs
    rail = sections.rail_vlan(device.rail) if device.rail is not None else None
    if rail is not None and f"vlan{rail}" not in own:
        rail = None
    for lk in links:
        local = lk.a_port if lk.a_device == name else lk.b_port
        if lk.tier == "node-leaf" and rail is not None:
            out[local] = rail
        elif lk.tier in ("node-storage_leaf", "server-storage_leaf"):
            out[local] = sections.STORAGE_VLAN
        elif lk.tier in ("node-inband", "mgmt-core", "service-inband"):
            out[local] = sections.INBAND_VLAN
        elif lk.tier == "device-oob" and lk.b_device == device.name:
            out[local] = OOB_VLAN
    return out


def _gateways(device: Device, links: list[Link], own: dict[str, Address], layout: Layout) -> dict[int, str]:
    """Gateways this switch owns: the per-leaf rail subnet, or the storage subnet of its hosts
    (the hosts' planned gateway, with the subnet's prefix length)."""
    out: dict[int, str] = {}
    if device.rail is not None:
        vlan = sections.rail_vlan(device.rail)
        if f"vlan{vlan}" in own:
            out[vlan] = own[f"vlan{vlan}"].address
    if device.role == "storage_leaf":
        for lk in links:
            host = layout.addresses_by_device.get(lk.a_device, [])
            for a in host:
                if a.interface == lk.a_port and a.pool == "storage" and a.peer:
                    out[sections.STORAGE_VLAN] = f"{a.peer}/{a.network.split('/')[1]}"
    return out


def host_subnets(own: dict[str, Address], gateways: dict[int, str], device: Device,
                  pods: list[Address]) -> list[str]:
    """Subnets a leaf originates: its rail /31s (p2p) or its gateway subnets, and its nodes' pod prefixes."""
    nets = [a.network for a in own.values() if a.pool == "rails" and not a.interface.startswith("vlan")]
    nets += [str(netaddr.IPNetwork(gw).cidr) for gw in gateways.values()]
    nets += [a.network for a in pods]
    if device.role == "inband_switch":  # routed to storage (node_ports: inband_bond): its nodes' in-band subnet
        nets += sorted({a.network for a in own.values() if a.pool == "inband" and a.interface.startswith("vlan")})
    return nets


def build_intents(layout: Layout) -> list[SwitchIntent]:
    return list(iter_intents(layout))


def iter_intents(layout: Layout) -> Iterator[SwitchIntent]:
    """The switches' intents one at a time: a renderer writing each before the next holds one."""
    inputs = IntentInputs(layout)
    for d, fabric, model in inputs.switches:
        yield inputs.intent(d, fabric, model)


class IntentInputs:
    """What the switches' intents read, prepared once per render (each switch's cables, every
    device's own addresses, the ASNs, the pod's host space); `intent` makes one switch's intent
    from them. topology/render/switches/nvue_fabric.py reads them too."""

    def __init__(self, layout: Layout):
        self.layout = layout
        spec = layout.spec
        cat = catalog.load()
        switches = []  # (device, fabric, model) of each Ethernet switch, in the layout's order
        for d in layout.devices:
            fabric = FABRIC_OF_ROLE.get(d.role)
            model = cat.switches.get(d.model)
            if fabric is not None and model is not None and model.kind == "ethernet":
                switches.append((d, fabric, model))  # InfiniBand switches: the subnet manager's (opensm.py)
        # the switches' cables only: a list per node as well was half the appends (100k GPUs: 450k cables)
        links_of: dict[str, list[Link]] = {d.name: [] for d, _, _ in switches}
        of = links_of.get
        for lk in (*layout.links, *layout.border_links):
            if (mine := of(lk.a_device)) is not None:
                mine.append(lk)
            if (mine := of(lk.b_device)) is not None:
                mine.append(lk)
        by_end = OwnAddresses(layout.addresses_by_device)  # the peers' too: a session's far end
        asn = {a.device: a.asn for a in layout.asns}
        host_space = sections.HostSpace(
            a.network for a in layout.addresses if a.pool in ("rails", "storage", "rail_pods"))
        by_name = {d.name: d for d in layout.devices}
        partner = _partners(layout.devices)
        services = _services(spec.switch_services)
        no_bgp_services = replace(services, graceful_restart="off")  # made once, not per switch without BGP
        os_of = {f: switch_os(spec, f) for f in set(FABRIC_OF_ROLE.values())}
        self.spec, self.switches, self.links_of, self.by_end, self.asn = spec, switches, links_of, by_end, asn
        self.host_space, self.by_name, self.partner, self.os_of = host_space, by_name, partner, os_of
        self.services, self.no_bgp_services = services, no_bgp_services

    def intent(self, d: Device, fabric: str, model: catalog.SwitchModel) -> SwitchIntent:
        """One switch's intent (`d`, of `fabric`, a `model` of the catalog's)."""
        layout, spec, by_end, asn, by_name = self.layout, self.spec, self.by_end, self.asn, self.by_name
        links = self.links_of[d.name]
        own, pods = by_end[d.name], by_end.pods(d.name)  # a leaf's pod gateways share its rail SVI: kept apart
        data_links = [lk for lk in links if lk.tier != "device-oob" or lk.b_device == d.name]
        if d.role == "oob_aggregation" or d.role == "oob_switch":
            data_links = links  # an OOB switch's own eth0 uplink is a cable of the OOB fabric
        data_links = [
            lk
            for lk in data_links
            if not (lk.tier == "device-oob" and lk.a_device == d.name and lk.a_port == model.mgmt_port)
        ]
        qos = _fabric_qos(spec, fabric)
        qos_tiers = (sections.LOSSLESS_TIERS if fabric == "compute" else sections.STORAGE_RDMA_TIERS) if qos else ()
        port_list = sections.ports(d.name, data_links, own, _access_vlans(d, data_links, own, layout), set(qos_tiers))
        port_list = sections.with_port_secondaries(port_list, pods)
        gateways = _gateways(d, data_links, own, layout)
        unnumbered = fabric == "compute" and spec.compute_fabric.bgp_peering == "unnumbered"
        bgp = None
        pair = None
        if fabric == "inband" and d.name in self.partner:
            peer = by_name[self.partner[d.name]]
            theirs = {a.interface: a for a in layout.addresses_by_device.get(peer.name, [])}
            pair = pairing.pairing(spec.management.inband.pairing, d, peer, data_links, own, theirs, model.mgmt_port)
        # the OOB network's sessions (topology/layout/oob_routing.py): its switches, and the in-band
        # switches its uplinks reach; the site's: the in-band cores (topology/layout/border.py); the
        # in-band network's own: its routed /31s and the pairs' peer links (topology/layout/inband_routing.py)
        oob_nbrs = sections.oob_neighbors(d.name, data_links, by_end, asn) if fabric in ("oob", "inband") else ()
        site_nbrs = sections.border_neighbors(data_links, own, spec.addressing.border_asn) \
            if d.role == "inband_core" else ()
        inband_nbrs = ()
        if fabric == "inband" and d.name in asn:
            inband_nbrs = inband_routing.uplink_neighbors(d.name, data_links, by_end, asn) + \
                inband_routing.peer_link_neighbor(pair, asn[d.name], asn)
        if site_nbrs:
            nbrs = tuple(sorted(site_nbrs + oob_nbrs, key=lambda n: sections.port_key(n.interface))) + inband_nbrs
            summaries = (spec.addressing.inband, spec.addressing.oob)
            bgp = sections.border_bgp(asn[d.name], own, nbrs, summaries, tuple(spec.addressing.site_routes),
                                      announce=site_announce(spec))
        elif oob_nbrs:  # no switch with OOB sessions has a fabric's ASN
            bgp = sections.oob_bgp(asn[d.name], own, oob_nbrs + inband_nbrs,
                                   sections.fixed_router_id(d.name, own, data_links))
        elif d.role == "inband_spine" and d.name in asn:
            bgp = inband_routing.spine_bgp(asn[d.name], own, inband_nbrs)
        elif d.name in asn:
            subnets = host_subnets(own, gateways, d, pods)
            aggs = sections.aggregates(subnets, self.host_space)
            nbrs = sections.neighbors(d.name, data_links, by_end, asn, unnumbered)
            if fabric == "inband":  # the routed uplinks are among `nbrs` already; add the peer link's
                nbrs += inband_routing.peer_link_neighbor(pair, asn[d.name], asn)
            bgp = sections.bgp(asn[d.name], sections.loopback(own).split("/")[0], nbrs, subnets, aggs, unnumbered)
            if not bgp.router_id:  # a routed in-band switch without a loopback (not storage_converged)
                bgp = replace(bgp, router_id=inband_routing.router_id(own))
        vlans = sorted({p.access_vlan for p in port_list if p.access_vlan is not None} | set(gateways))
        svis = sections.gateway_svis(gateways, pods)
        oob_svi = f"vlan{OOB_VLAN}"
        if oob_svi in own and d.role == "oob_switch":  # the rack subnet's gateway: a VRR address (mgmt_net.py)
            gw = own.get(f"{oob_svi}-v0")
            svis += (sections.Svi(OOB_VLAN, own[oob_svi].address, gw.address if gw else "",
                                  pairing.vrr_mac(d.slot) if gw else ""),)
        bonds = ()
        if fabric == "inband":
            bonds = pairing.bonds(d.name, data_links, by_name, spec.nodes_per_su)
            members = {m for b in bonds for m in b.members}
            port_list = tuple(replace(p, access_vlan=None) if p.name in members else p for p in port_list)
            for gw in pairing.gateway_svis(own, d):  # vlan10, and the appliances' vlan11+ on the services pair
                svis += (gw,)
                vlans = sorted(set(vlans) | {gw.vlan})
            if d.role == "inband_core" or d.su is None:
                bonds = pairing.subnet_vlans(bonds, own, layout.addresses_by_device)
            if spec.switch_services.host_bond_edge:
                bonds = tuple(replace(b, edge=True) for b in bonds)
        return SwitchIntent(
            name=d.name,
            role=d.role,
            model=d.model,
            os=self.os_of[fabric],
            fabric=fabric,
            ports=port_list,
            breakouts=sections.breakouts(model, port_list),
            loopback=sections.loopback(own),
            mgmt=sections.mgmt(model, own),
            bgp=bgp,
            vlans=tuple(vlans),
            svis=svis,
            bonds=bonds,
            pairing=pair,
            qos=qos,
            notes=_notes(d.role),
            services=self.services if bgp else self.no_bgp_services,
            os_release=_os_release(spec, self.os_of[fabric]),
        )


def _fabric_qos(spec, fabric: str) -> Qos | None:
    """RDMA QoS of a fabric: lossless RoCE on a RoCE compute fabric; storage_fabric.qos on storage."""
    if fabric == "compute":
        return ROCE_QOS if spec.compute_fabric.kind == "roce" else None
    return STORAGE_QOS[spec.storage_fabric.qos] if fabric == "storage" else None


def site_announce(spec) -> tuple[str, ...]:
    """The summaries the cores may announce to the site: the in-band pool (the mgmt nodes' and every
    node's in-band subnet), and the OOB pool (every BMC) only where management.oob.announce_to_site."""
    return (spec.addressing.inband,) + ((spec.addressing.oob,) if spec.management.oob.announce_to_site else ())


def _services(ss) -> Services:
    return Services(ntp=tuple(ss.ntp_servers), dns=tuple(ss.dns_servers), syslog=tuple(ss.syslog_servers),
                    gnmi_port=GNMI_PORT if ss.gnmi_server else None, graceful_restart=ss.bgp_graceful_restart,
                    bfd=(ss.bfd_interval_ms, ss.bfd_multiplier) if ss.bgp_bfd else None,
                    snmp_users=tuple(SnmpUser(u.name, u.auth, u.priv) for u in ss.snmp_users),
                    lldp=(ss.lldp_tx_interval_s, ss.lldp_hold_multiplier),
                    local_users=tuple((u.name, u.role) for u in ss.local_users),
                    tacacs=tuple(ss.tacacs_servers), tacacs_auth=ss.tacacs_auth,
                    radius=tuple(ss.radius_servers), radius_auth=ss.radius_auth)


def _os_release(spec, os_name: str) -> str:
    return spec.switch_software.cumulus_release if os_name == "cumulus" else ""


def _partners(devices: list[Device]) -> dict[str, str]:
    """The other switch of each in-band pair: an SU's two in-band switches, in-band cores 0 and 1."""
    groups: dict[object, list[str]] = {}
    svc_pair = any(d.role == "inband_switch" and d.su is None for d in devices)  # three-tier in-band
    for d in devices:
        if d.role == "inband_switch":  # pair ordinal: an SU's pairs, then the services pair
            groups.setdefault(("pair", d.slot // 2), []).append(d.name)
        elif d.role == "inband_core" and d.slot < 2 and not svc_pair:
            groups.setdefault("cores", []).append(d.name)
    out = {}
    for names in groups.values():
        if len(names) == 2:
            out[names[0]], out[names[1]] = names[1], names[0]
    return out


def _notes(role: str) -> tuple[str, ...]:
    if role == "oob_aggregation":
        return ("OOB rack gateways: on the racks' OOB switches (vlan2-v0), routed here over /31s",)
    return ()
