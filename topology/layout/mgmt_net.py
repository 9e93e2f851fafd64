"""The management network's routed path: OOB aggregation switches up to the in-band network.

Every rack's OOB switch owns its rack subnet's gateway and routes over /31 uplinks to the OOB
aggregation switches; each aggregation switch sends `management.oob.aggregation_uplinks` routed
links from its top cages to the in-band cores (two tiers) or to the services pair (three
tiers), where the mgmt nodes' subnet has its gateway: so the mgmt nodes reach every BMC, PDU,
CDU and switch management port. Ports are positional: on a core, the uplinks take whole cages
from the top down, skipping the cages its mgmt nodes and peer links hold and the bottom cages
the end state's switch uplinks reserve, so growing the pod moves none of them.
"""

from __future__ import annotations

from math import ceil

from topology.catalog import Catalog
from topology.catalog.ports import cages_used
from topology.errors import SpecError
from topology.layout.cabled_ports import ports_used
from topology.layout.inband import SIDES, size_inband
from topology.layout.model import Device, Link
from topology.spec import PodSpec

TIER = "oob-uplink"


def oob_uplinks(spec: PodSpec, cat: Catalog, devices: list[Device], links: list[Link]) -> list[Link]:
    oob, ib = spec.management.oob, spec.management.inband
    aggs = sorted(d.name for d in devices if d.role == "oob_aggregation")
    if not aggs:
        return []
    agg_sw = cat.switches[oob.aggregation_model]
    core_key = ib.core_switch_model or ib.switch_model
    sz = size_inband(spec, cat)
    speed = sz.speed
    if speed not in agg_sw.lanes:
        raise SpecError("management.oob.aggregation_model",
                        f"OOB fabric: {oob.aggregation_model} has no {speed}G ports for its in-band uplinks")
    # the cabled ports of the switches the uplinks land on (not of every device: 600k ends at 100k GPUs)
    lands = [d.name for d in devices if d.role == "inband_core" or d.role == "inband_switch" and d.su is None]
    used = ports_used(links, set(lands))
    out: list[Link] = []
    if sz.tiers == 2:
        core_sw = cat.switches[core_key]
        cores = sorted(d.name for d in devices if d.role == "inband_core")
        lpc = ib.uplinks_per_switch // sz.cores
        reserved = ceil(sz.switches_max * lpc / core_sw.lanes[sz.up_speed])  # the end state's switch uplinks
        taken = {c: cages_used(core_sw, used.get(c, set())) for c in cores}  # once per core, not per cage
        free = {c: [k for k in range(core_sw.cages - 1, reserved - 1, -1) if k not in taken[c]] for c in cores}
        per_core = ceil(len(aggs) * oob.aggregation_uplinks / len(cores))
        lanes = core_sw.lanes[speed]
        short = [c for c in cores if len(free[c]) * lanes < per_core]
        if short:
            # the mgmt nodes' cages are what a core can give back: name them when they would do
            mgmt = cat.appliances[ib.mgmt_node_model]
            mgmt_cages = ceil(ceil(ib.mgmt_nodes * mgmt.inband_ports / len(cores)) / lanes) if ib.mgmt_nodes else 0
            spare = len(free[short[0]]) + mgmt_cages - ceil(per_core / lanes)
            field, fix = "management.oob.aggregation_uplinks", "aggregation_uplinks: 1"
            if mgmt_cages and spare >= 0:
                most = spare * lanes * len(cores) // max(mgmt.inband_ports, 1)
                field, fix = "management.inband.mgmt_nodes", f"at most {most} mgmt nodes"
            raise SpecError(
                field,
                f"OOB fabric: {len(aggs)} aggregation switches x {oob.aggregation_uplinks} uplinks need {per_core} "
                f"{speed}G ports on each in-band core; {short[0]} has {len(free[short[0]]) * lanes} free beside "
                f"{ib.mgmt_nodes} mgmt nodes (use {fix}, or a larger management.inband.core_switch_model)",
            )
        for a, agg in enumerate(aggs):
            for j in range(oob.aggregation_uplinks):
                k = a * oob.aggregation_uplinks + j
                core = cores[k % len(cores)]
                cage, lane = divmod(k // len(cores), lanes)
                out.append(Link(agg, agg_sw.port((agg_sw.cages - 1 - j) * agg_sw.lanes[speed], speed), core,
                                core_sw.port(free[core][cage] * lanes + lane, speed), "oob", TIER, speed, slot=k))
        return out
    # three tiers: the services pair's host ports after the mgmt nodes'
    sw = cat.switches[ib.switch_model]
    mgmt_ports = ib.mgmt_nodes * cat.appliances[ib.mgmt_node_model].inband_ports
    first = ceil(mgmt_ports / SIDES)
    svc = sorted(d.name for d in devices if d.role == "inband_switch" and d.su is None)
    for a, agg in enumerate(aggs):
        for j in range(oob.aggregation_uplinks):
            k = a * oob.aggregation_uplinks + j
            side, index = k % SIDES, first + k // SIDES
            port = sw.port(index, speed) if index < sw.radix(speed) else ""
            if not port or port in used.get(svc[side], set()) or (
                    index // sw.lanes[speed] >= sz.first_peer // sw.lanes[sw.native_gbps]):
                raise SpecError(
                    "management.oob.aggregation_uplinks",
                    f"OOB fabric: {len(aggs)} aggregation switches x {oob.aggregation_uplinks} uplinks exceed the "
                    f"in-band services pair's host ports; use aggregation_uplinks: 1",
                )
            out.append(Link(agg, agg_sw.port((agg_sw.cages - 1 - j) * agg_sw.lanes[speed], speed), svc[side],
                            port, "oob", TIER, speed, slot=k))
    return out
