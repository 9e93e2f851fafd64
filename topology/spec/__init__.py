"""The pod spec: what a user writes under `superpod:pod`. Pydantic v2, strict and frozen.

Structural rules (types, ranges, known catalog keys) live here; rules that need the
fabric arithmetic (does a SU fit a leaf, can uplinks be spread) live in the builders
and raise SpecError with the same field paths.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal

import netaddr
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from topology import catalog
from topology.errors import SpecError, SpecErrors
from topology.spec import strict_yaml
from topology.spec.bounds import check_bounds

PositiveInt = Annotated[int, Field(gt=0)]
Ratio = Annotated[str, Field(pattern=r"^[1-9][0-9]*:[1-9][0-9]*$", description='down:up, e.g. "1:1"')]
SwitchOs = Annotated[
    Literal["cumulus", "sonic"], Field(description="switch OS the configs are rendered for (NVUE or config_db + FRR)")
]
BgpPeering = Annotated[
    Literal["numbered", "unnumbered"], Field(description="eBGP over the planned /31s, or BGP unnumbered (IPv6 LLA)")
]


class _Spec(BaseModel):
    # strict: `true` or "3" is not a count, "yes" is not a boolean; numbers must be finite
    # validate_default: a rule binds a field left at its default too (asn_first alone must still
    # meet asn_last's range rules; an InfiniBand fabric with neither subnet manager is refused)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, validate_default=True)


def _known(kind: str, value: str) -> str:
    table = getattr(catalog.load(), kind)
    if value not in table:
        raise ValueError(f"unknown {kind[:-1]} model {value!r} (catalog has: {', '.join(sorted(table))})")
    return value


def ratio(value: str) -> tuple[int, int]:
    down, up = value.split(":")
    return int(down), int(up)


class ComputeFabric(_Spec):
    kind: Literal["roce", "infiniband"]
    switch_model: str = Field(description="catalog switch key for leaves, spines and cores")
    oversubscription: Ratio = "1:1"
    fabric_manager: bool = Field(False, description="a UFM appliance attaches in SU 1 in place of one node")
    ufm_model: str = "ufm-3.0"
    ufm_appliances: Literal[1, 2] = Field(
        2, description="UFM appliances: a high-availability pair (NVIDIA's SuperPOD RAs), or 1"
    )
    spine_count: PositiveInt | None = Field(
        None, description="override, two tiers only: spines, dividing each leaf's uplinks, or their split legs "
        "as the automatic sizing would use them (a three-tier fabric has one spine per leaf uplink in each "
        "block; leave unset)"
    )
    switch_os: SwitchOs = "cumulus"
    bgp_peering: BgpPeering = "numbered"
    switch_subnet_manager: bool = Field(
        False,
        description="InfiniBand without UFM: the managed switches run the embedded subnet manager "
        "(NVIDIA Quantum-2 MLNX-OS SM, for fabrics of up to 2,048 nodes)",
    )

    _switch = field_validator("switch_model")(lambda v: _known("switches", v))
    _ufm = field_validator("ufm_model")(lambda v: _known("appliances", v))

    @field_validator("switch_subnet_manager")
    @classmethod
    def _subnet_manager(cls, on_switch: bool, info: ValidationInfo) -> bool:
        # An InfiniBand fabric does not come up without a subnet manager.
        if info.data.get("kind") == "infiniband" and not info.data.get("fabric_manager") and not on_switch:
            raise ValueError(
                "an InfiniBand fabric needs a subnet manager: set fabric_manager: true (UFM) "
                "or switch_subnet_manager: true (the switches' embedded SM)"
            )
        return on_switch


class StorageFabric(_Spec):
    enabled: bool = True
    switch_model: str = "sn5400"
    oversubscription: Ratio = Field("4:1", description="node-side storage leaf down:up (the seed's 4:1)")
    storage_servers: Annotated[int, Field(ge=0)] = 8
    server_model: str = "storage-server"
    min_spines: PositiveInt = 2
    switch_os: SwitchOs = "cumulus"
    qos: Literal["lossless", "ecn", "none"] = Field(
        "lossless",
        description="RDMA QoS on the storage leaves and spines and the hosts' storage NICs: lossless (PFC and "
        "ECN, the compute fabric's RoCE values: the seed's GDS over RDMA at 4:1), ecn (ECN marking, no pause), "
        "none (TCP storage)",
    )
    node_ports: Literal["dedicated", "inband_bond"] = Field(
        "dedicated",
        description="dedicated: port 1 of each dual-port card cabled to the SU's storage leaf (NVIDIA's SuperPOD); "
        "inband_bond: storage shares the port-2 in-band bond (NVIDIA's DGX BasePOD Ethernet variant), the SU's "
        "in-band pair routing it to the SU's storage leaf; Ethernet storage fabrics only",
    )
    subnet_manager: Literal["ufm", "switch"] = Field(
        "ufm",
        description="InfiniBand storage fabric only: a UFM HA pair of its own (NVIDIA's DGX SuperPOD H100 RA "
        "counts four UFM appliances, a pair per InfiniBand fabric; needs the compute UFM's SU 1 slot), or "
        "the storage switches' embedded subnet manager (Quantum-2 MLNX-OS SM)",
    )

    _switch = field_validator("switch_model")(lambda v: _known("switches", v))
    _server = field_validator("server_model")(lambda v: _known("appliances", v))


class Inband(_Spec):
    switch_model: str = "sn4600c"
    core_switch_model: str | None = Field(None, description="in-band core switches (default: switch_model)")
    uplinks_per_switch: PositiveInt = 4
    min_core_switches: PositiveInt = 2
    mgmt_nodes: Annotated[int, Field(ge=0)] = 3
    mgmt_node_model: str = "mgmt-server"
    switch_os: SwitchOs = "cumulus"
    pairing: Literal["mlag", "evpn_mh"] = Field(
        "mlag",
        description="how each SU's switch pair carries the nodes' bond0: MLAG with cabled peer links "
        "(evpn_mh, EVPN multihoming, is refused until its EVPN control plane is rendered: docs/switches.md)",
    )
    peer_links: Annotated[int, Field(ge=1, le=8)] = Field(2, description="MLAG peer-link cables per switch pair")
    border_uplinks: Annotated[int, Field(ge=0, le=16)] = Field(
        2,
        description="north-south: routed links from each in-band core (the pod's border, as the border leaf pair "
        "of NVIDIA's RAs) to the site's border routers (`site-border` in cabling.csv), a /31 each from "
        "addressing.border, eBGP to addressing.border_asn; 0: none",
    )
    border_run_m: Annotated[float, Field(gt=0, le=2000)] | None = Field(
        None,
        description="cable run from each in-band core to the site's border routers (rounded up to a stock "
        "length); unset: to the head of the core's row, where the site's own run takes over",
    )

    _switch = field_validator("switch_model")(lambda v: _known("switches", v))

    @field_validator("pairing")
    @classmethod
    def _pairing(cls, mode: str) -> str:
        # An EVPN-MH pair has no peer link: without BGP l2vpn-evpn, VXLAN and VNIs on both switches
        # (none rendered) the two members of a node's bond would not form one LACP partner.
        if mode == "evpn_mh":
            raise ValueError(
                "evpn_mh is not supported: EVPN multihoming needs BGP l2vpn-evpn, VXLAN and VNIs on the pair, "
                "which no renderer writes yet; use pairing: mlag (pods past one core pair plan with MLAG)"
            )
        return mode

    _core = field_validator("core_switch_model")(lambda v: v if v is None else _known("switches", v))
    _mgmt = field_validator("mgmt_node_model")(lambda v: _known("appliances", v))


class Oob(_Spec):
    switch_model: str = "sn2201"
    uplinks_per_switch: PositiveInt = 2
    aggregation_model: str = "sn4600c"
    aggregation_uplinks: PositiveInt = Field(
        2, description="routed links from each OOB aggregation switch (its top cages) to the in-band cores, "
        "or the services pair of a three-tier in-band fabric: the mgmt nodes' path to every BMC"
    )
    switch_os: SwitchOs = "cumulus"
    announce_to_site: bool = Field(
        False, description="the in-band cores announce addressing.oob (every BMC's subnet) to the site's border "
        "routers; off: the site gets the in-band summary only and reaches the BMCs through the mgmt nodes"
    )

    _switch = field_validator("switch_model", "aggregation_model")(lambda v: _known("switches", v))


class Management(_Spec):
    inband: Inband = Inband()
    oob: Oob = Oob()


class Racks(_Spec):
    power_budget_kw: Annotated[float, Field(gt=0)] = 45.0
    rack_units: PositiveInt = 48
    reserved_units: Annotated[int, Field(ge=0)] = 4
    racks_per_row: PositiveInt = 16
    cooling: Literal["air", "liquid"] = "air"
    cdu: Literal["per_row", "per_rack"] = "per_row"
    cdu_redundancy: Literal["n", "n+1"] = Field(
        "n+1", description="in-row CDUs: one more than the row's liquid load needs, so one can fail or be serviced"
    )
    cdu_model: str | None = None
    ashrae_class: Literal["W17", "W27", "W32", "W40", "W45", "W+"] = "W32"
    pdu_model: str = "raritan-px4-60a"
    pdus_per_feed: PositiveInt = 1
    # cable runs between racks: up to the overhead tray and down at each end, along and across rows
    rack_width_m: Annotated[float, Field(gt=0, le=2)] = 0.6
    row_pitch_m: Annotated[float, Field(gt=0, le=20)] = Field(3.0, description="row to row, aisle included")
    cable_tray_drop_m: Annotated[float, Field(ge=0, le=10)] = Field(2.5, description="port to overhead tray, per end")
    cable_slack_percent: Annotated[float, Field(ge=0, le=100)] = 10

    _pdu = field_validator("pdu_model")(lambda v: _known("pdus", v))

    @field_validator("cdu_model")
    @classmethod
    def _cdu(cls, v: str | None) -> str | None:
        return None if v is None else _known("cdus", v)


def _network(value: str) -> str:
    try:
        net = netaddr.IPNetwork(value)
    except (netaddr.AddrFormatError, ValueError, TypeError) as e:
        raise ValueError(f"not an IPv4 network: {value!r}") from e
    if net.version != 4 or net.network != net.ip:
        raise ValueError(f"{value!r} must be an IPv4 network address with prefix (host bits zero)")
    return str(net.cidr)


# ASNs no pod may use (IANA special-purpose AS numbers registry): AS_TRANS, documentation,
# the last 16- and 32-bit ASNs, and the block IANA holds back.
RESERVED_ASNS = (
    (0, 0, "RFC 7607"),
    (23456, 23456, "AS_TRANS, RFC 6793"),
    (64496, 64511, "documentation, RFC 5398"),
    (65535, 65535, "RFC 7300"),
    (65536, 65551, "documentation, RFC 5398"),
    (65552, 131071, "IANA reserved"),
    (4294967295, 4294967295, "RFC 7300"),
)
PRIVATE_ASNS = ((64512, 65534), (4200000000, 4294967294))  # RFC 6996


def asn_is_private(asn: int) -> bool:
    return any(lo <= asn <= hi for lo, hi in PRIVATE_ASNS)


class Addressing(_Spec):
    """Pools every address is cut from, positionally. Defaults are RFC 1918 / RFC 6598 space."""

    rails: str = Field("100.64.0.0/11", description="RoCE GPU NIC addresses")
    rail_mode: Literal["p2p", "per_leaf"] = Field(
        "p2p", description="p2p: a /31 per GPU NIC (leaf .0, NIC .1); per_leaf: one subnet per rail leaf"
    )
    fabric_p2p: str = Field("100.96.0.0/13", description="/31s on switch-to-switch links")
    loopbacks: str = "10.255.0.0/16"
    inband: str = "10.16.0.0/14"
    oob: str = "10.20.0.0/14"
    storage: str = "10.24.0.0/14"
    border: str = Field("10.28.0.0/24", description="/31s of the in-band cores' border uplinks (site end .0)")
    ipoib: bool = Field(False, description="InfiniBand only: give rail HCAs IPoIB addresses")
    rail_pods: str | None = Field(
        None, description="RoCE per_leaf rails: a pool of routed pod prefixes, one per GPU NIC, its first address "
        "on the NIC's leaf (Kubernetes pods on the rails across SUs, docs/kubernetes.md); unset: none",
    )
    rail_pod_prefix: int = Field(28, ge=24, le=30, description="prefix length of each GPU NIC's pod prefix")
    asn_first: int = Field(4200000000, ge=1, le=4294967295)
    asn_last: int = Field(4294967294, ge=1, le=4294967295)
    asn_public: bool = Field(False, description="allow ASNs outside the private ranges of RFC 6996")

    border_asn: int | None = Field(
        None, ge=1, le=4294967295,
        description="the site border routers' ASN (remote-as of the border sessions); unset: `remote-as external`",
    )
    site_routes: list[str] = Field(
        ["0.0.0.0/0"], min_length=1,
        description="what the in-band cores accept from the site's border routers: the default route, or the "
        "site's summaries (they announce only the pod's management summaries back)",
    )

    _nets = field_validator("rails", "fabric_p2p", "loopbacks", "inband", "oob", "storage", "border")(
        lambda v: _network(v))
    _site = field_validator("site_routes")(lambda v: [_network(n) for n in v])
    _pods = field_validator("rail_pods")(lambda v: v if v is None else _network(v))

    # Field validators (not a model validator) so an error names the field to change; fields
    # validate in declaration order, so asn_last sees asn_first and asn_public sees both.
    @field_validator("asn_last")
    @classmethod
    def _asn_range(cls, last: int, info: ValidationInfo) -> int:
        first = info.data.get("asn_first")
        if first is None:
            return last
        if last < first:
            raise ValueError("asn_last must not be below asn_first")
        for lo, hi, why in RESERVED_ASNS:
            if lo <= last and first <= hi:
                held = str(lo) if lo == hi else f"{lo}-{hi}"
                raise ValueError(
                    f"the ASN range {first}-{last} holds reserved ASN {held} ({why}); "
                    "choose asn_first/asn_last outside it"
                )
        return last

    @field_validator("asn_public")
    @classmethod
    def _asn_private(cls, public: bool, info: ValidationInfo) -> bool:
        first, last = info.data.get("asn_first"), info.data.get("asn_last")
        if public or first is None or last is None:
            return public
        if not any(lo <= first and last <= hi for lo, hi in PRIVATE_ASNS):
            raise ValueError(
                f"the ASN range {first}-{last} is not within one private range of RFC 6996 "
                "(64512-65534 or 4200000000-4294967294); set asn_public: true to use public ASNs"
            )
        return public

    @field_validator("border_asn")
    @classmethod
    def _border_asn(cls, asn: int | None, info: ValidationInfo) -> int | None:
        # the site's ASN: not reserved, private unless asn_public, and none of the pod's own
        first, last, public = info.data.get("asn_first"), info.data.get("asn_last"), info.data.get("asn_public")
        if asn is None:
            return asn
        for lo, hi, why in RESERVED_ASNS:
            if lo <= asn <= hi:
                raise ValueError(f"ASN {asn} is reserved ({why})")
        if not public and not asn_is_private(asn):
            raise ValueError(f"ASN {asn} is not private (RFC 6996); set asn_public: true to use a public ASN")
        if first is not None and last is not None and first <= asn <= last:
            raise ValueError(f"ASN {asn} lies in the pod's own range asn_first-asn_last ({first}-{last})")
        return asn

    def pools(self) -> dict[str, netaddr.IPNetwork]:
        return {
            name: netaddr.IPNetwork(getattr(self, name))
            for name in ("rails", "fabric_p2p", "loopbacks", "inband", "oob", "storage", "border", "rail_pods")
            if getattr(self, name) is not None
        }


# Cumulus Linux releases whose NVUE object model NVIDIA publishes and `nvueschema` covers
# (tests/test_nvue_model.py holds this equal to the package's manifest). NVUE's model changed
# at 5.15 (interface `ip` became `ipv4`, `enable: on` became `state: enabled`): the renderer
# writes the release's own dialect.
NVUE_MODEL_RELEASES = ("5.0", "5.1", "5.2", "5.3", "5.4", "5.5", "5.6", "5.7", "5.8", "5.9", "5.10",
                       "5.11", "5.12", "5.13", "5.14", "5.15", "5.16", "5.17", "5.18")
# Before 5.6 NVUE has no PFC watchdog (5.0-5.2 no QoS mapping or per-port QoS either): the plan's
# lossless RoCE cannot be written for them, so the spec refuses them and says why.
CUMULUS_RELEASES = NVUE_MODEL_RELEASES[NVUE_MODEL_RELEASES.index("5.6"):]
CumulusRelease = Literal[CUMULUS_RELEASES]  # type: ignore[valid-type]


def release_key(text: str) -> tuple[int, ...]:
    """A release as numbers to compare: "5.10" comes after "5.9" (as strings it would not)."""
    return tuple(int(x) for x in text.split("."))


class SwitchSoftware(_Spec):
    cumulus_release: CumulusRelease = Field(
        CUMULUS_RELEASES[-1],
        description="Cumulus Linux release the NVUE startup.yaml files are written and checked for "
        "(NVIDIA's NVUE object model of that release)",
    )

    @field_validator("cumulus_release", mode="before")
    @classmethod
    def _quoted(cls, v: object) -> object:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            # YAML reads 5.10 as the number 5.1: only a string names a release exactly
            raise ValueError(f"got the number {v}: write the release as a quoted string (\"5.10\"), "
                             "a YAML number loses its trailing zeros")
        if v in NVUE_MODEL_RELEASES and v not in CUMULUS_RELEASES:
            raise ValueError(f"Cumulus Linux {v}'s NVUE has no PFC watchdog, which the plan's lossless RoCE "
                             f"sets on every compute port: use {CUMULUS_RELEASES[0]} or later")
        return v


def _address(value: str) -> str:
    try:
        ip = netaddr.IPAddress(value, version=4)
    except (netaddr.AddrFormatError, ValueError, TypeError) as e:
        raise ValueError(f"not an IPv4 address: {value!r}") from e
    return str(ip)


GNMI_SINCE = "5.13"  # Cumulus Linux's first NVUE with `system gnmi-server`


# the inventory (vault) variables the push reads the switches' secrets from
SNMP_VAULT_VAR = "vault_switch_snmp_users"  # {user: {auth: ..., priv: ...}}
USERS_VAULT_VAR = "vault_switch_user_hashes"  # {user: crypt(3) hash}
TACACS_VAULT_VAR = "vault_switch_tacacs_key"  # the TACACS+ shared secret
RADIUS_VAULT_VAR = "vault_switch_radius_key"  # the RADIUS shared secret
TACACS_SINCE = "5.15"  # NVUE's `system aaa authentication order` (earlier releases order it per priority key)


class LocalUser(_Spec):
    """A local account on every Cumulus switch; its password hash comes from the vault."""

    name: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] = Field(
        description="Linux user name (lower case, digits, '_', '-'; at most 32)")
    role: Literal["system-admin", "nvue-admin", "nvue-monitor"] = Field(
        "system-admin", description="NVUE role (the three every release 5.6-5.18 has)")


class SnmpUser(_Spec):
    """An SNMPv3 user with authentication and privacy (authPriv), read-only."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{4,32}$")] = Field(
        description="user name: 4-32 letters, digits, '_', '.', '-' (SONiC's SNMP_USER name rule)")
    auth: Literal["sha", "md5"] = Field("sha", description="authentication protocol (NVUE: auth-sha|auth-md5)")
    priv: Literal["aes", "des"] = Field("aes", description="privacy protocol (NVUE: encrypt-aes|encrypt-des)")


