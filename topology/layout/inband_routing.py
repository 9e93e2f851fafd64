"""The in-band network's routing: eBGP on /31 uplinks, each SU pair announcing its subnets.

NVIDIA's BasePOD/SuperPOD in-band designs offer two ways up from an SU's switch pair: an L2 MLAG
bond into an MLAG core pair, or routed uplinks. This plan routes (docs/switches.md says why):
each switch of a pair is a leaf of its own (RFC 7938: an ASN per leaf, /31 per uplink, RFC 3021)
with eBGP to the in-band cores (two tiers) or to its block's in-band spines (three tiers, one
ASN per block; the spines eBGP up to the cores). Both switches of a pair originate the pair's
subnet (both answer for its VRR gateway), so the cores hold it over every uplink; the pair also
peers across its peer link (ipam: each side's own vlan10 address, which MLAG carries over the
peer link), so a member that loses all its uplinks still routes through its partner instead of
blackholing the bonds whose active member it holds.

Addresses: /31s from addressing.fabric_p2p in regions after the fabrics' (sized for the end
state, by the link's slot: switch ordinal x uplinks + j, spine x spine uplinks + k), the upper
end .0. ASNs: a region after the OOB network's, so no ASN of an earlier region moves.
"""

from __future__ import annotations

from topology.catalog import Catalog
from topology.layout.inband import size_inband
from topology.layout.model import Asn, Device
from topology.layout.storage_converged import converged
from topology.spec import PodSpec

UPLINK_TIERS = ("inband-core", "inband-spine", "inband-spine-core")  # the routed in-band /31s
LEAF, SPINE = "inband-leaf", "inband-spine"


def uplink_regions(spec: PodSpec, cat: Catalog) -> list[tuple[str, int]]:
    """(link tier, /31s of the end state) for the in-band network's routed links."""
    sz = size_inband(spec, cat)
    up = spec.management.inband.uplinks_per_switch
    if sz.tiers == 2:
        return [("inband-core", sz.switches_max * up)]
    return [("inband-spine", sz.switches_max * up), ("inband-spine-core", sz.spines_max * sz.spine_up)]


def inband_asns(spec: PodSpec, cat: Catalog, devices: list[Device], first: int) -> tuple[list[Asn], int]:
    """An ASN per SU in-band switch (unless storage_converged gave them one already) and one per
    block of in-band spines, from `first` on; and the first ASN after the region."""
    sz = size_inband(spec, cat)
    leaves = 0 if converged(spec) else sz.switches_max
    out = []
    for d in devices:
        if d.role == "inband_switch" and d.su is not None and leaves:
            out.append(Asn(d.name, first + d.slot, LEAF))
        elif d.role == "inband_spine":
            out.append(Asn(d.name, first + leaves + d.block - 1, SPINE))
    return out, first + leaves + sz.blocks_max
