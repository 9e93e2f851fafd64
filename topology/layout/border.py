"""North-south: the in-band cores are the pod's border toward the site.

NVIDIA's north-south designs (Mission Control north-south network, the border leaf pair "BTOR")
give the management network a pair of border switches with eBGP to the customer's edge, which
receives summary routes of the pod's management space. Here the in-band cores are that pair
(they already hold the mgmt nodes' gateway and the OOB aggregation uplinks):
`management.inband.border_uplinks` routed links from each core to the site's border routers,
a /31 each from `addressing.border` (site end .0, core .1), eBGP to `addressing.border_asn`
(`remote-as external` when unset), the cores' own ASN the top of the pod's range (asn_last).

Ports are positional: whole free cages of each core from the top down, below the cages its mgmt
nodes, peer links and OOB uplinks hold, above the cages the end state's switch (two tiers) or
spine (three tiers) links reserve, so growing the pod moves none of them. The far end is the
site's equipment (`site-border`, port `handoffN`), no device of the plan. Each border uplink is
a cable like any other (length class `border`): its run is `management.inband.border_run_m`, else
from the core to the head of its row (the site's run beyond that is theirs), rounded up to a stock
length; always optics, one module in the core's cage (a border uplink has its cage to itself);
the site's end is named as a cage like the core's, but its router's optic is the site's to order.
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from topology.catalog import Catalog
from topology.catalog.ports import cages_used
from topology.errors import SpecError
from topology.layout.cabled_ports import ports_used
from topology.layout.cabling import end_of, parts, run_length, stock_length
from topology.layout.inband import size_inband
from topology.layout.ipam import Pool
from topology.layout.ipv4 import int_to_str
from topology.layout.model import Address, Asn, Device, Link, Rack
from topology.spec import PodSpec

TIER = "border"
SITE_BORDER = "site-border"  # the site's border routers: the far end of every border uplink
POOL = "border"


def reserved_core_cages(spec: PodSpec, cat: Catalog) -> int:
    """An in-band core's bottom cages that the end state's switch (two tiers) or spine (three
    tiers) links hold: nothing else may take them, so growing the pod moves nothing."""
    ib = spec.management.inband
    core_sw = cat.switches[ib.core_switch_model or ib.switch_model]
    sz = size_inband(spec, cat)
    if sz.tiers == 2:
        ends = sz.switches_max * (ib.uplinks_per_switch // sz.cores)
    else:
        ends = sz.blocks_max * sz.spine_links_per_core
    return ceil(ends / core_sw.lanes[sz.up_speed])


def border_uplinks(spec: PodSpec, cat: Catalog, devices: list[Device], links: list[Link]) -> list[Link]:
    """Each in-band core's border uplinks at the core's native speed. Slot: core slot x count + j."""
    ib = spec.management.inband
    count = ib.border_uplinks
    cores = sorted((d for d in devices if d.role == "inband_core"), key=lambda d: d.slot)
    if not count or not cores:
        return []
    core_key = ib.core_switch_model or ib.switch_model
    core_sw = cat.switches[core_key]
    reserved = reserved_core_cages(spec, cat)
    used = ports_used(links, {c.name for c in cores})
    speed = core_sw.native_gbps
    out: list[Link] = []
    for core in cores:
        taken = cages_used(core_sw, used.get(core.name, set()))
        free = [k for k in range(core_sw.cages - 1, reserved - 1, -1) if k not in taken]
        if len(free) < count:
            raise SpecError(
                "management.inband.border_uplinks",
                f"in-band fabric: {count} border uplinks per in-band core need {count} free cages; "
                f"{core.name} ({core_key}) has {len(free)} beside its switch, mgmt node, peer and OOB links "
                f"(use border_uplinks: {len(free)}, or a larger management.inband.core_switch_model)",
            )
        for j in range(count):
            slot = core.slot * count + j
            out.append(Link(core.name, core_sw.port(free[j] * core_sw.lanes[speed], speed), SITE_BORDER,
                            f"handoff{slot + 1}", "inband", TIER, speed, slot=slot))
    return out


def border_cables(spec: PodSpec, cat: Catalog, links: list[Link], devices: list[Device],
                  racks: list[Rack]) -> list[Link]:
    """Length, media and parts of each border uplink: the spec's run, else the core to the head
    of its row; optics only (the site's router takes the optic the site orders to match)."""
    if not links:
        return []
    by_name = {d.name: d for d in devices}
    pos = {r.name: (r.row, r.position) for r in racks}
    run = spec.management.inband.border_run_m
    out = []
    for lk in links:
        core = by_name[lk.a_device]
        site = Device(SITE_BORDER, "site_border", core.model, rack=SITE_BORDER)
        if run is None:  # the site's end at position 0 of the core's row
            length = run_length(spec, core, site, {core.rack: pos[core.rack], SITE_BORDER: (pos[core.rack][0], 0)})
        else:
            length = stock_length(run)
        end_core, end_site = end_of(cat, core, lk), end_of(cat, site, lk)
        end_core = replace(end_core, ports_per_module=1)  # its cage holds this uplink alone
        c = parts(cat, lk, end_core, end_site, length, optical_only=True)
        out.append(replace(lk, length_class=TIER, media=c.media, length_m=length, a_part=c.a_part, b_part=c.b_part,
                           cable_part=c.cable, a_shared=1, b_shared=1, cable_count=c.count, cable_shared=c.shared))
    return out


def border_addresses(spec: PodSpec, links: list[Link]) -> list[Address]:
    """A /31 per border uplink by its slot: the site's end .0 (its peer), the core's .1. Only
    the core's end is an address of the plan; the site configures .0."""
    if not links:
        return []
    pool = Pool(spec, POOL, 31, max(lk.slot for lk in links) + 1)
    out = []
    for lk in links:
        base, net = pool.subnet(lk.slot)
        out.append(Address(lk.a_device, lk.a_port, f"{int_to_str(base + 1)}/31", net, POOL, int_to_str(base)))
    return out


def border_asns(spec: PodSpec, devices: list[Device], asns: list[Asn]) -> list[Asn]:
    """The in-band cores share the top ASN of the pod's range (the fabrics count up from asn_first,
    so it never moves as the pod grows)."""
    cores = [d for d in devices if d.role == "inband_core"]
    if not spec.management.inband.border_uplinks or not cores:
        return []
    top = spec.addressing.asn_last
    if any(a.asn >= top for a in asns):
        a = spec.addressing
        raise SpecError(
            "addressing.asn_last",
            f"ASN range {a.asn_first}-{a.asn_last}: the fabrics take it all and the in-band cores' border ASN "
            f"(asn_last) needs one more; raise asn_last by 1",
        )
    return [Asn(d.name, top, "inband-border") for d in cores]
