"""SwitchIntent -> NVIDIA Cumulus Linux 5.x NVUE startup.yaml (`nv config replace` input)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from topology.render.files import GENERATED
from topology.render.switches.frr import BORDER_IN, BORDER_OUT, POD_OUT, SITE_IN
from topology.render.switches.intent import BorderPolicy, Port, Qos, SwitchIntent
from topology.spec import CUMULUS_RELEASES
from topology.spec import release_key as _release_key


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a Cumulus release spells the same intent. NVIDIA's NVUE object model changed at 5.15:
    an interface's `ip` became `ipv4` (its VRF moved up to the interface), every `enable: on|off`
    became `state: enabled|disabled`, the VRR gateway's up/down object became `vrr-state`, and a
    BGP neighbor's BFD timers moved into a profile under `router bfd`.
    tests/test_nvue_model.py judges both spellings by each release's own model."""

    ip: str
    switch: str  # the key that turns a feature on
    on: str  # its value, and the value of on/off options (aspath-ignore, summary-only)
    vrf_on_interface: bool
    vrr_state: str
    bfd_profiles: bool  # BFD timers in a `router bfd profile` the neighbor names, or on the neighbor itself

    def enabled(self) -> dict:
        return {self.switch: self.on}


ENABLE_ON = Dialect(ip="ip", switch="enable", on="on", vrf_on_interface=False, vrr_state="state", bfd_profiles=False)
STATE_ENABLED = Dialect(ip="ipv4", switch="state", on="enabled", vrf_on_interface=True, vrr_state="vrr-state",
                        bfd_profiles=True)
BFD_PROFILE = "fabric"
_STATE_SINCE = (5, 15)


release_key = functools.lru_cache(maxsize=64)(_release_key)  # every switch of a pod names one release


@functools.lru_cache(maxsize=64)
def dialect(release: str) -> Dialect:
    """The release's dialect; "" (an intent built without a spec) is the newest release."""
    return STATE_ENABLED if release_key(release or CUMULUS_RELEASES[-1]) >= _STATE_SINCE else ENABLE_ON


def _speed(gbps: int) -> str:
    return f"{gbps}G"


def _interfaces(sw: SwitchIntent, d: Dialect) -> dict:
    out: dict = {}
    if sw.loopback:
        out["lo"] = {"type": "loopback", d.ip: {"address": {sw.loopback: {}}}}
    if sw.mgmt:
        eth: dict = {"type": "eth", d.ip: {"address": {sw.mgmt.address: {}}}}
        if d.vrf_on_interface:
            eth["vrf"] = sw.mgmt.vrf
        else:
            eth[d.ip]["vrf"] = sw.mgmt.vrf
        out[sw.mgmt.interface] = eth
    for b in sw.breakouts:
        out[b.cage] = _BreakoutBlock(b.lanes)
    pfc = bool(sw.qos and sw.qos.pfc_priorities)  # the watchdog guards paused queues: none without PFC
    later = _bonds(sw, d)
    for svi in sw.svis:
        ip: dict = {"address": {a: {} for a in (svi.address, *svi.secondaries)}}
        if svi.vrr:
            ip["vrr"] = {**d.enabled(), "address": {svi.vrr: {}}, "mac-address": svi.vrr_mac, d.vrr_state: {"up": {}}}
        later[f"vlan{svi.vlan}"] = {"type": "svi", "vlan": svi.vlan, d.ip: ip}
    names = {p.name for p in sw.ports}
    if len(names) == len(sw.ports) and names.isdisjoint(out) and names.isdisjoint(later):
        run = _PortRun(sw.ports, d.ip, pfc)  # one entry that writes every port, keys included
        out[run] = run
    else:  # a name twice: the later entry replaces the earlier in its place, as a dict does
        for p in sw.ports:
            out[p.name] = _PortBlock(p, d.ip, pfc)
    out.update(later)
    return out