class SwitchServices(_Spec):
    """What every Ethernet switch runs besides forwarding, whatever its OS. Servers are reached
    through the management VRF (eth0)."""

    ntp_servers: list[str] = Field([], description="NTP servers (IPv4), iburst")
    dns_servers: list[str] = Field([], description="DNS resolvers (IPv4)")
    syslog_servers: list[str] = Field([], description="remote syslog receivers (IPv4, UDP 514)")
    gnmi_server: bool = Field(
        True, description="the switch's gNMI server on (telemetry/gnmic.yml dials it on port 9339); "
        f"Cumulus Linux has it from {GNMI_SINCE}",
    )
    bgp_graceful_restart: Literal["off", "helper-only", "full"] = Field(
        "helper-only", description="BGP graceful restart on every session: helper-only keeps a restarting "
        "peer's routes; full also restarts gracefully itself",
    )
    bgp_bfd: bool = Field(True, description="BFD on every BGP session between the pod's own switches "
                          "(not the site's border sessions): a dead link or peer is gone in interval x multiplier")
    bfd_interval_ms: Annotated[int, Field(ge=50, le=60000)] = Field(
        300, description="BFD transmit and receive interval (the range every Cumulus release accepts)")
    bfd_multiplier: Annotated[int, Field(ge=2, le=255)] = 3
    host_bond_edge: bool = Field(
        True, description="node and appliance bonds on the in-band pairs: LACP bypass (PXE before the OS "
        "brings LACP up), STP admin edge and BPDU guard",
    )
    snmp_users: list[SnmpUser] = Field(
        [], description="SNMPv3 read-only users on every Ethernet switch (none: no SNMP agent). Only names and "
        "protocols live here: the passwords come from the Ansible vault at push time "
        f"({SNMP_VAULT_VAR}.<name>.auth / .priv) and are never written under build/",
    )
    local_users: list[LocalUser] = Field(
        [], description="local accounts on every Cumulus switch (NVUE `system aaa user`); password hashes from the "
        f"vault ({USERS_VAULT_VAR}.<name>). SONiC keeps local accounts outside ConfigDB: refused there")
    tacacs_servers: list[str] = Field(
        [], description="TACACS+ servers (IPv4, in priority order), reached through the management VRF; logins try "
        f"them, then the local accounts. The shared secret comes from the vault ({TACACS_VAULT_VAR}). "
        f"Cumulus from {TACACS_SINCE}")
    tacacs_auth: Literal["pap", "chap", "login"] = Field("pap", description="TACACS+ authentication type")
    radius_servers: list[str] = Field(
        [], description="RADIUS servers (IPv4, in priority order), through the management VRF; logins try TACACS+ "
        f"(if any), then RADIUS, then the local accounts. The shared secret comes from the vault ({RADIUS_VAULT_VAR}). "
        f"Cumulus from {TACACS_SINCE}")
    radius_auth: Literal["pap", "chap", "mschapv2"] = Field("pap", description="RADIUS authentication type")
    lldp_tx_interval_s: Annotated[int, Field(ge=5, le=254)] = Field(
        30, description="LLDP transmit interval on every switch port (the range SONiC's model and NVUE both take)")
    lldp_hold_multiplier: Annotated[int, Field(ge=2, le=10)] = Field(
        4, description="LLDP hold multiplier: a neighbor is forgotten after interval x multiplier")

    _addresses = field_validator("ntp_servers", "dns_servers", "syslog_servers", "tacacs_servers",
                                 "radius_servers")(
        lambda v: [_address(a) for a in v])

    @field_validator("snmp_users", "local_users")
    @classmethod
    def _unique_names(cls, users: list, info) -> list:
        names = [u.name for u in users]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            what = "SNMP user" if info.field_name == "snmp_users" else "local user"
            raise ValueError(f"{what} {', '.join(twice)} listed twice: a switch has one entry per user name")
        return users


