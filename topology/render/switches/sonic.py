"""SwitchIntent -> SONiC config_db.json (FRR in split-unified mode: BGP lives in the one frr.conf).

Ports come from the switch's SONiC platform (sonic_platform.py): every front-panel port is in
BREAKOUT_CFG under a mode key platform.json has, and PORT holds exactly that mode's legs with the
platform's names, lanes and aliases. A planned port (swp50s1, as in cabling.csv and ipplan.csv)
is the leg its cage and sub-port name; its PORT description starts with that planned name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

from topology.catalog import SwitchModel
from topology.errors import SpecError
from topology.render.switches import sonic_platform
from topology.render.switches.intent import JUMBO_MTU, SwitchIntent
from topology.render.switches.sonic_buffers import buffer_tables

LOSSLESS_PROFILE = "AZURE_LOSSLESS"  # SONiC's conventional WRED/ECN profile name
QOS_MAP = "AZURE"
# the spec field that put a fabric's switches on SONiC: a refusal names it
FIELD_OF_FABRIC = {
    "compute": "compute_fabric.switch_os",
    "storage": "storage_fabric.switch_os",
    "inband": "management.inband.switch_os",
    "oob": "management.oob.switch_os",
}


# SONiC's device type picks the SKU's buffer defaults (buffers_defaults_t0/t1.j2): a switch that
# faces the nodes is a ToRRouter (t0), the tiers above LeafRouter (t1). The Mellanox SKUs ship no
# t2 defaults, so a SpineRouter would fail `config qos reload`.
SONIC_TYPE = {"leaf": "ToRRouter", "spine": "LeafRouter", "core": "LeafRouter"}


@dataclass(frozen=True)
class PortMap:
    """A switch's SONiC ports: the mode of every front-panel port, every leg, and where each
    planned port landed."""

    breakout: dict[str, str]  # parent EthernetN -> platform.json mode key
    legs: dict[str, tuple[sonic_platform.Leg, int]]  # EthernetN -> (leg, speed in Mb/s)
    planned: dict[str, str]  # planned port name -> EthernetN

    def name_of(self, planned: str) -> str:
        return self.planned[planned]


@cache
def _pattern(fmt: str) -> re.Pattern:
    return re.compile(re.escape(fmt).replace(r"\{cage\}", r"(?P<cage>\d+)").replace(r"\{sub\}", r"(?P<sub>\d+)"))


def _front(model: SwitchModel, planned: str) -> tuple[int, int]:
    """Planned port name -> (front-panel port, leg): swp50s1 -> (50, 1), swp7 -> (7, 0)."""
    for fmt in (model.breakout_name, model.port_name):
        m = fmt and _pattern(fmt).fullmatch(planned)
        if m:
            sub = m.groupdict().get("sub")
            return int(m.group("cage")), int(sub) - model.sub_base if sub is not None else 0
    raise ValueError(f"{planned}: not a {model.port_name} port name")


def port_map(sw: SwitchIntent, model: SwitchModel) -> PortMap:
    field = FIELD_OF_FABRIC[sw.fabric]
    if not model.sonic_platform:
        raise SpecError(field, f"sonic on {sw.model}: the catalog names no SONiC platform for this switch model")
    platform = sonic_platform.load(model.sonic_platform)
    want: dict[int, tuple[int, int, str]] = {}  # front port -> (legs, Mb/s, the planned cage for errors)
    for b in sw.breakouts:
        want[_front(model, b.cage)[0]] = (b.lanes, b.speed_gbps * 1000, b.cage)
    for p in sw.ports:
        want.setdefault(_front(model, p.name)[0], (1, p.speed_gbps * 1000, p.name))
    breakout: dict[str, str] = {}
    legs: dict[str, tuple[sonic_platform.Leg, int]] = {}
    for front in platform.ports:
        mode = front.default_mode
        if front.index in want:
            k, mbps, cage = want[front.index]
            mode = front.mode_for(k, mbps)
            if mode is None:
                raise SpecError(field, f"sonic on {sw.model}: {sw.name} {cage} needs {k} x {mbps // 1000 or mbps}G, "
                                       f"and SONiC's platform {platform.name} has no such breakout mode (its modes: "
                                       f"{', '.join(front.modes)}); run this fabric on cumulus or use a switch model "
                                       "whose platform has it")
        breakout[front.name] = mode
        speed = want[front.index][1] if front.index in want else sonic_platform.parse_mode(mode).speed_mbps
        for leg in front.legs(mode):
            legs[leg.name] = (leg, speed)
    by_front = {(leg.index, i): leg.name for f in platform.ports for i, leg in enumerate(f.legs(breakout[f.name]))}
    planned = {}
    for p in sw.ports:
        where = _front(model, p.name)
        if where not in by_front:
            raise SpecError(field, f"sonic on {sw.model}: {sw.name} {p.name} is no port of SONiC's platform "
                                   f"{platform.name}")
        planned[p.name] = by_front[where]
    return PortMap(breakout, legs, planned)


def config_db(sw: SwitchIntent, model: SwitchModel) -> dict:
    ports = port_map(sw, model)
    names = ports.planned
    db: dict = {
        # hwsku, platform and mac are the switch's own (its image and EEPROM): the push merges this
        # table key by key, so the plan names only what it decides
        "DEVICE_METADATA": {
            "localhost": {
                "hostname": sw.name,
                "type": SONIC_TYPE.get(sw.role, "ToRRouter"),
                # split-unified: bgpd reads the one frr.conf the plan writes (split deletes it at start)
                "docker_routing_config_mode": "split-unified",
                "default_pfcwd_status": "enable" if sw.qos and sw.qos.pfc_priorities else "disable",
            }
        },
        "BREAKOUT_CFG": {parent: {"brkout_mode": mode} for parent, mode in ports.breakout.items()},
        "PORT": {},
    }
    if sw.bgp:
        db["DEVICE_METADATA"]["localhost"]["bgp_asn"] = str(sw.bgp.asn)
        db["DEVICE_METADATA"]["localhost"]["bgp_router_id"] = sw.bgp.router_id
    for name, (leg, speed) in ports.legs.items():  # every leg: unplanned ones down
        db["PORT"][name] = {
            "alias": leg.alias,
            "lanes": ",".join(str(x) for x in leg.lanes),
            "index": str(leg.index),
            "speed": str(speed),
            "mtu": str(JUMBO_MTU),
            "admin_status": "down",
        }
    for p in sw.ports:
        name = ports.name_of(p.name)
        db["PORT"][name].update(
            {"speed": str(p.speed_gbps * 1000), "mtu": str(p.mtu), "admin_status": "up",
             "description": f"{p.name} to {p.peer}"}
        )
        if p.address:
            db.setdefault("INTERFACE", {})[name] = {}
            db["INTERFACE"][f"{name}|{p.address}"] = {}
            for extra in p.secondaries:  # a p2p rail port's pod gateway beside the /31
                db["INTERFACE"][f"{name}|{extra}"] = {}
        if p.access_vlan is not None:
            db.setdefault("VLAN_MEMBER", {})[f"Vlan{p.access_vlan}|{name}"] = {"tagging_mode": "untagged"}

    _port_channels(sw, names, db)
    for v in sw.vlans:
        db.setdefault("VLAN", {})[f"Vlan{v}"] = {"vlanid": str(v)}
    for svi in sw.svis:
        db.setdefault("VLAN_INTERFACE", {})[f"Vlan{svi.vlan}"] = {}
        db["VLAN_INTERFACE"][f"Vlan{svi.vlan}|{svi.address}"] = {}
        for extra in svi.secondaries:  # SONiC takes one primary subnet per VLAN; more are marked secondary
            db["VLAN_INTERFACE"][f"Vlan{svi.vlan}|{extra}"] = {"secondary": "true"}
        if svi.vrr:  # SONiC MCLAG: both peers carry the gateway address itself on the VLAN
            db["VLAN_INTERFACE"][f"Vlan{svi.vlan}|{svi.vrr}"] = {}
    if sw.loopback:
        db["LOOPBACK_INTERFACE"] = {"Loopback0": {}, f"Loopback0|{sw.loopback}": {}}
    if sw.mgmt:
        db["MGMT_PORT"] = {sw.mgmt.interface: {"alias": sw.mgmt.interface, "admin_status": "up"}}
        db["MGMT_INTERFACE"] = {f"{sw.mgmt.interface}|{sw.mgmt.address}": {"gwaddr": sw.mgmt.gateway}}
        db["MGMT_VRF_CONFIG"] = {"vrf_global": {"mgmtVrfEnabled": "true"}}
    if sw.bgp:
        # FRR owns BGP (frr.conf, split-unified); the table still lists the sessions for SONiC's tools.
        db["BGP_NEIGHBOR"] = {
            n.address: {"asn": str(n.remote_as), "name": n.peer, "local_addr": _local(sw, n.interface)}
            for n in sw.bgp.neighbors
            if n.address and isinstance(n.remote_as, int)  # "external" (the site's border) lives in frr.conf only
        }
    db.update(services(sw))
    db["LLDP_PORT"] = {ports.name_of(p.name): {"enabled": "true"} for p in sw.ports}  # every planned port
    if sw.qos:
        db.update(_qos(sw, ports, model))
        cables = {ports.name_of(p.name): p.cable_m for p in sw.ports}
        db.update(buffer_tables(FIELD_OF_FABRIC[sw.fabric], model.sonic_platform, db, cables))
    return db


SNMP_PORT = 161
PEER_LINK_CHANNEL = "PortChannel999"  # above any node bond's id (the SU's node count)
MCLAG_DOMAIN_ID = "1"  # one domain per pair: each switch is in exactly one


def _port_channels(sw: SwitchIntent, names: dict, db: dict) -> None:
    """Node bonds as PortChannels, MCLAG over the peer-link channel (SONiC has no EVPN-MH: an
    evpn_mh pair gets the PortChannels without the MCLAG tables)."""
    channels = [(f"PortChannel{b.pair_id}", b.members, b.access_vlan, b.edge) for b in sw.bonds]
    pair = sw.pairing
    mclag = pair is not None and pair.mode == "mlag" and bool(pair.peer_link)
    if mclag:
        channels.append((PEER_LINK_CHANNEL, pair.peer_link, None, False))
    for name, members, vlan, edge in channels:
        db.setdefault("PORTCHANNEL", {})[name] = {"admin_status": "up", "mtu": "9216", "min_links": "1"}
        if edge:  # SONiC's LACP fallback: Cumulus's lacp-bypass (PXE before the host runs LACP)
            db["PORTCHANNEL"][name]["fallback"] = "true"
        for m in members:
            db.setdefault("PORTCHANNEL_MEMBER", {})[f"{name}|{names[m]}"] = {}
        if vlan is not None:
            db.setdefault("VLAN_MEMBER", {})[f"Vlan{vlan}|{name}"] = {"tagging_mode": "untagged"}
    if mclag:
        for v in sw.vlans:  # the peer link carries every VLAN the bonds do
            db.setdefault("VLAN_MEMBER", {})[f"Vlan{v}|{PEER_LINK_CHANNEL}"] = {"tagging_mode": "tagged"}
        db["MCLAG_DOMAIN"] = {
            MCLAG_DOMAIN_ID: {"source_ip": pair.source_ip, "peer_ip": pair.peer_ip, "peer_link": PEER_LINK_CHANNEL}
        }
        db["MCLAG_INTERFACE"] = {
            f"{MCLAG_DOMAIN_ID}|PortChannel{b.pair_id}": {"if_type": "PortChannel"} for b in sw.bonds
        }
        # the session runs between the pair's own addresses on an SVI: SONiC keeps that VLAN's
        # addresses apart (not synced to the peer) only with MCLAG_UNIQUE_IP
        db["MCLAG_UNIQUE_IP"] = {
            f"Vlan{svi.vlan}": {"unique_ip": "enable"}
            for svi in sw.svis
            if svi.address.split("/")[0] == pair.source_ip
        }


def services(sw: SwitchIntent) -> dict:
    """switch_services as SONiC's tables (sonic-ntp, sonic-dns, sonic-syslog, sonic-gnmi): the
    servers through eth0's management VRF, the gNMI server where telemetry/gnmic.yml dials."""
    sv, vrf = sw.services, ("mgmt" if sw.mgmt else "default")  # a rack OOB switch: its own network
    out: dict = {}
    if sv.ntp:
        out["NTP"] = {"global": {"vrf": vrf}}
        out["NTP_SERVER"] = {ip: {"association_type": "server", "iburst": "on"} for ip in sv.ntp}
    if sv.dns:
        out["DNS_NAMESERVER"] = {ip: {} for ip in sv.dns}
    if sv.syslog:
        out["SYSLOG_SERVER"] = {ip: {"port": "514", "vrf": vrf} for ip in sv.syslog}
    if sv.gnmi_port is not None:
        out["GNMI"] = {"gnmi": {"port": str(sv.gnmi_port), "vrf": vrf}}
    if sv.tacacs:  # the passkey is added at push time (vault)
        out["TACPLUS"] = {"global": {"auth_type": sv.tacacs_auth}}
        out["TACPLUS_SERVER"] = {ip: {"priority": str(i + 1), "tcp_port": "49", "vrf": vrf}
                                 for i, ip in enumerate(sv.tacacs)}
    if sv.radius:  # the passkey is added at push time (vault)
        out["RADIUS"] = {"global": {"auth_type": sv.radius_auth}}
        out["RADIUS_SERVER"] = {ip: {"priority": str(i + 1), "auth_port": "1812", "vrf": vrf}
                                for i, ip in enumerate(sv.radius)}
    if sv.tacacs or sv.radius:  # logins try the servers, then local accounts
        out["AAA"] = {"authentication": {"login": ",".join([*(["tacacs+"] if sv.tacacs else []),
                                                            *(["radius"] if sv.radius else []), "local"])}}
    out["LLDP"] = {"GLOBAL": {"enabled": "true", "hello_time": str(sv.lldp[0]), "multiplier": str(sv.lldp[1])}}
    if sv.snmp_users:
        # authPriv, read-only; the two passwords are added at push time from the vault
        # (roles/switch_fabric, credentials.json): sonic-snmp makes SNMP_USER_ENCRYPTION_PASSWORD
        # mandatory, so this table is complete only as pushed
        out["SNMP_USER"] = {u.name: {"SNMP_USER_TYPE": "Priv", "SNMP_USER_PERMISSION": "RO",
                                     "SNMP_USER_AUTH_TYPE": u.auth.upper(), "SNMP_USER_ENCRYPTION_TYPE": u.priv.upper()}
                            for u in sv.snmp_users}
        if sw.mgmt:  # snmpd answers on eth0's address in the management VRF
            out["SNMP_AGENT_ADDRESS_CONFIG"] = {f"{sw.mgmt.address.split('/')[0]}|{SNMP_PORT}|{vrf}": {}}
    return out


