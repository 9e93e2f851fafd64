"""Every host netdev is named for the fabric its port is cabled to: a storage port on an
Ethernet storage fabric is enp<bus>s0f<fn>np<fn>, on InfiniBand ibp<bus>s0f<fn> (udev's
predictable names for ConnectX ports in each link mode)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import stack_layout
from topology import catalog

ETH = re.compile(r"^enp\d+s\d+(f\d+)?np\d+$")
IB = re.compile(r"^ibp\d+s\d+(f\d+)?$")


def _host_ports(layout, fabric):
    hosts = {d.name for d in layout.devices if d.role == "gpu_node"}
    for lk in layout.links:
        if lk.fabric == fabric and lk.a_device in hosts:
            yield lk


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_storage_and_inband_netdevs_follow_the_fabric_kind(stack):
    layout = stack_layout(stack)
    cat = catalog.load()
    storage_kind = cat.switches[layout.spec.storage_fabric.switch_model].kind
    storage = list(_host_ports(layout, "storage"))
    assert storage
    for lk in storage:
        assert (IB if storage_kind == "infiniband" else ETH).match(lk.a_port), (storage_kind, lk)
    for lk in _host_ports(layout, "inband"):
        assert ETH.match(lk.a_port), lk


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_addressed_storage_ports_are_ethernet_names_in_the_inventory(stack):
    layout = stack_layout(stack)
    nodes = {d.name for d in layout.devices if d.role == "gpu_node"}
    storage_addrs = [a for a in layout.addresses if a.pool == "storage" and a.device in nodes]
    assert storage_addrs
    for a in storage_addrs:
        assert ETH.match(a.interface), a