class _PortBlock:
    """A switch port's NVUE block from a fixed template: ports are most of a switch's lines (64 to
    128 a leaf), and writing each from a nested dict was most of the render at 100k GPUs. The
    shape: type, description, link (mtu, speed, state up), then ip address, bridge access VLAN
    and the PFC watchdog where they apply."""

    __slots__ = ("port", "ip", "pfc")

    def __init__(self, port: Port, ip: str, pfc: bool = True):
        self.port = port
        self.ip = ip  # the release's interface address key (ip / ipv4)
        self.pfc = pfc  # the switch pauses its lossless ports (PFC): each gets the watchdog

    def write(self, pad: str, out: list[str]) -> None:
        p = self.port
        # peer and address are the port's own: written without the memo, which they would only churn,
        # and tested here first (a plain name longer than any YAML word), a call saved per port
        peer = p.peer
        if len(peer) <= _LONGEST_WORD or not _PLAIN(peer):
            peer = _plain_or_quoted(peer)
        out.append(f"{pad}type: swp\n{pad}description: {peer}\n")
        out.append(_link_lines(pad, p.mtu, p.speed_gbps))
        if p.address:
            if p.secondaries:
                lines = "".join(f"{pad}    {_plain_or_quoted(a)}: {{}}\n" for a in (p.address, *p.secondaries))
            else:
                lines = f"{pad}    {_plain_or_quoted(p.address)}: {{}}\n"
            out.append(f"{pad}{self.ip}:\n{pad}  address:\n{lines}")
        if p.access_vlan is not None:
            vlan = _scalar(p.access_vlan)
            out.append(f"{pad}bridge:\n{pad}  domain:\n{pad}    br_default:\n{pad}      access: {vlan}\n")
        if p.lossless and self.pfc:
            out.append(f"{pad}qos:\n{pad}  pfc-watchdog:\n{pad}    state: enable\n")


class _PortRun:
    """A switch's ports, keys and blocks, written as one run: a port's text is a fixed template per
    shape (indent, MTU, speed, how many addresses, access VLAN, watchdog) with its name, peer and
    addresses as the only fields, one %-format a port, where the dict walk wrote each key, then
    each block line by line (51k ports at 8k GPUs). Written as _PortBlock writes them."""

    __slots__ = ("ports", "ip", "pfc")

    def __init__(self, ports: tuple[Port, ...], ip: str, pfc: bool):
        self.ports, self.ip, self.pfc = ports, ip, pfc

    def write(self, pad: str, out: list[str]) -> None:
        ip, pfc, template = self.ip, self.pfc, _port_template
        for p in self.ports:
            peer = p.peer  # as _PortBlock tests it: a plain name longer than any YAML word is itself
            if len(peer) <= _LONGEST_WORD or not _PLAIN(peer):
                peer = _plain_or_quoted(peer)
            if p.address:
                address = p.address  # tested as the peer is: an IPv4 prefix is a plain word
                if len(address) <= _LONGEST_WORD or not _PLAIN(address):
                    address = _plain_or_quoted(address)
                if p.secondaries:
                    fields = (_scalar(p.name), peer, address, *map(_plain_or_quoted, p.secondaries))
                else:
                    fields = (_scalar(p.name), peer, address)
                n = 1 + len(p.secondaries)
            else:
                fields, n = (_scalar(p.name), peer), 0
            out.append(template(pad, ip, p.mtu, p.speed_gbps, n, p.access_vlan, p.lossless and pfc) % fields)


_FIELD = "port_field_"  # a plain YAML word that no port's text holds: where a port's own values go