Efficiency = Annotated[float, Field(gt=0, le=1)]


class AcceptanceSpec(_Spec):
    """Overrides of what `superpod accept` expects (the catalog's `acceptance` section)."""

    efficiency: dict[Literal["hbm_copy", "pcie_copy", "nvlink_all_reduce", "rail_write_bw", "network_all_reduce"],
                     Efficiency] = Field(default_factory=dict, description="pass threshold as a share of the peak")
    expected: dict[Literal["hbm_copy_gbs", "pcie_copy_gbs", "node_all_reduce_busbw_gbs", "rail_write_bw_gbps",
                           "network_all_reduce_busbw_gbs"], Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict, description="pass thresholds as absolute figures (GB/s, Gb/s for rails)")


# A DNS name: dot-separated RFC 1123 labels (letters, digits, inner hyphens, 1-63 each).
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
RESOLVERS_MAX = 3  # glibc's MAXNS: resolv.conf uses the first three nameservers only


def _domain(value: str) -> str:
    if not isinstance(value, str) or not _DOMAIN.match(value.lower()):
        raise ValueError(f"not a DNS domain name (dot-separated labels of letters, digits and inner hyphens, "
                         f"1-63 characters each): {value!r}")
    return value.lower()


class Dns(_Spec):
    """Name resolution on the nodes' in-band bond (host_network writes it into netplan, networkd or
    NetworkManager): the bond replaces the member port's DHCP lease, and with it the resolvers."""

    servers: list[str] = Field([], description=f"DNS resolvers (IPv4), at most {RESOLVERS_MAX}: the in-band "
                               "bond's nameservers")
    search: list[str] = Field([], description="search domains, in order")

    _servers = field_validator("servers")(lambda v: [_address(a) for a in v])
    _search = field_validator("search")(lambda v: [_domain(d) for d in v])

    @field_validator("servers")
    @classmethod
    def _at_most_three(cls, servers: list[str]) -> list[str]:
        if len(servers) > RESOLVERS_MAX:
            raise ValueError(f"{len(servers)} resolvers: resolv.conf uses at most {RESOLVERS_MAX} (glibc MAXNS); "
                             "the rest would be ignored")
        return servers


