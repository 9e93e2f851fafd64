"""Each rail leaf's host addresses sit in one contiguous block of their own, so the leaf can
announce a single aggregate instead of one route per GPU NIC (8,192 host routes at 8k GPUs)."""

from __future__ import annotations

import netaddr
import pytest

from tests.conftest import spec_with, stack_layout
from topology.layout.build import build


def _leaf_blocks(layout) -> dict[str, netaddr.IPSet]:
    leaves = {d.name for d in layout.devices if d.role == "leaf"}
    blocks: dict[str, netaddr.IPSet] = {}
    for a in layout.addresses:
        if a.pool == "rails" and a.device in leaves:
            blocks.setdefault(a.device, netaddr.IPSet()).add(netaddr.IPNetwork(a.network))
    return blocks


def _check(layout) -> None:
    blocks = _leaf_blocks(layout)
    assert blocks
    aggregates = {}
    for leaf, nets in blocks.items():
        # the smallest prefix holding all of the leaf's rail subnets is what it announces
        cidrs = list(nets.iter_cidrs())
        aggregates[leaf] = netaddr.spanning_cidr([cidrs[0].network, cidrs[-1].broadcast])
        assert aggregates[leaf].size <= 2 * nets.size, f"{leaf}: {aggregates[leaf]} is mostly others' space"
    seen = netaddr.IPSet()
    for leaf, agg in aggregates.items():
        assert not (seen & netaddr.IPSet([agg])), f"{leaf}: aggregate {agg} overlaps another leaf's"
        seen.add(agg)


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "roce-8k"])
def test_each_rail_leaf_has_one_aggregate_of_its_own(stack):
    _check(stack_layout(stack))


@pytest.mark.parametrize("nodes_per_su", [12, 20, 24])
def test_aggregates_hold_for_odd_su_sizes(nodes_per_su):
    _check(build(spec_with("lab", nodes_per_su=nodes_per_su)))