@functools.lru_cache(maxsize=1024)  # a few shapes serve every port of the pod
def _port_template(pad: str, ip: str, mtu: int, speed_gbps: int, addresses: int, access_vlan: int | None,
                   watchdog: bool) -> str:
    """A port's key line and the lines _PortBlock writes for it, %s for its name, peer and addresses."""
    port = Port(_FIELD, speed_gbps, _FIELD, _FIELD if addresses else "", (_FIELD,) * (addresses - 1), access_vlan,
                watchdog, mtu)
    lines = [f"{pad}{_FIELD}:\n"]
    _PortBlock(port, ip, True).write(pad + "  ", lines)
    return "".join(lines).replace("%", "%%").replace(_FIELD, "%s")


class _BreakoutBlock:
    """A breakout cage's NVUE block (type swp, link breakout <lanes>x): its text depends on the
    indent and the lane count only, a few strings that serve every cage of the pod, where two
    nested dicts a cage were a leaf's most walked mappings."""

    __slots__ = ("lanes",)

    def __init__(self, lanes: int):
        self.lanes = lanes

    def write(self, pad: str, out: list[str]) -> None:
        out.append(_breakout_lines(pad, self.lanes))


@functools.lru_cache(maxsize=256)
def _breakout_lines(pad: str, lanes: int) -> str:
    out: list[str] = []
    _emit({"type": "swp", "link": {"breakout": {f"{lanes}x": {}}}}, pad, out)
    return "".join(out)


class _Subtree:
    """A mapping written as _emit writes it, its text kept per indent: blocks that many
    entries of a switch share (a BGP session's BFD profile) are written once, then copied."""

    __slots__ = ("node", "_text")

    def __init__(self, node: dict):
        self.node = node
        self._text: dict[str, str] = {}

    def text(self, pad: str) -> str:
        text = self._text.get(pad)
        if text is None:
            out: list[str] = []
            _emit(self.node, pad, out)
            text = self._text[pad] = "".join(out)
        return text

    def write(self, pad: str, out: list[str]) -> None:
        out.append(self.text(pad))


class _NeighborRun:
    """A switch's BGP neighbors, keys and blocks, written as one run (37k sessions at 8k GPUs):
    each its key line, its type, remote-as and description, and its shared tail, without the dict walk's
    tests and calls per entry. `entries`: key -> (kind, remote-as, peer, tail)."""

    __slots__ = ("entries",)

    def __init__(self, entries: dict[str, tuple]):
        self.entries = entries

    def write(self, pad: str, out: list[str]) -> None:
        inner = pad + "  "
        for k, (kind, remote_as, peer, tail) in self.entries.items():
            out.append(f"{pad}{_scalar(k)}:\n")
            out.append(_neighbor_lines(inner, kind, remote_as, peer))
            if tail is not None:
                out.append(tail.text(inner))


@functools.lru_cache(maxsize=1 << 16, typed=True)  # a switch is the same neighbor to each switch it peers with
def _neighbor_lines(pad: str, kind: str, remote_as: int | str, peer: str) -> str:
    return f"{pad}type: {_scalar(kind)}\n{pad}remote-as: {_scalar(remote_as)}\n{pad}description: {_scalar(peer)}\n"


def _bonds(sw: SwitchIntent, d: Dialect) -> dict:
    """Per-node bonds (MLAG ids or EVPN-MH segments) and the MLAG peer link."""
    out: dict = {}
    pair = sw.pairing
    for b in sw.bonds:
        bond: dict = {"member": {m: {} for m in b.members}}
        iface: dict = {"type": "bond", "description": b.peer, "bond": bond}
        if pair and pair.mode == "mlag":
            bond["mlag"] = {**d.enabled(), "id": b.pair_id}
        elif pair:
            iface["evpn"] = {
                "multihoming": {
                    "segment": {
                        **d.enabled(),
                        "local-id": b.pair_id,
                        "mac-address": pair.system_mac,
                        "df-preference": pair.priority,
                    }
                }
            }
        if b.edge:  # PXE runs before the host's LACP: the bond forwards on one member until LACP is up
            bond["lacp-bypass"] = d.on
        if b.access_vlan is not None:
            domain: dict = {"access": b.access_vlan}
            if b.edge:  # a host, never a bridge: edge at once, shut if it sends BPDUs
                domain["stp"] = {"admin-edge": d.on, "bpdu-guard": d.on}
            iface["bridge"] = {"domain": {"br_default": domain}}
        out[b.name] = iface
    if pair and pair.peer_link:
        out["peerlink"] = {"type": "peerlink", "bond": {"member": {m: {} for m in pair.peer_link}}}
        out["peerlink.4094"] = {"type": "sub", "base-interface": "peerlink", "vlan": 4094}
    return out