class PodSpec(_Spec):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
    node_model: str
    scalable_units: PositiveInt
    max_scalable_units: PositiveInt | None = Field(
        None, description="end state the spine/core tiers are sized for (default: scalable_units)"
    )
    nodes_per_su: PositiveInt
    compute_fabric: ComputeFabric
    storage_fabric: StorageFabric = StorageFabric()
    management: Management = Management()
    racks: Racks = Racks()
    addressing: Addressing = Addressing()
    dns: Dns = Dns()
    switch_software: SwitchSoftware = SwitchSoftware()
    # validate_default: the release check below runs when the section is left out, too
    switch_services: SwitchServices = Field(SwitchServices(), validate_default=True)
    spares_percent: float = Field(
        0.0, ge=0, le=100, description="bill of materials: spare cables and optics, percent of planned (rounded up)"
    )
    acceptance: AcceptanceSpec = Field(default_factory=AcceptanceSpec,
                                       description="what `superpod accept` expects, over the catalog's figures")

    _node = field_validator("node_model")(lambda v: _known("nodes", v))

    @field_validator("switch_services")
    @classmethod
    def _gnmi_release(cls, services: SwitchServices, info: ValidationInfo) -> SwitchServices:
        software = info.data.get("switch_software")
        release = software.cumulus_release if software else CUMULUS_RELEASES[-1]
        mgmt = info.data.get("management")
        fabrics = [info.data.get("compute_fabric"), info.data.get("storage_fabric"),
                   *((mgmt.inband, mgmt.oob) if mgmt else ())]
        uses_cumulus = any(f is not None and f.switch_os == "cumulus" for f in fabrics)
        if services.gnmi_server and uses_cumulus and release_key(release) < release_key(GNMI_SINCE):
            raise ValueError(f"gnmi_server: Cumulus Linux {release} has no gNMI server (NVUE `system gnmi-server` "
                             f"from {GNMI_SINCE}): set switch_software.cumulus_release to {GNMI_SINCE} or later, "
                             "or gnmi_server: false")
        for name in ("tacacs_servers", "radius_servers"):
            if getattr(services, name) and uses_cumulus and release_key(release) < release_key(TACACS_SINCE):
                raise ValueError(f"{name}: on Cumulus Linux {release} the plan does not write TACACS+ or RADIUS "
                                 f"(NVUE orders logins with `system aaa authentication order` from {TACACS_SINCE}): "
                                 f"set switch_software.cumulus_release to {TACACS_SINCE} or later")
        on_sonic = [f for f in fabrics if f is not None and f.switch_os == "sonic"]
        if services.local_users and on_sonic:
            raise ValueError("local_users: SONiC keeps local accounts outside ConfigDB and this project does not "
                             "manage them: leave local_users empty while a fabric's switch_os is sonic")
        return services

    @model_validator(mode="after")
    def _max_su(self) -> PodSpec:
        if self.max_scalable_units is not None and self.max_scalable_units < self.scalable_units:
            raise ValueError(
                f"max_scalable_units ({self.max_scalable_units}) must not be below "
                f"scalable_units ({self.scalable_units})"
            )
        return self

    @property
    def max_su(self) -> int:
        return self.max_scalable_units or self.scalable_units


