"""The OOB network's routing: eBGP on every OOB /31, so each rack subnet reaches the mgmt nodes.

The rack OOB switches answer for their rack subnet's gateway and originate that subnet; the
aggregation switches carry it up to the in-band switches that take their uplinks (the cores,
or the services pair of a three-tier in-band network, topology/layout/mgmt_net.py), which originate
the management subnets they hold. ASNs, positional after the fabrics' regions: the aggregation
switches share one (as a spine tier does: a rack route never loops through another aggregation
switch), the next is the upstream's when it has none of its own (the cores' border ASN wins),
then one per rack position (a rack's OOB switches share its subnet, so its ASN), sized for the
end state's rows, so growing the pod moves none of them.
"""

from __future__ import annotations

from topology.layout.mgmt_net import TIER as UPLINK
from topology.layout.model import Asn, Device, Link, Rack

AGGREGATION, UPSTREAM, RACK = "oob-aggregation", "oob-upstream", "oob-rack"
TIERS = ("oob-agg", UPLINK)  # the routed /31s: rack OOB switch to aggregation, aggregation to in-band


def oob_asns(devices: list[Device], racks: list[Rack], rack_positions: int, first: int) -> tuple[list[Asn], int]:
    """The OOB switches' ASNs from `first` on, and the first ASN after the OOB region."""
    ordinal = {r.name: r.ordinal for r in racks}
    out = []
    for d in devices:
        if d.role == "oob_aggregation":
            out.append(Asn(d.name, first, AGGREGATION))
        elif d.role == "oob_switch":
            out.append(Asn(d.name, first + 2 + ordinal[d.rack], RACK))
    return out, first + 2 + rack_positions


def upstream_asns(links: list[Link], asns: list[Asn]) -> list[Asn]:
    """The reserved ASN for the in-band switches the aggregation uplinks land on, where they have
    none (no border uplinks, or the services pair of a three-tier in-band network)."""
    agg = next((a.asn for a in asns if a.scope == AGGREGATION), None)
    have = {a.device for a in asns}
    ups = sorted({lk.b_device for lk in links if lk.tier == UPLINK} - have)
    return [Asn(name, agg + 1, UPSTREAM) for name in ups] if agg is not None else []
