"""SwitchIntent -> SONiC config_db.json (FRR in split mode: BGP lives in frr.conf).

SONiC names front-panel ports Ethernet<first lane>; the planned name (swp1, swp1s0) stays as the
port's alias, so config_db still joins to cabling.csv and ipplan.csv.
"""

from __future__ import annotations

import json

from topology.catalog import SwitchModel
from topology.render.switches.intent import SwitchIntent

LOSSLESS_PROFILE = "AZURE_LOSSLESS"  # SONiC's conventional WRED/ECN profile name
QOS_MAP = "AZURE"


def lanes_per_cage(model: SwitchModel) -> int:
    """SerDes lanes behind one cage: 8 (400G/800G), 4 (QSFP28 100G), 1 (RJ45)."""
    if model.cage_speed_gbps >= 400:
        return 8
    return 4 if model.cage_speed_gbps >= 40 else 1


def sonic_ports(model: SwitchModel) -> dict[str, tuple[str, list[int]]]:
    """Planned port name -> (SONiC name, lanes), for every port at every breakout the model has."""
    per = lanes_per_cage(model)
    out: dict[str, tuple[str, list[int]]] = {}
    for cage in range(1, model.cages + 1):
        first = (cage - 1) * per
        out[model.port_name.format(cage=cage, sub=model.sub_base)] = (
            f"Ethernet{first}",
            list(range(first, first + per)),
        )
        if model.breakout_name:
            for split in model.lanes.values():
                if split > 1 and per % split == 0:
                    width = per // split
                    for sub in range(split):
                        lane0 = first + sub * width
                        name = model.breakout_name.format(cage=cage, sub=model.sub_base + sub)
                        out.setdefault(name, (f"Ethernet{lane0}", list(range(lane0, lane0 + width))))
    for up in range(model.uplink_cages):  # QSFP uplinks after the RJ45 ports (SN2201: swp49-52)
        first = model.cages * per + up * 4
        name = model.port_name.format(cage=model.cages + 1 + up, sub=model.sub_base)
        out[name] = (f"Ethernet{first}", list(range(first, first + 4)))
    return out


def config_db(sw: SwitchIntent, model: SwitchModel) -> dict:
    names = sonic_ports(model)
    db: dict = {
        "DEVICE_METADATA": {
            "localhost": {
                "hostname": sw.name,
                "hwsku": model.description.split(",")[0],
                "platform": f"x86_64-nvidia_{sw.model}-r0",
                "type": {"leaf": "LeafRouter", "spine": "SpineRouter", "core": "SpineRouter"}.get(sw.role, "ToRRouter"),
                "docker_routing_config_mode": "split",
                "default_pfcwd_status": "enable" if sw.qos else "disable",
            }
        },
        "PORT": {},
    }
    if sw.bgp:
        db["DEVICE_METADATA"]["localhost"]["bgp_asn"] = str(sw.bgp.asn)
        db["DEVICE_METADATA"]["localhost"]["bgp_router_id"] = sw.bgp.router_id
    for b in sw.breakouts:
        db.setdefault("BREAKOUT_CFG", {})[names[b.cage][0]] = {"brkout_mode": f"{b.lanes}x{b.speed_gbps}G"}
    for p in sw.ports:
        name, lanes = names[p.name]
        db["PORT"][name] = {
            "alias": p.name,
            "lanes": ",".join(str(x) for x in lanes),
            "speed": str(p.speed_gbps * 1000),
            "mtu": str(p.mtu),
            "admin_status": "up",
            "description": p.peer,
        }
        if p.address:
            db.setdefault("INTERFACE", {})[name] = {}
            db["INTERFACE"][f"{name}|{p.address}"] = {}
        if p.access_vlan is not None:
            db.setdefault("VLAN_MEMBER", {})[f"Vlan{p.access_vlan}|{name}"] = {"tagging_mode": "untagged"}
    _port_channels(sw, names, db)
    for v in sw.vlans:
        db.setdefault("VLAN", {})[f"Vlan{v}"] = {"vlanid": str(v)}
    for svi in sw.svis:
        db.setdefault("VLAN_INTERFACE", {})[f"Vlan{svi.vlan}"] = {}
        db["VLAN_INTERFACE"][f"Vlan{svi.vlan}|{svi.address}"] = {}
        if svi.vrr:  # SONiC MCLAG: both peers carry the gateway address itself on the VLAN
            db["VLAN_INTERFACE"][f"Vlan{svi.vlan}|{svi.vrr}"] = {}
    if sw.loopback:
        db["LOOPBACK_INTERFACE"] = {"Loopback0": {}, f"Loopback0|{sw.loopback}": {}}
    if sw.mgmt:
        db["MGMT_PORT"] = {sw.mgmt.interface: {"alias": sw.mgmt.interface, "admin_status": "up"}}
        db["MGMT_INTERFACE"] = {f"{sw.mgmt.interface}|{sw.mgmt.address}": {"gwaddr": sw.mgmt.gateway}}
        db["MGMT_VRF_CONFIG"] = {"vrf_global": {"mgmtVrfEnabled": "true"}}
    if sw.bgp:
        # split mode: FRR owns BGP (frr.conf); the table still lists the sessions for SONiC's tools.
        db["BGP_NEIGHBOR"] = {
            n.address: {"asn": str(n.remote_as), "name": n.peer, "local_addr": _local(sw, n.interface)}
            for n in sw.bgp.neighbors
            if n.address and isinstance(n.remote_as, int)  # "external" (the site's border) lives in frr.conf only
        }
    if sw.qos:
        db.update(_qos(sw, names))
    return db


