"""The whole pod routes (issue 32): every network of a two-SU lab pod on real FRR (tests/e2e/
reachlab.py), and the reachability matrix the plan promises, derived from the layout's addresses,
never from the configs under test:

- the mgmt node reaches every GPU node's and storage server's in-band address and every BMC;
- every node's storage addresses reach every storage server's;
- every rail address reaches every other node's rail addresses, over every spine (ECMP width =
  spines);
- the site's border sees exactly the summaries the spec lets out (addressing.inband; the OOB pool
  only with management.oob.announce_to_site), nothing more;
- each switch's routing table covers the addresses the plan says it must reach.

Then again with a spine, an in-band core and one switch of an SU pair powered off (every port
down, so their peers lose carrier, and their daemons frozen; bonds moved to
their other member by hand: the kernel has no bonding driver, so the failover itself is not
tested), and with one pair member's uplinks down while its hosts stay on it (the peer-link
session carries them)."""

from __future__ import annotations

import os
import time

import netaddr
import pytest

from tests.conftest import spec_with
from tests.e2e.fabriclab import fabric_image
from tests.e2e.labpod import TIMINGS, ensure_image
from tests.e2e.reachlab import SITE_ASN, ReachLab
from topology.layout.border import SITE_BORDER
from topology.layout.build import build
from topology.render.switches.build import site_announce

pytestmark = pytest.mark.e2e

INBAND_ROLES = ("inband_switch", "inband_core", "inband_spine")


@pytest.fixture(scope="module")
def pod():
    t0 = time.monotonic()
    layout = build(spec_with("lab", scalable_units=2, compute_fabric={"spine_count": 2}))
    lab = ReachLab(layout, f"superpod-e2e-{os.getpid()}")
    try:
        lab.start(fabric_image(ensure_image()))
        lab.wire()
        lab.configure()
        TIMINGS["reach_bring_up_s"] = round(time.monotonic() - t0, 1)
        yield lab
    finally:
        lab.remove()
        TIMINGS["reach_total_s"] = round(time.monotonic() - t0, 1)


# ---- what the plan says ------------------------------------------------------------------------
def _of_role(lab: ReachLab, *roles: str) -> list[str]:
    return sorted(d.name for d in lab.layout.devices if d.role in roles)


def _addresses(lab: ReachLab, device: str, *pools: str, interface: str | None = None) -> list[str]:
    return [a.address.split("/")[0] for a in lab.layout.addresses_by_device.get(device, [])
            if a.pool in pools and (interface is None or a.interface == interface)]


def _matrix(lab: ReachLab) -> list[tuple[str, str, str]]:
    nodes, servers = _of_role(lab, "gpu_node"), _of_role(lab, "storage_server")
    probes = []
    for mgmt in _of_role(lab, "mgmt_node"):
        src = _addresses(lab, mgmt, "inband", interface="bond0")[0]
        targets = [a for h in nodes + servers for a in _addresses(lab, h, "inband", interface="bond0")]
        targets += [a for h in lab.bmcs for a in _addresses(lab, h, "oob", interface="bmc")]
        probes += [(mgmt, src, dst) for dst in targets]
    server_storage = [a for s in servers for a in _addresses(lab, s, "storage")]
    for node in nodes:
        probes += [(node, src, dst) for src in _addresses(lab, node, "storage") for dst in server_storage]
    rails = {n: _addresses(lab, n, "rails") for n in nodes}
    for node in nodes:
        probes += [(node, src, dst) for src in rails[node] for other in nodes if other != node for dst in rails[other]]
    return probes


def _must_reach(lab: ReachLab, switch: str) -> list[str]:
    """The host addresses a switch's routing table must cover, by its network (the plan's roles)."""
    role = lab.layout.by_name[switch].role
    nodes, servers = _of_role(lab, "gpu_node"), _of_role(lab, "storage_server")
    if role in ("leaf", "spine"):
        return [a for n in nodes for a in _addresses(lab, n, "rails")]
    if role in ("storage_leaf", "storage_spine"):
        return [a for h in nodes + servers for a in _addresses(lab, h, "storage")]
    inband = [a for h in nodes + servers + _of_role(lab, "mgmt_node") for a in _addresses(lab, h, "inband")]
    if role in INBAND_ROLES:
        if role != "inband_core":
            return inband
        return inband + [a for h in lab.bmcs for a in _addresses(lab, h, "oob", interface="bmc")]
    return [a for h in _of_role(lab, "mgmt_node") for a in _addresses(lab, h, "inband")]  # the OOB switches


def _covered(prefixes: list[str], address: str) -> bool:
    return any(netaddr.IPAddress(address) in netaddr.IPNetwork(p) for p in prefixes)


def _planned_sessions(lab: ReachLab, switch: str) -> dict[str, int]:
    """Peer address -> the peer's planned ASN (the site's border: the stand-in's own)."""
    return {n.address: SITE_ASN if n.remote_as == "external" else n.remote_as
            for n in lab.intents[switch].bgp.neighbors}


def _holds(lab: ReachLab, timeout: float = 90) -> list[tuple[str, str, str]]:
    """The matrix, retried until it holds (BGP converging) or `timeout`: what still fails."""
    probes = _matrix(lab)
    deadline = time.monotonic() + timeout
    while True:
        misses = lab.unreachable(probes)
        if not misses or time.monotonic() > deadline:
            return misses
        probes = misses  # only the failed ones again
        time.sleep(2)


