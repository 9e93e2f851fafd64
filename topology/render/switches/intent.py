"""The OS-neutral intent of one switch: what it must do, in the plan's own names.

Built from the layout by the section functions in `sections.py`; rendered into an OS's
syntax by one thin renderer per OS (`nvue.py`, `sonic.py`, `frr.py`). Nothing here knows a
syntax, and no renderer recomputes topology.

Ports and sessions are made by the hundred thousand at 100k GPUs (418k ports, 240k sessions), and
frozen=True's `__init__` sets each field through `object.__setattr__` (four times slower, a fifth
of the switch intents' CPU): like the layout's records (topology/layout/model.py), the intent is
frozen by convention (hashable by value, never assigned to; a changed copy from `replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

JUMBO_MTU = 9216  # every fabric port; hosts run 9000 on the rails, headroom for encapsulation
HOST_RAIL_MTU = 9000  # a RoCE rail NIC (RoCE path MTU 4096 needs 9000 end to end); the inventory says so per rail


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Port:
    name: str  # planned port name, as in cabling.csv (swp1, swp1s0)
    speed_gbps: int
    peer: str  # "device:port" at the cable's other end
    address: str = ""  # with prefix length; "" for L2 or unnumbered ports
    secondaries: tuple[str, ...] = ()  # more addresses: a p2p rail port's pod gateway (ipam.rail_pod_prefixes)
    access_vlan: int | None = None  # L2 access port of a bridged subnet
    lossless: bool = False  # the fabric's RDMA QoS applies here: ECN, and PFC + watchdog when its Qos has PFC
    mtu: int = JUMBO_MTU
    cable_m: float = 0.0  # the planned cable's stock length (lossless headroom depends on it)


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Breakout:
    cage: str  # parent port name (swp1)
    lanes: int  # sub-ports it splits into
    speed_gbps: int  # speed of each sub-port


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Svi:
    vlan: int
    address: str  # the subnet's gateway (or, with `vrr`, this switch's own address), with prefix length
    vrr: str = ""  # the shared gateway both switches of a pair answer for (VRR), with prefix length
    vrr_mac: str = ""  # its virtual MAC (00:00:5e:00:01:<vrid>)
    secondaries: tuple[str, ...] = ()  # more gateways on the VLAN: a rail leaf's pod prefixes (ipam.rail_pod_prefixes)


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Bond:
    """A node's dual-homed bond: one member here, the other on the pair's other switch."""

    name: str  # bondN (SONiC: PortChannelN)
    members: tuple[str, ...]  # planned port names
    peer: str  # the node (or mgmt node) at the far end
    pair_id: int  # MLAG id / EVPN-MH segment local-id: the same on both switches of the pair
    access_vlan: int | None = None
    edge: bool = False  # a host's bond: LACP bypass (PXE), STP admin edge and BPDU guard


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Pairing:
    """The two switches that share the bonds and the gateway (management.inband.pairing)."""

    mode: str  # mlag | evpn_mh
    peer: str  # the other switch of the pair
    peer_link: tuple[str, ...]  # MLAG peer-link members (the planned inband-peer ports); () for evpn_mh
    backup_ip: str  # the peer's OOB address (MLAG backup path over eth0)
    system_mac: str  # MLAG system MAC / EVPN-MH segment MAC, the same on both switches
    priority: int  # MLAG priority / EVPN-MH DF preference: side a is preferred
    source_ip: str = ""  # this switch's own in-band SVI address (SONiC MCLAG session), no prefix
    peer_ip: str = ""  # the peer's


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Neighbor:
    peer: str  # planned device name
    interface: str  # local port
    address: str  # peer's address ("" for unnumbered: the session runs over the port's IPv6 LLA)
    remote_as: int | str  # a planned ASN, or "external" (the site's border when addressing.border_asn is unset)
    site: bool = False  # a session to the site's border routers: the border policy applies to it
    next_hop_self: bool = False  # iBGP across a pair's peer link: the partner's uplink next hops are not ours


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class BorderPolicy:
    """The in-band cores' policy toward the site's border routers (every neighbor of a core is one)."""

    accept: tuple[str, ...]  # taken in: the site's default route (addressing.site_routes)
    announce: tuple[str, ...]  # let out: the pod's management summaries, nothing learned from the site


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Bfd:
    """Failure detection on the sessions between planned switches, below BGP's 9 s hold time
    (FRR's and Cumulus's default timers: 300 ms x 3); not on the site's sessions, whose routers
    the pod does not configure."""

    profile: str = "FABRIC"
    detect_multiplier: int = 3
    interval_ms: int = 300  # transmit and receive


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Bgp:
    asn: int
    router_id: str
    neighbors: tuple[Neighbor, ...]
    networks: tuple[str, ...]  # prefixes originated exactly (loopback, connected rail/storage subnets)
    aggregates: tuple[str, ...]  # summaries announced instead of those subnets (summary-only)
    unnumbered: bool = False
    max_paths: int = 64  # ECMP width cap; the fabric's real width is its uplink count
    border: BorderPolicy | None = None  # route maps on the site's sessions (the in-band cores' border)


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Mgmt:
    interface: str  # eth0
    address: str  # OOB address with prefix length
    gateway: str
    vrf: str = "mgmt"


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Qos:
    """Lossless RoCE, the switch side of roles/roce_qos's host defaults."""

    trust: str  # dscp
    dscp_to_tc: tuple[tuple[int, int], ...]  # (dscp, traffic class)
    pfc_priorities: tuple[int, ...]
    ecn_traffic_classes: tuple[int, ...]
    cnp_dscp: int
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_probability: int  # percent at max threshold
    pfcwd_detection_ms: int
    pfcwd_restoration_ms: int
    pfcwd_action: str  # drop


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class SnmpUser:
    """An SNMPv3 user (authPriv, read-only): its name and protocols. No password: the push fills
    them in from the vault (roles/switch_fabric, credentials.json names the slots)."""

    name: str
    auth: str  # sha | md5
    priv: str  # aes | des


