"""The layout build's fast paths give what the plain computations they replace give (issue 39)."""

from __future__ import annotations

import dataclasses
import random

import netaddr
import pytest
from netaddr.strategy.ipv4 import int_to_str

from tests.conftest import spec_with
from topology.layout import ipv4
from topology.layout.ipam import Pool
from topology.layout.model import Device
from topology.layout.racks import PLACED_FIELDS


def test_p2p_texts_are_netaddrs_for_both_ends():
    """A /31's two addresses from one /24 head: netaddr's text of the lower and the upper."""
    rng = random.Random(39)
    lowers = [0, 254, 256, 2**32 - 2, 0x64600000, *(rng.randrange(1 << 31) * 2 for _ in range(20000))]
    assert [ipv4.p2p_texts(v) for v in lowers] == [(int_to_str(v), int_to_str(v + 1)) for v in lowers]


@pytest.mark.parametrize("bad", [1, 255, 2**32, 2**40, -2])
def test_p2p_texts_refuse_what_is_no_lower_address(bad):
    with pytest.raises(ValueError):
        ipv4.p2p_texts(bad)


def test_pool_p2p_gateway_and_host_are_the_subnets_own():
    """Pool.p2p, gateway and host (kept per subnet) read as the subnet's netaddr addresses."""
    spec = spec_with("lab")
    p2p = Pool(spec, "fabric_p2p", 31, 1000)
    for index in (0, 1, 127, 128, 999):
        net = netaddr.IPNetwork(p2p.subnet(index)[1])
        assert p2p.p2p(index) == (str(net[0]), str(net[1]))
    pool = Pool(spec, "inband", 26, 50)
    for index in (0, 3, 49, 3):  # again: from what the pool kept
        net = netaddr.IPNetwork(pool.subnet(index)[1])
        assert pool.gateway(index) == str(net[1])
        for offset in (1, 2, 61):
            assert pool.host(index, offset) == (f"{net[offset]}/26", str(net))


def test_placed_devices_are_built_in_devices_field_order():
    """racks._Floor builds each placed Device positionally: a new or moved field must fail here."""
    assert tuple(f.name for f in dataclasses.fields(Device)) == PLACED_FIELDS
