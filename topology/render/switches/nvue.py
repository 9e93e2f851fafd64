"""SwitchIntent -> NVIDIA Cumulus Linux 5.x NVUE startup.yaml (`nv config replace` input)."""

from __future__ import annotations

import functools
import re

from topology.render.files import GENERATED
from topology.render.switches.frr import BORDER_IN, BORDER_OUT, POD_OUT, SITE_IN
from topology.render.switches.intent import BorderPolicy, Port, Qos, SwitchIntent


def _speed(gbps: int) -> str:
    return f"{gbps}G"


def _interfaces(sw: SwitchIntent) -> dict:
    out: dict = {}
    if sw.loopback:
        out["lo"] = {"type": "loopback", "ip": {"address": {sw.loopback: {}}}}
    if sw.mgmt:
        out[sw.mgmt.interface] = {
            "type": "eth",
            "ip": {"address": {sw.mgmt.address: {}}, "vrf": sw.mgmt.vrf},
        }
    for b in sw.breakouts:
        out[b.cage] = {"type": "swp", "link": {"breakout": {f"{b.lanes}x": {}}}}
    for p in sw.ports:
        out[p.name] = _PortBlock(p)
    out.update(_bonds(sw))
    for svi in sw.svis:
        ip: dict = {"address": {svi.address: {}}}
        if svi.vrr:
            ip["vrr"] = {"address": {svi.vrr: {}}, "mac-address": svi.vrr_mac, "state": {"up": {}}}
        out[f"vlan{svi.vlan}"] = {"type": "svi", "vlan": svi.vlan, "ip": ip}
    return out


class _PortBlock:
    """A switch port's NVUE block from a fixed template: ports are most of a switch's lines (64 to
    128 a leaf), and writing each from a nested dict was most of the render at 100k GPUs. The
    shape: type, description, link (mtu, speed, state up), then ip address, bridge access VLAN
    and the PFC watchdog where they apply."""

    __slots__ = ("port",)

    def __init__(self, port: Port):
        self.port = port

    def write(self, pad: str, out: list[str]) -> None:
        p = self.port
        # peer and address are the port's own: written without the memo, which they would only churn
        out.append(f"{pad}type: swp\n{pad}description: {_plain_or_quoted(p.peer)}\n")
        out.append(_link_lines(pad, p.mtu, p.speed_gbps))
        if p.address:
            out.append(f"{pad}ip:\n{pad}  address:\n{pad}    {_plain_or_quoted(p.address)}: {{}}\n")
        if p.access_vlan is not None:
            vlan = _scalar(p.access_vlan)
            out.append(f"{pad}bridge:\n{pad}  domain:\n{pad}    br_default:\n{pad}      access: {vlan}\n")
        if p.lossless:
            out.append(f"{pad}qos:\n{pad}  pfc-watchdog:\n{pad}    state: enabled\n")


def _bonds(sw: SwitchIntent) -> dict:
    """Per-node bonds (MLAG ids or EVPN-MH segments) and the MLAG peer link."""
    out: dict = {}
    pair = sw.pairing
    for b in sw.bonds:
        bond: dict = {"member": {m: {} for m in b.members}}
        iface: dict = {"type": "bond", "description": b.peer, "bond": bond}
        if pair and pair.mode == "mlag":
            bond["mlag"] = {"enable": "on", "id": b.pair_id}
        elif pair:
            iface["evpn"] = {
                "multihoming": {
                    "segment": {
                        "enable": "on",
                        "local-id": b.pair_id,
                        "mac-address": pair.system_mac,
                        "df-preference": pair.priority,
                    }
                }
            }
        if b.access_vlan is not None:
            iface["bridge"] = {"domain": {"br_default": {"access": b.access_vlan}}}
        out[b.name] = iface
    if pair and pair.peer_link:
        out["peerlink"] = {"type": "peerlink", "bond": {"member": {m: {} for m in pair.peer_link}}}
        out["peerlink.4094"] = {"type": "sub", "base-interface": "peerlink", "vlan": 4094}
    return out