# ---- the matrix ----------------------------------------------------------------------------------
@pytest.mark.timeout(900)
def test_every_planned_session_of_every_network_is_established(pod):
    switches = [s for s in pod.switches if s != SITE_BORDER]
    t0 = time.monotonic()

    def up() -> dict[str, tuple[dict, dict]]:
        return {s: (pod.established(s), _planned_sessions(pod, s)) for s in switches
                if pod.established(s) != _planned_sessions(pod, s)}

    assert pod.wait(lambda: not up(), timeout=180, step=3), up()
    TIMINGS["reach_converge_s"] = round(time.monotonic() - t0, 1)
    assert {n.remote_as for s in switches for n in pod.intents[s].bgp.neighbors} - {"external"} <= set(pod.asn.values())


@pytest.mark.timeout(600)
def test_the_reachability_matrix_holds(pod):
    t0 = time.monotonic()
    misses = _holds(pod)
    TIMINGS["reach_matrix_s"] = round(time.monotonic() - t0, 1)
    TIMINGS["reach_matrix_probes"] = len(_matrix(pod))
    assert not misses, misses[:40]
    mgmt = _of_role(pod, "mgmt_node")[0]
    src = _addresses(pod, mgmt, "inband", interface="bond0")[0]
    assert pod.unreachable([(mgmt, src, "192.0.2.1")])  # the prober does see a miss (TEST-NET-1: nobody's)


def test_rails_cross_the_spines_at_full_ecmp_width(pod):
    """Each leaf's route to a node of the other SU: one next hop per uplink, on every spine."""
    spines = _of_role(pod, "spine")
    owner = {a.address.split("/")[0]: a.device for a in pod.layout.addresses if a.pool == "fabric_p2p"}
    nodes = _of_role(pod, "gpu_node")
    for leaf in _of_role(pod, "leaf"):
        su = pod.layout.by_name[leaf].su
        far = next(n for n in nodes if pod.layout.by_name[n].su != su)
        dst = _addresses(pod, far, "rails")[0]
        table = pod.kernel_routes(leaf)
        best = max((p for p in table if _covered([p], dst)), key=lambda p: netaddr.IPNetwork(p).prefixlen)
        uplinks = [lk for lk in pod.layout.links if lk.tier == "leaf-spine" and lk.a_device == leaf]
        assert len(table[best]) == len(uplinks), (leaf, best, table[best])
        assert {owner[h] for h in table[best]} == set(spines), (leaf, best, table[best])


def test_the_site_sees_exactly_the_planned_summaries(pod):
    planned = set(site_announce(pod.layout.spec))
    def seen():
        got = set(pod.vtysh(SITE_BORDER, "show bgp ipv4 unicast").get("routes", {}))
        return got if got == planned else None
    assert pod.wait(seen, timeout=60), pod.vtysh(SITE_BORDER, "show bgp ipv4 unicast").get("routes", {}).keys()
    assert pod.layout.spec.addressing.oob not in planned  # the lab's spec keeps the BMCs off the site


def test_each_switch_routes_what_the_plan_says_it_must(pod):
    missing = {}
    for s in (s for s in pod.switches if s != SITE_BORDER):
        prefixes = list(pod.kernel_routes(s))
        lacking = [a for a in _must_reach(pod, s) if not _covered(prefixes, a)]
        if lacking:
            missing[s] = lacking[:5]
    assert not missing, missing


# ---- failures --------------------------------------------------------------------------------------
def _stopped_hosts(lab: ReachLab, stopped: set[str]) -> list[str]:
    return [h for h, port in lab.active.items() if lab.switch_of(h, port)[0] in stopped]


@pytest.mark.timeout(900)
def test_the_matrix_holds_with_a_spine_a_core_and_a_pair_member_stopped(pod):
    stopped = {_of_role(pod, "spine")[0], _of_role(pod, "inband_core")[0],
               next(s for s in _of_role(pod, "inband_switch") if pod.layout.by_name[s].su == 1)}
    moved = _stopped_hosts(pod, stopped)
    assert moved  # the stopped pair member and core held active bonds
    t0 = time.monotonic()
    try:
        for s in stopped:
            pod.power_off(s)
        for h in moved:  # what the bonding driver would do on carrier loss (not in this kernel)
            pod.fail_over(h, next(p for p in pod.bond_members(h) if p != pod.active[h]))
        misses = _holds(pod, timeout=120)
        assert not misses, misses[:40]
    finally:
        for s in stopped:
            pod.power_on(s)
        for h in moved:
            pod.fail_over(h, pod.bond_members(h)[0])
    TIMINGS["reach_failures_s"] = round(time.monotonic() - t0, 1)
    assert not _holds(pod, timeout=120)


@pytest.mark.timeout(600)
def test_a_pair_member_without_uplinks_routes_through_its_partner(pod):
    member = next(s for s in _of_role(pod, "inband_switch") if pod.layout.by_name[s].su == 2)
    uplinks = [c.a_port for c in pod.cables if c.a_device == member and c.tier in ("inband-core", "inband-spine")]
    hosts = _stopped_hosts(pod, {member})
    assert uplinks and hosts
    for port in uplinks:
        pod.ip(member, "link", "set", port, "down")
    try:
        # its hosts keep their bond on it (no carrier lost on their side): only the peer-link
        # session gives it a way out
        partner = next(n.address for n in pod.intents[member].bgp.neighbors if n.interface == "vlan10")
        assert pod.wait(lambda: set(pod.established(member)) == {partner}, timeout=60), pod.established(member)
        mgmt = _of_role(pod, "mgmt_node")[0]
        src = _addresses(pod, mgmt, "inband", interface="bond0")[0]
        probes = [(mgmt, src, a) for h in hosts for a in _addresses(pod, h, "inband", interface="bond0")]
        deadline = time.monotonic() + 60
        while (misses := pod.unreachable(probes)) and time.monotonic() < deadline:
            time.sleep(2)
        assert not misses, misses
    finally:
        for port in uplinks:
            pod.ip(member, "link", "set", port, "up")

