"""Every gateway a host is given is an address on a named interface of a switch, and every
bond lands on a switch pair the plan makes able to carry it (MLAG peer links, or EVPN-MH)."""

from __future__ import annotations

from collections import defaultdict

import netaddr
import pytest

from tests.conftest import spec_with, stack_layout
from topology.layout.build import build

OWNED_POOLS = ("inband", "storage", "rails", "oob")


def _owned(layout) -> dict[str, set[tuple[str, str]]]:
    owners = defaultdict(set)
    for a in layout.addresses:
        owners[str(netaddr.IPNetwork(a.address).ip)].add((a.device, a.interface))
    return owners


def _check_gateways(layout) -> None:
    owners = _owned(layout)
    switches = {d.name for d in layout.devices if d.role.endswith(("switch", "leaf", "core", "spine"))}
    subnets_on = {(x.device, x.network) for x in layout.addresses}  # one pass: roce-8k has ~10^5 addresses
    for a in layout.addresses:
        if a.pool not in OWNED_POOLS or not a.peer or a.network.endswith("/31") or a.device in switches:
            continue
        holders = owners.get(a.peer, set())
        assert holders, f"{a.device} {a.interface}: gateway {a.peer} is no device's address"
        assert all(dev in switches for dev, _ in holders), (a, holders)
        for dev, _ in holders:  # the gateway lives in the host's subnet on the switch
            assert (dev, a.network) in subnets_on, (a, dev)


def _check_bond_pairs(layout) -> None:
    spec = layout.spec
    members = defaultdict(set)  # node -> in-band switches its bond members land on
    for lk in layout.links:
        if lk.tier == "node-inband":
            members[lk.a_device].add(lk.b_device)
    peer = defaultdict(int)
    for lk in layout.links:
        if lk.tier == "inband-peer":
            peer[frozenset((lk.a_device, lk.b_device))] += 1
    for node, switches in members.items():
        assert len(switches) == 2, (node, switches)
        if spec.management.inband.pairing == "mlag":
            assert peer[frozenset(switches)] == spec.management.inband.peer_links, (node, switches)
        else:
            assert not peer


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib", "roce-8k"])
def test_every_gateway_is_owned_by_a_switch(stack):
    _check_gateways(stack_layout(stack))


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_bonds_land_on_an_mlag_pair_with_peer_links(stack):
    _check_bond_pairs(stack_layout(stack))


def test_storage_servers_get_a_subnet_per_leaf():
    layout = build(spec_with("roce-1k", storage_fabric={"storage_servers": 40}))  # two server leaves
    leaf_of = {lk.a_device: lk.b_device for lk in layout.links if lk.tier == "server-storage_leaf"}
    nets = defaultdict(set)
    for a in layout.addresses:
        if a.device in leaf_of and a.pool == "storage":
            nets[a.network].add(leaf_of[a.device])
    assert len(nets) == 2
    assert all(len(leaves) == 1 for leaves in nets.values()), nets