def _pairing(sw: SwitchIntent, d: Dialect) -> dict:
    pair = sw.pairing
    if pair.mode == "mlag":
        mlag: dict = {**d.enabled(), "mac-address": pair.system_mac, "peer-ip": "linklocal", "priority": pair.priority}
        if pair.backup_ip:
            mlag["backup"] = {pair.backup_ip: {"vrf": sw.mgmt.vrf if sw.mgmt else "mgmt"}}
        return {"mlag": mlag}
    return {"evpn": {**d.enabled(), "multihoming": d.enabled()}}


def _bgp(sw: SwitchIntent, d: Dialect) -> dict:
    b = sw.bgp
    neighbors = {}
    # the BFD block is the same for every session of the switch: written once per indent
    bfd = _Subtree({"bfd": _bfd_neighbor(sw.services.bfd, d)}) if sw.services.bfd else None
    for n in b.neighbors:
        extra: dict = {}
        if bfd and not n.site:  # the pod's own sessions; the site's routers may not run BFD
            extra["bfd"] = None
        if b.border and n.site:
            policy = {"inbound": {"route-map": BORDER_IN}, "outbound": {"route-map": BORDER_OUT}}
            extra["address-family"] = {"ipv4-unicast": {"policy": policy}}
        if n.next_hop_self:  # iBGP across a pair's peer link (topology/layout/inband_routing.py)
            extra["address-family"] = {"ipv4-unicast": {"nexthop-setting": "self"}}
        if list(extra) == ["bfd"]:
            tail = bfd
        elif extra:
            tail = _Subtree({k: (bfd.node["bfd"] if k == "bfd" else v) for k, v in extra.items()})
        else:
            tail = None
        if b.unnumbered:
            neighbors[n.interface] = ("unnumbered", "external", n.peer, tail)
        else:
            neighbors[n.address] = ("numbered", n.remote_as, n.peer, tail)
    ipv4 = {
        **d.enabled(),
        "multipaths": {"ebgp": b.max_paths},
        "network": {net: {} for net in b.networks},
    }
    if b.aggregates:
        ipv4["aggregate-route"] = {agg: {"summary-only": d.on} for agg in b.aggregates}
    return {
        "router": {
            "bgp": {
                **d.enabled(),
                "router-id": b.router_id,
                "path-selection": {"multipath": {"aspath-ignore": d.on}},
                "address-family": {"ipv4-unicast": ipv4},
                "neighbor": _NeighborRun(neighbors) if neighbors else {},
            }
        }
    }


_SYSTEM_SERVICES_SINCE = (5, 15)  # NTP and DNS moved from `service <name> <vrf>` to `system <name>`
_SYSTEM_SYSLOG_SINCE = (5, 13)  # syslog moved earlier
SYSLOG_PORT = 514
_SYSTEM_SNMP_SINCE = (5, 11)  # `service snmp-server` (enable: on) became `system snmp-server` (state: enabled)
_LLDP_STATE_SINCE = (5, 11)  # LLDP's own on/off key (on by default before)
_SYSTEM_LLDP_SINCE = (5, 15)  # `service lldp` became `system lldp`