@dataclass(slots=True, unsafe_hash=True)  # frozen by convention (see above)
class Services:
    """switch_services of the spec: servers reached through the management VRF."""

    ntp: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()
    syslog: tuple[str, ...] = ()
    gnmi_port: int | None = None  # the gNMI server's port (telemetry/gnmic.yml dials it); None: off
    graceful_restart: str = "off"  # BGP: off | helper-only | full
    bfd: tuple[int, int] | None = None  # (interval ms, multiplier) on the pod's own BGP sessions; None: off
    snmp_users: tuple[SnmpUser, ...] = ()  # SNMPv3 users; their passwords are merged at push time (vault)
    lldp: tuple[int, int] = (30, 4)  # (tx interval s, hold multiplier) on every port
    local_users: tuple[tuple[str, str], ...] = ()  # (name, NVUE role); password hashes merged at push time
    tacacs: tuple[str, ...] = ()  # TACACS+ servers in priority order; the shared secret merged at push time
    tacacs_auth: str = "pap"
    radius: tuple[str, ...] = ()  # RADIUS servers in priority order; the shared secret merged at push time
    radius_auth: str = "pap"


@dataclass(unsafe_hash=True)  # frozen by convention (see above)
class SwitchIntent:
    name: str
    role: str
    model: str
    os: str  # cumulus | sonic
    fabric: str  # compute, storage, inband, oob
    ports: tuple[Port, ...]
    breakouts: tuple[Breakout, ...] = ()
    loopback: str = ""  # /32
    mgmt: Mgmt | None = None
    bgp: Bgp | None = None
    vlans: tuple[int, ...] = ()
    svis: tuple[Svi, ...] = ()
    bonds: tuple[Bond, ...] = ()
    pairing: Pairing | None = None
    qos: Qos | None = None
    notes: tuple[str, ...] = field(default=())  # what the plan leaves to the operator, said in the config
    services: Services = Services()
    os_release: str = ""  # the OS release the config is written for (cumulus: switch_software.cumulus_release)