def did_you_mean(model: type[BaseModel], loc: tuple) -> str:
    """'; did you mean X?' for a mistyped key: the closest field of the model the key sits in."""
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = getattr(field, "annotation", None)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return ""
        model = inner
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "pod"


def _whole_numbers(data: object) -> object:
    """3.0 -> 3: Pulumi hands a provider its inputs as protobuf Struct values, where every
    number is a double. Only numbers change; "3" and true stay what they are (and are refused)."""
    if isinstance(data, dict):
        return {k: _whole_numbers(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_whole_numbers(v) for v in data]
    if isinstance(data, float) and data.is_integer() and abs(data) < 2**53:
        return int(data)
    return data


def parse(data: object) -> PodSpec:
    """Validate a spec dict; every problem becomes a SpecError naming its field."""
    try:
        pod = PodSpec.model_validate(_whole_numbers(data))
    except ValidationError as e:
        errors = []
        for err in e.errors():
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (not part of the spec)" + did_you_mean(PodSpec, err["loc"])
            elif err["type"] == "missing":
                msg = "required field is missing"
            loc = err["loc"]
            if err["type"] == "value_error" and not loc:
                # model-level rules name their field in the message
                loc = ("max_scalable_units",) if "max_scalable_units" in msg else ()
            errors.append(SpecError(_field_path(loc), msg))
        raise SpecErrors(errors) from None
    check_bounds(pod)  # counts the catalog cannot hold, before any builder lays them out
    return pod


def _load_yaml(text: str, source: str) -> object:
    return strict_yaml.loads(text, source)


def load_spec_file(path: str) -> PodSpec:
    """A bare spec file: the value of `superpod:pod`."""
    data = strict_yaml.load_file(path)
    if not isinstance(data, dict):
        raise SpecError(path, "a spec file must be a mapping (the value of superpod:pod)")
    return parse(data)


def _stack_pod(data: object, path: str) -> object:
    if not isinstance(data, dict):
        raise SpecError(path, "a stack file must be a mapping with a config: mapping")
    config = data.get("config")
    if not isinstance(config, dict):
        rule = "required field is missing" if config is None else "must be a mapping (key: value)"
        raise SpecError(f"{path}: config", rule)
    pod = config.get("superpod:pod")
    if pod is None:
        raise SpecError(f"{path}: config.superpod:pod", "required field is missing")
    if not isinstance(pod, dict):
        raise SpecError(f"{path}: config.superpod:pod", "must be a mapping (the pod spec)")
    return pod


def load_stack_file(path: str) -> PodSpec:
    """A Pulumi stack file: the spec is the structured config value `superpod:pod`."""
    return parse(_stack_pod(strict_yaml.load_file(path), path))


def load_spec_or_stack_file(path: str) -> PodSpec:
    """Either kind of file, told apart by its structure (a top-level `config:` mapping is a
    stack file), never by text that a comment could hold."""
    data = strict_yaml.load_file(path)
    if isinstance(data, dict) and "config" in data and "name" not in data:
        return parse(_stack_pod(data, path))
    if not isinstance(data, dict):
        raise SpecError(path, "a spec file must be a mapping (the value of superpod:pod)")
    return parse(data)


# The spec fields that name a catalog model, and the catalog table each names
MODEL_FIELDS = {
    ("PodSpec", "node_model"): "nodes",
    ("ComputeFabric", "switch_model"): "switches", ("ComputeFabric", "ufm_model"): "appliances",
    ("StorageFabric", "switch_model"): "switches", ("StorageFabric", "server_model"): "appliances",
    ("Inband", "switch_model"): "switches", ("Inband", "core_switch_model"): "switches",
    ("Inband", "mgmt_node_model"): "appliances",
    ("Oob", "switch_model"): "switches", ("Oob", "aggregation_model"): "switches",
    ("Racks", "pdu_model"): "pdus", ("Racks", "cdu_model"): "cdus",
}


def json_schema() -> dict:
    """The spec's JSON Schema, each model field listing the catalog's models (with any overlay)."""
    schema = PodSpec.model_json_schema()
    cat = catalog.load()
    for (model, name), table in MODEL_FIELDS.items():
        props = (schema if model == "PodSpec" else schema["$defs"][model])["properties"]
        field = props[name]
        target = next((alt for alt in field.get("anyOf", []) if alt.get("type") == "string"), field)
        target["enum"] = sorted(getattr(cat, table))
    return schema