def _local(sw: SwitchIntent, port: str) -> str:
    """The session's own address: its port's, or (a pair's peer-link session on vlan10) the SVI's."""
    svis = {f"vlan{s.vlan}": s.address for s in sw.svis}
    return next((p.address for p in sw.ports if p.name == port), svis.get(port, "")).split("/")[0]


# SONiC's Mellanox qos.json.j2 schedulers (DWRR 14 for the lossy queues, 15 for the lossless
# ones) plus a strict one for the CNP queue: NVIDIA's RoCE default, which that template lacks
SCHEDULERS = {
    "scheduler.0": {"type": "DWRR", "weight": "14"},
    "scheduler.1": {"type": "DWRR", "weight": "15"},
    "scheduler.strict": {"type": "STRICT"},
}
SCHEDULED_QUEUES = range(7)  # the queues qos.json.j2 binds (0-6; 7 stays the switch's)


def _qos(sw: SwitchIntent, ports: PortMap, model: SwitchModel) -> dict:
    q = sw.qos
    lossless = [(p, ports.name_of(p.name)) for p in sw.ports if p.lossless]
    dscp = {str(d): "0" for d in range(64)}
    dscp.update({str(d): str(tc) for d, tc in q.dscp_to_tc})
    cnp_tc = dict(q.dscp_to_tc)[q.cnp_dscp]
    pfc = ",".join(str(p) for p in q.pfc_priorities)
    out: dict = {
        "DSCP_TO_TC_MAP": {QOS_MAP: dscp},
        # a PFC priority's traffic class has its own priority group (the one PFC pauses)
        "TC_TO_PRIORITY_GROUP_MAP": {QOS_MAP: {str(tc): str(tc) if tc in q.pfc_priorities else "0" for tc in range(8)}},
        "TC_TO_QUEUE_MAP": {QOS_MAP: {str(tc): str(tc) for tc in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {QOS_MAP: {str(p): str(p) for p in range(8)}},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {QOS_MAP: {str(p): str(p) for p in q.pfc_priorities}},
        "SCHEDULER": SCHEDULERS,
        "WRED_PROFILE": {
            LOSSLESS_PROFILE: {
                "ecn": "ecn_all",
                "wred_green_enable": "true",
                "green_min_threshold": str(q.ecn_min_bytes),
                "green_max_threshold": str(q.ecn_max_bytes),
                "green_drop_probability": str(q.ecn_probability),
            }
        },
        "PORT_QOS_MAP": {},
        "QUEUE": {},
        "PFC_WD": {},
    }
    for _p, name in lossless:
        # the fields SONiC's Mellanox qos.json.j2 sets on every port, with the plan's priorities
        out["PORT_QOS_MAP"][name] = {"dscp_to_tc_map": QOS_MAP, "tc_to_pg_map": QOS_MAP, "tc_to_queue_map": QOS_MAP}
        if pfc:  # ECN-only ports (storage_fabric.qos: ecn) pause nothing
            out["PORT_QOS_MAP"][name].update({"pfc_to_queue_map": QOS_MAP, "pfc_to_pg_map": QOS_MAP,
                                              "pfc_enable": pfc, "pfcwd_sw_enable": pfc})
        for queue in SCHEDULED_QUEUES:
            row = {"scheduler": "scheduler.strict" if queue == cnp_tc
                   else "scheduler.1" if queue in q.pfc_priorities else "scheduler.0"}
            if queue in q.ecn_traffic_classes:
                row["wred_profile"] = LOSSLESS_PROFILE
            out["QUEUE"][f"{name}|{queue}"] = row
        if pfc:
            out["PFC_WD"][name] = {
                "action": q.pfcwd_action,
                "detection_time": str(q.pfcwd_detection_ms),
                "restoration_time": str(q.pfcwd_restoration_ms),
            }
    if pfc:
        out["PFC_WD"]["GLOBAL"] = {"POLL_INTERVAL": str(q.pfcwd_detection_ms // 2)}
    else:  # no PFC: no pause maps, no watchdog
        for table in ("PFC_WD", "MAP_PFC_PRIORITY_TO_QUEUE", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"):
            del out[table]
    return out


def render_config_db(sw: SwitchIntent, model: SwitchModel) -> str:
    return json.dumps(config_db(sw, model), indent=2, sort_keys=True) + "\n"