def _pairing(sw: SwitchIntent) -> dict:
    pair = sw.pairing
    if pair.mode == "mlag":
        mlag: dict = {"enable": "on", "mac-address": pair.system_mac, "peer-ip": "linklocal", "priority": pair.priority}
        if pair.backup_ip:
            mlag["backup"] = {pair.backup_ip: {"vrf": sw.mgmt.vrf if sw.mgmt else "mgmt"}}
        return {"mlag": mlag}
    return {"evpn": {"enable": "on", "multihoming": {"enable": "on"}}}


def _bgp(sw: SwitchIntent) -> dict:
    b = sw.bgp
    neighbors = {}
    for n in b.neighbors:
        if b.unnumbered:
            neighbors[n.interface] = {"type": "unnumbered", "remote-as": "external", "description": n.peer}
        else:
            neighbors[n.address] = {"type": "numbered", "remote-as": n.remote_as, "description": n.peer}
        if b.border and n.site:
            policy = {"inbound": {"route-map": BORDER_IN}, "outbound": {"route-map": BORDER_OUT}}
            neighbors[n.interface if b.unnumbered else n.address]["address-family"] = {
                "ipv4-unicast": {"policy": policy}}
        if n.next_hop_self:  # iBGP across a pair's peer link (topology/inband_routing.py)
            neighbors[n.address]["address-family"] = {"ipv4-unicast": {"nexthop-setting": "self"}}
    ipv4 = {
        "enable": "on",
        "multipaths": {"ebgp": b.max_paths},
        "network": {net: {} for net in b.networks},
    }
    if b.aggregates:
        ipv4["aggregate-route"] = {agg: {"summary-only": "on"} for agg in b.aggregates}
    return {
        "router": {
            "bgp": {
                "enable": "on",
                "router-id": b.router_id,
                "path-selection": {"multipath": {"aspath-ignore": "on"}},
                "address-family": {"ipv4-unicast": ipv4},
                "neighbor": neighbors,
            }
        }
    }


def _border_policy(p: BorderPolicy) -> dict:
    """`router policy` of the border sessions (as frr.py renders them): the site's routes in, the
    pod's summaries out, nothing when the core holds no management subnet."""
    def plist(prefixes: tuple[str, ...]) -> dict:
        return {"rule": {str(10 * (i + 1)): {"action": "permit", "match": {pfx: {}}} for i, pfx in enumerate(prefixes)}}

    def rmap(plist_name: str | None) -> dict:
        if plist_name is None:
            return {"rule": {"10": {"action": {"deny": {}}}}}
        return {"rule": {"10": {"action": {"permit": {}}, "match": {"type": "ipv4", "ip-prefix-list": plist_name}}}}

    lists = {SITE_IN: plist(p.accept)}
    if p.announce:
        lists[POD_OUT] = plist(p.announce)
    return {"prefix-list": lists,
            "route-map": {BORDER_IN: rmap(SITE_IN), BORDER_OUT: rmap(POD_OUT if p.announce else None)}}


