"""catalog/ports.py, the one home of port and cage arithmetic, against the packaged catalog's models."""

from __future__ import annotations

import pytest

from topology import catalog
from topology.catalog.ports import cage_of, cages_used

SWITCHES = sorted(catalog.load().switches)


@pytest.mark.parametrize("key", SWITCHES)
def test_every_port_name_is_one_cages_at_every_speed(key):
    sw = catalog.load().switches[key]
    for speed, lanes in sw.lanes.items():
        for i in range(sw.radix(speed)):
            # the model's own naming (SwitchModel.port) puts port i of a speed in cage i // lanes
            assert cage_of(sw, sw.port(i, speed)) == i // lanes


@pytest.mark.parametrize("key", SWITCHES)
def test_cages_used_are_the_cages_of_the_ports(key):
    sw = catalog.load().switches[key]
    top = sw.cages - 1
    ports = {sw.port(0, sw.native_gbps), sw.port(top * sw.lanes[sw.native_gbps], sw.native_gbps)}
    assert cages_used(sw, ports) == {0, top}
