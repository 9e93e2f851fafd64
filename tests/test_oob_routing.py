"""The OOB network routes (issue 15, item 12, left open: "the OOB aggregation and rack OOB
switches still get no routing config"). Its /31s were cabled and addressed, but no switch said
how a rack's subnet reaches the management nodes: eBGP now runs on every OOB /31. Each rack's
OOB switches originate the rack subnet (one ASN per rack position), the aggregation switches
share one ASN (as a spine tier does), and the in-band switches that take the aggregation
uplinks (the cores, or the services pair of a three-tier in-band network) peer with them and
originate the management subnets they hold. The cores' border policy stays on the site's
sessions only. Real FRR carries these routes in tests/e2e/test_oob_e2e.py."""

from __future__ import annotations

import re

import netaddr
import pytest
import yaml

from tests.conftest import spec_with, stack_layout
from tests.invariants import check_growth
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.frr import BORDER_IN, render_frr
from topology.render.switches.nvue import render_nvue

OOB_TIERS = ("oob-agg", "oob-uplink")


def _three_tier():
    return build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20},
                           management={"inband": {"mgmt_nodes": 3}}))


LAYOUTS = {
    "lab": lambda: stack_layout("lab"),
    "roce-1k": lambda: stack_layout("roce-1k"),
    "dgx-h100-ib": lambda: stack_layout("dgx-h100-ib"),
    "three-tier-inband": _three_tier,
    "no-border": lambda: build(spec_with("lab", management={"inband": {"border_uplinks": 0}})),
    "sonic-oob": lambda: build(spec_with("lab", management={"oob": {"switch_os": "sonic"}})),
}


def _sessions(intents) -> dict[tuple[str, str], tuple[str, object]]:
    """(switch, neighbor address) -> (peer, remote-as), for every planned BGP session."""
    return {(i.name, n.address): (n.peer, n.remote_as) for i in intents if i.bgp for n in i.bgp.neighbors}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_oob_link_carries_a_mutual_ebgp_session(name):
    layout = LAYOUTS[name]()
    intents = build_intents(layout)
    sessions = _sessions(intents)
    asn = {a.device: a.asn for a in layout.asns}
    at = {(a.device, a.interface): a.address.split("/")[0] for a in layout.addresses}
    oob_links = [lk for lk in layout.links if lk.tier in OOB_TIERS]
    assert oob_links
    for lk in oob_links:
        a_ip, b_ip = at[(lk.a_device, lk.a_port)], at[(lk.b_device, lk.b_port)]
        assert sessions.get((lk.a_device, b_ip)) == (lk.b_device, asn[lk.b_device]), (lk, name)
        assert sessions.get((lk.b_device, a_ip)) == (lk.a_device, asn[lk.a_device]), (lk, name)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_rack_oob_switch_originates_its_rack_subnet_and_the_upstream_the_mgmt_subnet(name):
    layout = LAYOUTS[name]()
    intents = {i.name: i for i in build_intents(layout)}
    for d in layout.devices:
        if d.role == "oob_switch":
            rack_net = next(a.network for a in layout.addresses_by_device[d.name] if a.interface == "vlan2")
            assert rack_net in intents[d.name].bgp.networks, d.name
            assert not any(n.endswith("/32") for n in intents[d.name].bgp.networks)  # no loopback to announce
    mgmt_net = next(a.network for a in layout.addresses if a.device.startswith("mgmt-") and a.interface == "bond0")
    upstream = {lk.b_device for lk in layout.links if lk.tier == "oob-uplink"}
    for sw in upstream:
        assert mgmt_net in intents[sw].bgp.networks, (sw, intents[sw].bgp.networks)


def test_oob_asns_are_one_per_rack_position_one_for_the_aggregation_and_private():
    layout = stack_layout("roce-1k")
    asn = {a.device: a for a in layout.asns}
    racks = [d for d in layout.devices if d.role == "oob_switch"]
    aggs = [d for d in layout.devices if d.role == "oob_aggregation"]
    assert {asn[d.name].scope for d in racks} == {"oob-rack"}
    assert len({asn[d.name].asn for d in racks}) == len({d.rack for d in racks})
    assert {asn[d.name].asn for d in aggs} == {asn[aggs[0].name].asn}
    assert all(4200000000 <= a.asn <= 4294967294 for a in layout.asns)
    assert len({(a.asn, a.scope) for a in layout.asns}) == len({a.asn for a in layout.asns})  # no ASN in two scopes


def test_oob_asns_are_growth_stable():
    small = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4))
    check_growth(small, stack_layout("roce-1k"))
    assert any(a.scope == "oob-rack" for a in small.asns)


def test_the_cores_border_policy_stays_on_the_sites_sessions():
    layout = stack_layout("lab")
    core = next(i for i in build_intents(layout) if i.name == "inband-core-01")
    oob = {n.address for n in core.bgp.neighbors if n.peer.startswith("oob-agg")}
    site = {n.address for n in core.bgp.neighbors if n.peer == "site-border"}
    assert oob and site
    frr = render_frr(core)
    with_policy = set(re.findall(rf"neighbor (\S+) route-map {BORDER_IN} in", frr))
    assert with_policy == site
    neighbors = yaml.safe_load(render_nvue(core))[0]["set"]["vrf"]["default"]["router"]["bgp"]["neighbor"]
    assert {ip for ip, n in neighbors.items() if "policy" in n.get("address-family", {}).get("ipv4-unicast", {})} \
        == site  # the peer-link session's address-family holds next-hop-self only
    assert oob <= set(neighbors)


def test_oob_router_ids_are_unique_addresses_of_the_switch():
    layout = stack_layout("roce-1k")
    mine = {}
    for a in layout.addresses:
        mine.setdefault(a.device, set()).add(a.address.split("/")[0])
    ids = {}
    for i in build_intents(layout):
        if i.bgp is None:
            continue
        assert netaddr.valid_ipv4(i.bgp.router_id), i.name
        ids.setdefault(i.bgp.router_id, []).append(i.name)
        if i.role in ("oob_switch", "oob_aggregation"):
            assert i.bgp.router_id in mine[i.name], i.name
    assert all(len(names) == 1 for names in ids.values()), {r: n for r, n in ids.items() if len(n) > 1}


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_every_planned_svi_is_the_rendered_svi_of_that_vlan(stack):
    """ipplan.csv (and Nautobot, NetBox) name each gateway interface as the switch has it: the
    rack OOB subnet's SVI is VLAN 2 on the switch (SONiC refuses VLAN 1), so the plan says vlan2."""
    layout = stack_layout(stack)
    checked = 0
    for sw in build_intents(layout):
        rendered = {f"vlan{s.vlan}": s.address for s in sw.svis}
        for a in layout.addresses_by_device.get(sw.name, []):
            if re.fullmatch(r"vlan\d+", a.interface):
                assert rendered.get(a.interface) == a.address, (sw.name, a.interface, sorted(rendered))
                checked += 1
    assert checked