def _services(sw: SwitchIntent, d: Dialect, release: tuple[int, ...]) -> tuple[dict, dict]:
    """(`system` additions, `service` tree) for the spec's switch services in the release's places."""
    sv, vrf = sw.services, (sw.mgmt.vrf if sw.mgmt else "default")
    system: dict = {}
    service: dict = {}
    if sv.ntp:
        servers = {ip: {"iburst": d.on} for ip in sv.ntp}
        if release >= _SYSTEM_SERVICES_SINCE:
            system["ntp"] = {**d.enabled(), "vrf": vrf, "server": servers}
        else:
            service["ntp"] = {vrf: {"server": servers}}
    if sv.dns:
        if release >= _SYSTEM_SERVICES_SINCE:
            system["dns"] = {"server": {ip: {"vrf": vrf} for ip in sv.dns}}
        else:
            service["dns"] = {vrf: {"server": {ip: {} for ip in sv.dns}}}
    if sv.syslog:
        target = {"port": SYSLOG_PORT, "protocol": "udp"}
        if release >= _SYSTEM_SYSLOG_SINCE:
            system["syslog"] = {"server": {ip: {**target, "vrf": vrf} for ip in sv.syslog}}
        else:
            service["syslog"] = {vrf: {"server": {ip: dict(target) for ip in sv.syslog}}}
    if sv.gnmi_port is not None:  # the spec refuses gnmi_server before 5.13; its state is enabled|disabled from then
        system["gnmi-server"] = {"state": "enabled", "port": sv.gnmi_port}
    if sv.snmp_users:
        snmp = _snmp_server(sw, release)
        (system if release >= _SYSTEM_SNMP_SINCE else service)["snmp-server"] = snmp
    aaa = _aaa(sw)
    if aaa:
        system["aaa"] = aaa
    lldp: dict = {"state": "enabled"} if release >= _LLDP_STATE_SINCE else {}
    lldp |= {"tx-interval": sv.lldp[0], "tx-hold-multiplier": sv.lldp[1]}
    (system if release >= _SYSTEM_LLDP_SINCE else service)["lldp"] = lldp
    return system, service


def _aaa(sw: SwitchIntent) -> dict:
    """Local accounts (their password hashes), TACACS+ and RADIUS (their shared secrets): the secrets are added
    by the push from the vault (roles/switch_fabric, credentials.json). The spec allows TACACS+ from
    5.15 only, where NVUE orders logins with `authentication order`."""
    sv, aaa = sw.services, {}
    if sv.local_users:
        aaa["user"] = {name: {"role": role} for name, role in sv.local_users}
    if sv.tacacs:
        tacacs: dict = {"server": {ip: {"priority": i + 1, "auth-mode": sv.tacacs_auth}
                                   for i, ip in enumerate(sv.tacacs)}}
        if sw.mgmt:
            tacacs["vrf"] = sw.mgmt.vrf
        aaa["tacacs"] = tacacs
    if sv.radius:
        radius: dict = {"server": {ip: {"priority": i + 1, "auth-type": sv.radius_auth}
                                   for i, ip in enumerate(sv.radius)}}
        if sw.mgmt:
            radius["vrf"] = sw.mgmt.vrf
        aaa["radius"] = radius
    if sv.tacacs or sv.radius:  # the servers first, the local accounts when none answers
        aaa["authentication"] = {"order": [*(["tacacs"] if sv.tacacs else []), *(["radius"] if sv.radius else []),
                                           "local"]}
    return aaa


def _snmp_server(sw: SwitchIntent, release: tuple[int, ...]) -> dict:
    """The SNMP agent, listening on eth0's address in the management VRF (`all` on a switch without
    one). Its users are NOT written here: NVUE keys a user's entry by its passwords
    (`username U auth-sha <pw> encrypt-aes <pw>`), so the push adds them from the vault
    (roles/switch_fabric, credentials.json)."""
    on = {"state": "enabled"} if release >= _SYSTEM_SNMP_SINCE else {"enable": "on"}
    if sw.mgmt:
        listen = {sw.mgmt.address.split("/")[0]: {"vrf": sw.mgmt.vrf}}
    else:
        listen = {"all": {}}
    return {**on, "listening-address": listen}


