"""Named spec variants that change what the switch configs hold: each option of the spec that
reaches a switch (peering, pairing, rail mode, storage ports, tiers, switch OS per fabric, the
Cumulus release, the border). Tests that judge rendered switch files by an OS's own rules run
over these as well as over the example stacks; builds are cached per variant."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.conftest import spec_with
from topology.layout.build import build
from topology.layout.model import Layout

# three in-band tiers: more SUs' in-band pairs than the cores can reach (tests/test_inband_tiers.py)
_WIDE_INBAND = {"scalable_units": 2, "max_scalable_units": 40, "racks": {"racks_per_row": 20},
                "management": {"inband": {"mgmt_nodes": 3}}}


_SERVICES = {"ntp_servers": ["192.0.2.10", "192.0.2.11"], "dns_servers": ["192.0.2.53"],
             "syslog_servers": ["192.0.2.20"], "bgp_graceful_restart": "full",
             "snmp_users": [{"name": "monitor"}], "lldp_tx_interval_s": 10, "lldp_hold_multiplier": 3}
# AAA: TACACS+ and RADIUS are written for Cumulus 5.15 and later (the spec refuses it earlier)
_AAA = {"local_users": [{"name": "netops"}], "tacacs_servers": ["192.0.2.49"], "radius_servers": ["192.0.2.18"]}


@dataclass(frozen=True)
class Variant:
    name: str
    base: str  # example stack (Pulumi.<base>.yaml)
    changes: dict = field(default_factory=dict)  # merged into the stack's spec (spec_with)
    why: str = ""


VARIANTS = (
    Variant("unnumbered", "lab", {"compute_fabric": {"bgp_peering": "unnumbered"}},
            "BGP unnumbered on the compute fabric"),
    Variant("per-leaf-rails", "lab", {"addressing": {"rail_mode": "per_leaf"}},
            "one rail subnet per leaf: SVIs and access ports on the leaves"),
    Variant("per-leaf-rail-pods", "lab", {"addressing": {"rail_mode": "per_leaf", "rail_pods": "100.104.0.0/16"}},
            "a routed pod prefix per GPU NIC: more gateways on the rail SVIs, announced by the leaves"),
    Variant("per-leaf-rail-pods-sonic", "lab", {"addressing": {"rail_mode": "per_leaf", "rail_pods": "100.104.0.0/16"},
                                                "compute_fabric": {"switch_os": "sonic"}},
            "the same on SONiC: secondary VLAN_INTERFACE prefixes"),
    Variant("p2p-rail-pods", "lab", {"addressing": {"rail_pods": "100.104.0.0/16"}},
            "a routed pod prefix per GPU NIC on /31 rails: a second address on each node port"),
    Variant("inband-bond-storage", "lab", {"storage_fabric": {"node_ports": "inband_bond"}},
            "storage over the in-band bond, routed by the in-band pairs"),
    Variant("compute-sonic", "lab", {"compute_fabric": {"switch_os": "sonic"}},
            "SONiC on the compute fabric, Cumulus on the others"),
    Variant("inband-sonic", "lab", {"management": {"inband": {"switch_os": "sonic"}}},
            "SONiC in-band, Cumulus compute, storage and OOB"),
    Variant("oob-sonic", "lab", {"management": {"oob": {"switch_os": "sonic"}}},
            "SONiC OOB, Cumulus elsewhere"),
    Variant("three-tier-inband", "lab", _WIDE_INBAND, "in-band spines, core groups and a services pair"),
    Variant("border-asn", "lab", {"addressing": {"border_asn": 65010, "site_routes": ["10.0.0.0/8"]}},
            "border sessions to a numbered site ASN with the site's summaries"),
    Variant("no-border", "lab", {"management": {"inband": {"border_uplinks": 0}}},
            "no north-south links on the in-band cores"),
    Variant("wide-su", "lab", {"nodes_per_su": 64, "compute_fabric": {"switch_model": "sn5600"},
                               "storage_fabric": {"enabled": False}},
            "64 nodes an SU on SN5600: two in-band pairs an SU, 400G legs of 800G cages"),
    Variant("unnumbered-1k", "roce-1k", {"compute_fabric": {"bgp_peering": "unnumbered"}},
            "four SUs, unnumbered"),
    Variant("cumulus-5.14", "lab", {"switch_software": {"cumulus_release": "5.14"}},
            "the last release of NVUE's first object model (interface ip, enable: on)"),
    Variant("services", "lab", {"switch_services": _SERVICES | _AAA},
            "NTP, DNS, syslog, full graceful restart, SNMPv3, LLDP timers, local users, TACACS+, RADIUS"),
    Variant("services-5.14", "lab", {"switch_services": _SERVICES, "switch_software": {"cumulus_release": "5.14"}},
            "the services in 5.14's places (service ntp/dns <vrf>, system syslog, system snmp-server, service lldp)"),
    Variant("services-5.12", "lab", {"switch_services": {**_SERVICES, "gnmi_server": False},
                                     "switch_software": {"cumulus_release": "5.12"}},
            "the services in 5.12's places (service syslog <vrf>; no gNMI server before 5.13)"),
    Variant("cumulus-5.15", "lab", {"switch_software": {"cumulus_release": "5.15"}},
            "the first release of NVUE's second object model (interface ipv4, state: enabled)"),
    Variant("cumulus-5.6", "lab", {"switch_software": {"cumulus_release": "5.6"},
                                   "switch_services": {"gnmi_server": False}},
            "the oldest release the spec accepts (the first NVUE with a PFC watchdog)"),
)

_built: dict[str, Layout] = {}


def variant_layout(v: Variant) -> Layout:
    if v.name not in _built:
        _built[v.name] = build(spec_with(v.base, **v.changes))
    return _built[v.name]
