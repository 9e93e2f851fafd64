"""Real BGP over the plan: the lab pod's leaves and spines run FRR with the rendered frr.conf,
wired to the shared lab pod's node containers by veth pairs named from the plan's cables.

The lab stack plans one spine (four parallel uplinks per leaf); so that a spine can fail while
traffic still flows, this lab plans the same pod with `compute_fabric.spine_count: 2` (the
override the spec offers): the nodes, leaves, rails and their addresses are the lab's own, only
the leaf-spine cables and their /31s differ."""

from __future__ import annotations

import netaddr
import pytest

from tests.conftest import spec_with
from tests.e2e.fabriclab import FabricLab
from tests.e2e.labpod import docker
from topology.layout.build import build

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fabric(lab_pod):
    layout = build(spec_with("lab", compute_fabric={"spine_count": 2}))
    with FabricLab(layout, lab_pod.containers, lab_pod.session).running() as lab:
        yield lab


def _sessions_up(lab: FabricLab) -> bool:
    return all(len(lab.established(s)) == len(lab.intents[s].bgp.neighbors) for s in lab.switches)


def _leaves(lab: FabricLab) -> list[str]:
    return sorted(s for s in lab.switches if lab.intents[s].role == "leaf")


def _announced(lab: FabricLab, leaf: str) -> list[str]:
    bgp = lab.intents[leaf].bgp
    return list(bgp.aggregates) or [n for n in bgp.networks if not n.endswith("/32")]


def _spines_behind(lab: FabricLab, leaf: str, hops: list[str]) -> set[str]:
    peer = {n.address: n.peer for n in lab.intents[leaf].bgp.neighbors}
    return {peer[h] for h in hops if h in peer}


@pytest.mark.timeout(600)
def test_every_planned_session_is_established_with_the_planned_asn(fabric):
    assert fabric.wait(lambda: _sessions_up(fabric), timeout=120), {
        s: len(fabric.established(s)) for s in fabric.switches
    }
    for switch, sw in fabric.intents.items():
        assert fabric.established(switch) == {n.address: n.remote_as for n in sw.bgp.neighbors}, switch
        assert {fabric.asn[n.peer] for n in sw.bgp.neighbors} == {n.remote_as for n in sw.bgp.neighbors}


@pytest.mark.timeout(300)
def test_bfd_is_up_on_every_planned_session(fabric):
    """The rendered `bfd profile FABRIC` on each session: bfdd brings every one up (300 ms x 3)."""
    def up() -> bool:
        return all(fabric.bfd_up(s) >= {n.address for n in fabric.intents[s].bgp.neighbors} for s in fabric.switches)

    assert fabric.wait(up, timeout=60), {s: fabric.bfd_up(s) for s in fabric.switches}


def test_each_leaf_learns_every_other_rails_aggregate_over_all_spines(fabric):
    spines = {s for s in fabric.switches if fabric.intents[s].role == "spine"}
    leaves = _leaves(fabric)

    def learned(leaf: str) -> dict[str, list[str]] | None:
        uplinks = len(fabric.intents[leaf].bgp.neighbors)
        routes = fabric.bgp_routes(leaf)
        wanted = {p: routes.get(p, []) for other in leaves if other != leaf for p in _announced(fabric, other)}
        return wanted if all(len(hops) == uplinks for hops in wanted.values()) else None

    for leaf in leaves:
        routes = fabric.wait(lambda lf=leaf: learned(lf), timeout=60)
        assert routes, (leaf, fabric.bgp_routes(leaf))
        assert len(routes) >= len(leaves) - 1  # at least one aggregate from every other rail
        for prefix, hops in routes.items():
            assert _spines_behind(fabric, leaf, hops) == spines, (leaf, prefix, hops)


def _probe(fabric):
    """node01's rail-0 address to node02's rail-3 address: rail-0 leaf -> spine -> rail-3 leaf."""
    nodes = sorted(fabric.nodes)
    return nodes[0], fabric.rail_address(nodes[0], 0), fabric.rail_address(nodes[1], 3)


def test_rail0_reaches_another_nodes_rail3_through_the_spines(fabric):
    host, src, dst = _probe(fabric)
    leaf0 = next(s for s in _leaves(fabric) if fabric.intents[s].bgp and fabric.layout.by_name[s].rail == 0)
    agg = next(p for p in _announced(fabric, next(s for s in _leaves(fabric) if fabric.layout.by_name[s].rail == 3))
               if netaddr.IPAddress(dst) in netaddr.IPNetwork(p))
    assert _spines_behind(fabric, leaf0, fabric.nexthops(leaf0, agg))  # the path leaves rail 0 through spines
    assert fabric.wait(lambda: fabric.ping(host, src, dst), timeout=30), f"{src} -> {dst}"


@pytest.mark.timeout(300)
def test_a_stopped_spine_is_routed_around_and_rejoins(fabric):
    host, src, dst = _probe(fabric)
    leaf0 = next(s for s in _leaves(fabric) if fabric.layout.by_name[s].rail == 0)
    rail3 = next(s for s in _leaves(fabric) if fabric.layout.by_name[s].rail == 3)
    agg = next(p for p in _announced(fabric, rail3) if netaddr.IPAddress(dst) in netaddr.IPNetwork(p))
    spines = sorted(s for s in fabric.switches if fabric.intents[s].role == "spine")
    full = len(fabric.nexthops(leaf0, agg))
    paused = docker("pause", fabric.switches[spines[0]], check=False)  # stops answering: hold timers find it
    assert paused.returncode == 0, paused.stderr
    try:
        left = fabric.wait(lambda: _spines_behind(fabric, leaf0, fabric.nexthops(leaf0, agg)) == set(spines[1:]),
                           timeout=60)
        assert left, fabric.nexthops(leaf0, agg)
        assert fabric.wait(lambda: fabric.ping(host, src, dst), timeout=20)
    finally:
        docker("unpause", fabric.switches[spines[0]])
    back = fabric.wait(lambda: len(fabric.nexthops(leaf0, agg)) == full, timeout=90)
    assert back, fabric.nexthops(leaf0, agg)
    assert _spines_behind(fabric, leaf0, fabric.nexthops(leaf0, agg)) == set(spines)
    assert fabric.ping(host, src, dst)