PEER_LINK_CHANNEL = "PortChannel999"  # above any node bond's id (the SU's node count)
MCLAG_DOMAIN_ID = "1"  # one domain per pair: each switch is in exactly one


def _port_channels(sw: SwitchIntent, names: dict, db: dict) -> None:
    """Node bonds as PortChannels, MCLAG over the peer-link channel (SONiC has no EVPN-MH: an
    evpn_mh pair gets the PortChannels without the MCLAG tables)."""
    channels = [(f"PortChannel{b.pair_id}", b.members, b.access_vlan) for b in sw.bonds]
    pair = sw.pairing
    mclag = pair is not None and pair.mode == "mlag" and bool(pair.peer_link)
    if mclag:
        channels.append((PEER_LINK_CHANNEL, pair.peer_link, None))
    for name, members, vlan in channels:
        db.setdefault("PORTCHANNEL", {})[name] = {"admin_status": "up", "mtu": "9216", "min_links": "1"}
        for m in members:
            db.setdefault("PORTCHANNEL_MEMBER", {})[f"{name}|{names[m][0]}"] = {}
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


def _local(sw: SwitchIntent, port: str) -> str:
    """The session's own address: its port's, or (a pair's peer-link session on vlan10) the SVI's."""
    svis = {f"vlan{s.vlan}": s.address for s in sw.svis}
    return next((p.address for p in sw.ports if p.name == port), svis.get(port, "")).split("/")[0]


def _qos(sw: SwitchIntent, names: dict) -> dict:
    q = sw.qos
    lossless = [names[p.name][0] for p in sw.ports if p.lossless]
    dscp = {str(d): "0" for d in range(64)}
    dscp.update({str(d): str(tc) for d, tc in q.dscp_to_tc})
    pfc = ",".join(str(p) for p in q.pfc_priorities)
    out: dict = {
        "DSCP_TO_TC_MAP": {QOS_MAP: dscp},
        "TC_TO_PRIORITY_GROUP_MAP": {QOS_MAP: {str(tc): ("3" if tc in q.pfc_priorities else "0") for tc in range(8)}},
        "TC_TO_QUEUE_MAP": {QOS_MAP: {str(tc): str(tc) for tc in range(8)}},
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
    for name in lossless:
        out["PORT_QOS_MAP"][name] = {
            "dscp_to_tc_map": QOS_MAP,
            "tc_to_pg_map": QOS_MAP,
            "tc_to_queue_map": QOS_MAP,
            "pfc_enable": pfc,
        }
        for tc in q.ecn_traffic_classes:
            out["QUEUE"][f"{name}|{tc}"] = {"wred_profile": LOSSLESS_PROFILE}
        out["PFC_WD"][name] = {
            "action": q.pfcwd_action,
            "detection_time": str(q.pfcwd_detection_ms),
            "restoration_time": str(q.pfcwd_restoration_ms),
        }
    out["PFC_WD"]["GLOBAL"] = {"POLL_INTERVAL": str(q.pfcwd_detection_ms // 2)}
    return out


def render_config_db(sw: SwitchIntent, model: SwitchModel) -> str:
    return json.dumps(config_db(sw, model), indent=2, sort_keys=True) + "\n"
