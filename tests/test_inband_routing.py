"""The in-band network routes end to end (issue 32): every SU pair's uplinks are routed /31s
with an eBGP session to the planned far end, three-tier in-band spines route, each MLAG pair
peers across its peer link so a member without uplinks does not blackhole, each pair originates
its own subnets, and the cores announce to the site only the pools the spec allows (the OOB pool,
every BMC, only on request). Expectations come from the layout (links, addresses, ASNs) and the
spec; FRR's own parser (`vtysh -C`) judges the rendered frr.conf."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import spec_with
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.frr import render_frr

ROUTED = ("inband-core", "inband-spine", "inband-spine-core")


@pytest.fixture(scope="module")
def two_su():
    layout = build(spec_with("lab", scalable_units=2))
    return layout, {i.name: i for i in build_intents(layout)}


@pytest.fixture(scope="module")
def three_tier():
    layout = build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20},
                             management={"inband": {"mgmt_nodes": 3}}))
    return layout, {i.name: i for i in build_intents(layout)}


def _addr(layout, device: str, interface: str) -> str:
    return next(a.address for a in layout.addresses_by_device[device] if a.interface == interface)


def _check_routed_links(layout, intents) -> int:
    """Each routed in-band link: one /31 at both ends, and a session each way to the planned ASN."""
    asn = {a.device: a.asn for a in layout.asns}
    links = [lk for lk in layout.links if lk.tier in ROUTED]
    for lk in links:
        a, b = _addr(layout, lk.a_device, lk.a_port), _addr(layout, lk.b_device, lk.b_port)
        assert a.endswith("/31") and b.endswith("/31"), lk
        for here, there, far in ((lk.a_device, lk.b_device, b), (lk.b_device, lk.a_device, a)):
            sessions = {(n.address, n.remote_as) for n in intents[here].bgp.neighbors}
            assert (far.split("/")[0], asn[there]) in sessions, (here, there, far)
    return len(links)


def test_every_su_uplink_is_a_routed_ebgp_session(two_su):
    layout, intents = two_su
    ib = layout.spec.management.inband
    su_switches = [d.name for d in layout.devices if d.role == "inband_switch"]
    assert len(su_switches) == 4  # two SUs, a pair each
    assert _check_routed_links(layout, intents) == len(su_switches) * ib.uplinks_per_switch
    asns = {a.asn for a in layout.asns if a.device in su_switches}
    assert len(asns) == len(su_switches)  # a leaf ASN each (RFC 7938): eBGP across the peer link too


def test_three_tier_spines_route_between_blocks_and_cores(three_tier):
    layout, intents = three_tier
    spines = [d.name for d in layout.devices if d.role == "inband_spine"]
    assert spines and all(intents[s].bgp is not None for s in spines)
    assert _check_routed_links(layout, intents) > 0
    for s in spines:  # a session on each of its routed links, nothing else
        planned = sum(1 for lk in layout.links if lk.tier in ROUTED and s in (lk.a_device, lk.b_device))
        assert len(intents[s].bgp.neighbors) == planned


def _pairs(layout) -> set[tuple[str, str]]:
    return {tuple(sorted((lk.a_device, lk.b_device))) for lk in layout.links if lk.tier == "inband-peer"}


@pytest.mark.parametrize("fixture", ["two_su", "three_tier"])
def test_each_mlag_pair_peers_across_its_peer_link(fixture, request):
    layout, intents = request.getfixturevalue(fixture)
    asn = {a.device: a.asn for a in layout.asns}
    pairs = _pairs(layout)
    assert pairs
    for a, b in pairs:
        for here, there in ((a, b), (b, a)):
            theirs = _addr(layout, there, "vlan10").split("/")[0]  # the peer's own SVI address, not the VRR one
            got = [n for n in intents[here].bgp.neighbors if n.peer == there]
            assert [(n.interface, n.address, n.remote_as) for n in got] == [("vlan10", theirs, asn[there])], here
            # same ASN (iBGP): the partner's uplink next hops are not reachable here, so next-hop-self
            assert got[0].next_hop_self == (asn[here] == asn[there])


def test_each_pair_originates_its_own_subnets_and_the_cores_their_services(two_su):
    layout, intents = two_su
    for d in layout.devices:
        if d.role in ("inband_switch", "inband_core") and intents[d.name].bgp:
            held = {a.network for a in layout.addresses_by_device[d.name]
                    if a.pool == "inband" and a.interface.startswith("vlan")}
            assert held and held <= set(intents[d.name].bgp.networks), d.name


def _site_announce(layout) -> set[str]:
    core = next(i for i in build_intents(layout) if i.role == "inband_core")
    return set(core.bgp.border.announce)


def test_the_site_sees_no_bmc_unless_the_spec_allows_it():
    default = build(spec_with("lab"))
    assert _site_announce(default) == {default.spec.addressing.inband}
    opened = build(spec_with("lab", management={"oob": {"announce_to_site": True}}))
    assert _site_announce(opened) == {opened.spec.addressing.inband, opened.spec.addressing.oob}


@pytest.mark.parametrize("fixture", ["two_su", "three_tier"])
def test_frr_parses_every_in_band_config(fixture, request, tmp_path):
    vtysh = shutil.which("vtysh")
    assert vtysh, "FRR's vtysh (Debian package frr, scripts/bootstrap.sh) judges the rendered frr.conf"
    _, intents = request.getfixturevalue(fixture)
    for sw in intents.values():
        if sw.fabric == "inband" and sw.bgp:
            conf = tmp_path / f"{sw.name}.conf"
            conf.write_text(render_frr(sw))
            r = subprocess.run([vtysh, "-C", "-f", str(conf)], capture_output=True, text=True)
            assert r.returncode == 0, (sw.name, r.stdout, r.stderr)