def _bfd_timers(bfd: tuple[int, int]) -> dict:
    interval, multiplier = bfd
    return {"detect-multiplier": multiplier, "min-rx-interval": interval, "min-tx-interval": interval}


def _bfd_neighbor(bfd: tuple[int, int], d: Dialect) -> dict:
    return {"profile": BFD_PROFILE} if d.bfd_profiles else {**d.enabled(), **_bfd_timers(bfd)}


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


def _qos(q: Qos, d: Dialect) -> dict:
    out = {
        # lossy: NVUE's RoCE with ECN and no PFC (storage_fabric.qos: ecn)
        "roce": {**d.enabled(), "mode": "lossless" if q.pfc_priorities else "lossy"},
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
    if not q.pfc_priorities:
        del out["pfc"], out["pfc-watchdog"]
    return out


@functools.lru_cache(maxsize=64)  # a fabric's switches share one Qos: its block written once per indent
def _qos_tree(q: Qos, d: Dialect) -> _Subtree:
    return _Subtree(_qos(q, d))


def render_nvue(sw: SwitchIntent) -> str:
    d = dialect(sw.os_release)
    release = sw.os_release or CUMULUS_RELEASES[-1]
    system, service = _services(sw, d, release_key(release))
    body: dict = {
        "system": {"hostname": sw.name, **system},
        "interface": _interfaces(sw, d),
    }
    if service:
        body["service"] = service
    if sw.vlans:
        body["bridge"] = {"domain": {"br_default": {"vlan": {str(v): {} for v in sw.vlans}}}}
    if sw.pairing:
        body.update(_pairing(sw, d))
    router: dict = {}
    if sw.bgp:
        router["bgp"] = {**d.enabled(), "autonomous-system": sw.bgp.asn, "router-id": sw.bgp.router_id}
        if sw.services.graceful_restart != "off":
            router["bgp"]["graceful-restart"] = {"mode": sw.services.graceful_restart}
        if sw.bgp.border:
            router["policy"] = _border_policy(sw.bgp.border)
        if sw.services.bfd and d.bfd_profiles and any(not n.site for n in sw.bgp.neighbors):
            router["bfd"] = {**d.enabled(), "profile": {BFD_PROFILE: _bfd_timers(sw.services.bfd)}}
    if any(svi.vrr for svi in sw.svis):  # `ip vrr` answers only with VRR on globally (NVUE's default: off)
        router["vrr"] = d.enabled()
    if router:
        body["router"] = router
    vrf: dict = {}
    if sw.bgp:
        vrf["default"] = _bgp(sw, d)
    if sw.mgmt:
        vrf[sw.mgmt.vrf] = {"router": {"static": {"0.0.0.0/0": {"via": {sw.mgmt.gateway: {}}}}}}
    if vrf:
        body["vrf"] = vrf
    if sw.qos:
        body["qos"] = _qos_tree(sw.qos, d)
    header = f"# {GENERATED}\n# {sw.name} ({sw.role}, {sw.model}): NVIDIA Cumulus Linux {release} NVUE\n"
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


yaml_scalar = _plain_or_quoted  # a value as this writer writes it (nvue_shape.py fills its fields so)
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
        elif v.__class__ is _PortRun:  # its own keys
            v.write(pad, out)
        elif v.__class__ in _BLOCKS:
            out.append(f"{pad}{_scalar(k)}:\n")
            v.write(pad + "  ", out)
        elif v.__class__ is list:  # a list of scalars (aaa authentication order): flow style
            out.append(f"{pad}{_scalar(k)}: [{', '.join(_scalar(x) for x in v)}]\n")
        else:
            out.append(f"{pad}{_scalar(k)}: {_scalar(v)}\n")


_BLOCKS = frozenset({_PortBlock, _NeighborRun, _BreakoutBlock, _Subtree})  # blocks that write themselves
