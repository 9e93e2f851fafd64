"""The plan's fast paths give what the library calls they replace give (bench/bench_plan.py, issue 15 item 15)."""

from __future__ import annotations

import random

import netaddr
from netaddr.strategy.ipv4 import int_to_str

from topology.render.switches.nvue import _link_lines, _plain_or_quoted, _scalar
from topology.render.switches.sections import _bounds, _spanning


def test_integer_spanning_prefix_is_netaddrs():
    """Aggregates span a switch's subnets with integers: the same prefix as netaddr.spanning_cidr,
    duplicates and overlapping subnets included."""
    rng = random.Random(15)
    for _ in range(3000):
        lengths = [20, 24, 28, 30, 31, 31, 32]
        nets = [str(netaddr.IPNetwork((0x64400000 + rng.randrange(1 << 14), rng.choice(lengths))).cidr)
                for _ in range(rng.randint(1, 6))]
        want = netaddr.IPNetwork(nets[0]).cidr if len(nets) == 1 else netaddr.spanning_cidr(nets)
        first, plen = _spanning([_bounds(n) for n in nets])
        assert f"{int_to_str(first)}/{plen}" == str(want), nets


def test_uncached_scalars_and_link_lines_write_what_the_memo_writes():
    for v in ("leaf-01:swp1", "on", "it's", "100.64.0.1/31", 9216, True, "400G"):
        assert _plain_or_quoted(v) == _scalar(v)
    assert _link_lines("  ", 9216, 400) == "  link:\n    mtu: 9216\n    speed: 400G\n    state:\n      up: {}\n"
