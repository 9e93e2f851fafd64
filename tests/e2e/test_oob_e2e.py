"""Real BGP on the OOB network: the lab pod's rack OOB switches, OOB aggregation switches and
in-band cores run FRR with the frr.conf `superpod plan` renders for them, wired by veth pairs
named from the plan's OOB cables (topology/layout/oob_routing.py). Each switch's management gateways
sit on an interface named as its SVI, so a rack subnet and the mgmt nodes' subnet are
connected routes, as on the switches. No node container takes part; the cores' sessions to the
site's border routers have no far end here and stay down.

Proves what the plan claims and unit tests cannot: every planned OOB session comes up with the
planned ASNs, the cores learn every rack subnet over both of its aggregation switches, every rack
learns the way to the mgmt nodes, a rack answers from its gateway address to the mgmt nodes'
gateway, and a stopped aggregation switch is routed around."""

from __future__ import annotations

import pytest

from tests.conftest import stack_layout
from tests.e2e.fabriclab import FabricLab
from tests.e2e.labpod import docker

pytestmark = pytest.mark.e2e

ROLES = ("oob_switch", "oob_aggregation", "inband_core")
TIERS = ("oob-agg", "oob-uplink")


@pytest.fixture(scope="module")
def oob(lab_pod):
    with FabricLab(stack_layout("lab"), {}, lab_pod.session, roles=ROLES, tiers=TIERS).running() as lab:
        yield lab


def _planned(lab: FabricLab, switch: str) -> dict[str, int]:
    """The sessions on this lab's cables (the OOB /31s): the cores' in-band and site sessions have
    no far end here (tests/e2e/test_reach_e2e.py runs them)."""
    ports = {c.a_port for c in lab.cables if c.a_device == switch} | {c.b_port for c in lab.cables
                                                                      if c.b_device == switch}
    return {n.address: n.remote_as for n in lab.intents[switch].bgp.neighbors if n.interface in ports}


def _of_role(lab: FabricLab, role: str) -> list[str]:
    return sorted(s for s in lab.switches if lab.intents[s].role == role)


def _rack_subnet(lab: FabricLab, rack_switch: str) -> str:
    return next(a.network for a in lab.layout.addresses_by_device[rack_switch] if a.interface == "vlan2")


def _address(lab: FabricLab, device: str, interface: str) -> str:
    return next(a.address for a in lab.layout.addresses_by_device[device] if a.interface == interface).split("/")[0]


def _aggs_behind(lab: FabricLab, switch: str, hops: list[str]) -> set[str]:
    peer = {n.address: n.peer for n in lab.intents[switch].bgp.neighbors}
    return {peer[h] for h in hops if h in peer}


@pytest.mark.timeout(600)
def test_every_planned_oob_session_is_established_with_the_planned_asn(oob):
    def up() -> bool:
        return all(oob.established(s) == _planned(oob, s) for s in oob.switches)

    assert oob.wait(up, timeout=120), {s: (oob.established(s), _planned(oob, s)) for s in oob.switches}
    for s in oob.switches:
        assert {oob.asn[n.peer] for n in oob.intents[s].bgp.neighbors if n.address in _planned(oob, s)} == set(
            _planned(oob, s).values())


def test_each_core_learns_every_rack_subnet_over_both_its_aggregation_switches(oob):
    aggs = set(_of_role(oob, "oob_aggregation"))
    racks = _of_role(oob, "oob_switch")
    for core in _of_role(oob, "inband_core"):
        def learned(c=core):
            routes = oob.bgp_routes(c)
            got = {r: _aggs_behind(oob, c, routes.get(_rack_subnet(oob, r), [])) for r in racks}
            return got if all(v == aggs for v in got.values()) else None

        assert oob.wait(learned, timeout=60), (core, oob.bgp_routes(core))


def test_a_rack_reaches_the_mgmt_nodes_gateway_from_its_own_gateway(oob):
    rack = _of_role(oob, "oob_switch")[0]
    core = _of_role(oob, "inband_core")[0]
    mgmt_gw = _address(oob, core, "vlan10-v0")  # both cores answer for it (VRR), as for the mgmt nodes
    src = _address(oob, rack, "vlan2-v0")  # the BMCs' gateway: their return path is the rack's
    assert oob.wait(lambda: oob.ping_from(rack, src, mgmt_gw), timeout=60), f"{rack} {src} -> {mgmt_gw}"


@pytest.mark.timeout(300)
def test_a_stopped_aggregation_switch_is_routed_around_and_rejoins(oob):
    rack = _of_role(oob, "oob_switch")[0]
    core = _of_role(oob, "inband_core")[0]
    aggs = _of_role(oob, "oob_aggregation")
    subnet = _rack_subnet(oob, rack)
    mgmt_gw, src = _address(oob, core, "vlan10-v0"), _address(oob, rack, "vlan2-v0")
    assert oob.wait(lambda: _aggs_behind(oob, core, oob.nexthops(core, subnet)) == set(aggs), timeout=60)
    paused = docker("pause", oob.switches[aggs[0]], check=False)  # stops answering: hold timers find it
    assert paused.returncode == 0, paused.stderr
    try:
        left = oob.wait(lambda: _aggs_behind(oob, core, oob.nexthops(core, subnet)) == set(aggs[1:]), timeout=60)
        assert left, oob.nexthops(core, subnet)
        assert oob.wait(lambda: oob.ping_from(rack, src, mgmt_gw), timeout=30)
    finally:
        docker("unpause", oob.switches[aggs[0]])
    back = oob.wait(lambda: _aggs_behind(oob, core, oob.nexthops(core, subnet)) == set(aggs), timeout=90)
    assert back, oob.nexthops(core, subnet)
