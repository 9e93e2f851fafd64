"""Management reachability (issue 15, item 12): every OOB gateway is an address of a named
switch interface, and a routed path of cabled, addressed links runs from every rack's OOB
switch through the OOB aggregation to the switches that hold the mgmt nodes' gateway."""

from __future__ import annotations

from collections import defaultdict, deque

import netaddr
import pytest

from tests.conftest import spec_with, stack_layout
from tests.invariants import check_gateways_owned, check_growth
from topology.layout.build import build


def _routed_graph(layout) -> dict[str, set[str]]:
    """Switches joined by a cable whose two ends hold the two addresses of one /31."""
    p2p = {(a.device, a.interface): a.network for a in layout.addresses if a.network.endswith("/31")}
    graph = defaultdict(set)
    for lk in layout.links:
        a, b = p2p.get((lk.a_device, lk.a_port)), p2p.get((lk.b_device, lk.b_port))
        if a and a == b:
            graph[lk.a_device].add(lk.b_device)
            graph[lk.b_device].add(lk.a_device)
    return graph


def _check_reach(layout) -> None:
    check_gateways_owned(layout)
    mgmt_gw = {a.peer for a in layout.addresses if a.device.startswith("mgmt-") and a.interface == "bond0"}
    targets = {a.device for a in layout.addresses
               if str(netaddr.IPNetwork(a.address).ip) in mgmt_gw and a.interface.endswith("-v0")}
    assert targets, "the mgmt nodes' gateway is no switch's"
    graph = _routed_graph(layout)
    oob_gw_owner = {}
    for a in layout.addresses:
        if a.pool == "oob" and a.interface == "vlan2-v0":
            oob_gw_owner[a.network] = a.device
    bmcs = [a for a in layout.addresses if a.pool == "oob" and a.interface == "bmc"]
    assert bmcs
    for start in sorted({oob_gw_owner[a.network] for a in bmcs}):
        seen, todo = {start}, deque([start])
        while todo:
            for nxt in graph[todo.popleft()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        assert seen & targets, f"{start}: no routed path to the mgmt nodes' gateway ({sorted(targets)})"


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_every_bmc_has_a_routed_path_to_the_mgmt_nodes(stack):
    _check_reach(stack_layout(stack))


def test_three_tier_inband_routes_oob_through_the_services_pair():
    layout = build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20},
                             management={"inband": {"mgmt_nodes": 3}}))
    _check_reach(layout)
    assert {lk.b_device for lk in layout.links if lk.tier == "oob-uplink"} == {"inband-svc-a", "inband-svc-b"}


def test_each_aggregation_switch_has_the_spec_count_of_uplinks():
    for count in (1, 2):
        layout = build(spec_with("lab", management={"oob": {"aggregation_uplinks": count}}))
        aggs = [d.name for d in layout.devices if d.role == "oob_aggregation"]
        ups = defaultdict(int)
        for lk in layout.links:
            if lk.tier == "oob-uplink":
                ups[lk.a_device] += 1
        assert aggs and all(ups[a] == count for a in aggs)


def test_the_management_path_is_growth_stable():
    small = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4))
    check_growth(small, stack_layout("roce-1k"))