def _qos(q: Qos) -> dict:
    return {
        "roce": {"enable": "on", "mode": "lossless"},
        "mapping": {
            "default-global": {
                "trust": "l3",
                "dscp": {str(dscp): {"switch-priority": tc} for dscp, tc in q.dscp_to_tc},
            }
        },
        "pfc": {
            "default-global": {
                "switch-priority": {str(p): {} for p in q.pfc_priorities},
                "rx": "enable",
                "tx": "enable",
            }
        },
        "congestion-control": {
            "default-global": {
                "traffic-class": {
                    str(tc): {
                        "ecn": "enable",
                        "red": "disable",
                        "min-threshold": q.ecn_min_bytes,
                        "max-threshold": q.ecn_max_bytes,
                        "probability": q.ecn_probability,
                    }
                    for tc in q.ecn_traffic_classes
                }
            }
        },
        "pfc-watchdog": {"polling-interval": q.pfcwd_detection_ms // 2, "robustness": 3},
    }


def render_nvue(sw: SwitchIntent) -> str:
    body: dict = {
        "system": {"hostname": sw.name},
        "interface": _interfaces(sw),
    }
    if sw.vlans:
        body["bridge"] = {"domain": {"br_default": {"vlan": {str(v): {} for v in sw.vlans}}}}
    if sw.pairing:
        body.update(_pairing(sw))
    if sw.bgp:
        body["router"] = {"bgp": {"enable": "on", "autonomous-system": sw.bgp.asn, "router-id": sw.bgp.router_id}}
        if sw.bgp.border:
            body["router"]["policy"] = _border_policy(sw.bgp.border)
    vrf: dict = {}
    if sw.bgp:
        vrf["default"] = _bgp(sw)
    if sw.mgmt:
        vrf[sw.mgmt.vrf] = {"router": {"static": {"0.0.0.0/0": {"via": {sw.mgmt.gateway: {}}}}}}
    if vrf:
        body["vrf"] = vrf
    if sw.qos:
        body["qos"] = _qos(sw.qos)
    header = f"# {GENERATED}\n# {sw.name} ({sw.role}, {sw.model}): NVIDIA Cumulus Linux 5.x NVUE\n"
    header += "".join(f"# note: {n}\n" for n in sw.notes)
    out = [header, "- set:\n"]
    _emit(body, "    ", out)
    return "".join(out)


# A block-YAML writer for this one shape (nested mappings of plain scalars): PyYAML's representer
# took 20 s for roce-8k's 1,087 files, and libyaml's CSafeDumper (same bytes) is still about 8x
# slower than this writer. tests/test_switches.py proves yaml.safe_load reads back the same
# structure for every switch. Plain recursion into one list and a memo of scalars: a switch's
# names, speeds and addresses repeat across its ports and across switches.
_PLAIN = re.compile(r"[A-Za-z_][\w./:-]*|[0-9]+(\.[0-9]+){3}(/[0-9]+)?|[0-9]+[A-Za-z]+").fullmatch
_YAML_WORDS = {"on", "off", "yes", "no", "true", "false", "null", "y", "n", "~"}
_LONGEST_WORD = max(map(len, _YAML_WORDS))


def _plain_or_quoted(v) -> str:
    if v.__class__ is not str:  # most scalars are strings: names, ports, addresses
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        v = str(v)
    if _PLAIN(v) and (len(v) > _LONGEST_WORD or v.lower() not in _YAML_WORDS):
        return v
    return "'" + v.replace("'", "''") + "'"


_scalar = functools.lru_cache(maxsize=1 << 16, typed=True)(_plain_or_quoted)  # typed: True == 1 as a key


@functools.lru_cache(maxsize=256)  # a few (indent, mtu, speed) shapes serve every port of the pod
def _link_lines(pad: str, mtu: int, speed_gbps: int) -> str:
    return (f"{pad}link:\n{pad}  mtu: {_scalar(mtu)}\n{pad}  speed: {_scalar(_speed(speed_gbps))}\n"
            f"{pad}  state:\n{pad}    up: {{}}\n")


def _emit(node: dict, pad: str, out: list[str]) -> None:
    for k, v in node.items():
        if v.__class__ is dict:
            if v:
                out.append(f"{pad}{_scalar(k)}:\n")
                _emit(v, pad + "  ", out)
            else:
                out.append(f"{pad}{_scalar(k)}: {{}}\n")
        elif v.__class__ is _PortBlock:
            out.append(f"{pad}{_scalar(k)}:\n")
            v.write(pad + "  ", out)
        else:
            out.append(f"{pad}{_scalar(k)}: {_scalar(v)}\n")
