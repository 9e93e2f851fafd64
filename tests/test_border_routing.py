"""The in-band cores learn the site's default route over their border sessions and announce only
the pod's management summaries (issue 15, closing note item 5): an inbound policy that accepts
`addressing.site_routes` (default 0.0.0.0/0, or the site's summaries) and nothing else, an
outbound one that lets only the summaries out (the cores are no transit between the site's
routers), in NVUE, FRR and SONiC (whose FRR runs in split mode: frr.conf holds the policy)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import spec_with, stack_layout
from topology.errors import SpecErrors
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.frr import render_frr
from topology.render.switches.nvue import render_nvue

SUMMARIES = {"10.16.0.0/14"}  # the lab's in-band pool; the OOB pool (every BMC) only on request


def _core(layout):
    return next(i for i in build_intents(layout) if i.name == "inband-core-01")


def _nvue_policy(core) -> tuple[dict, dict]:
    doc = yaml.safe_load(render_nvue(core))[0]["set"]
    return doc["router"]["policy"], doc["vrf"]["default"]["router"]["bgp"]["neighbor"]


def _prefixes(policy: dict, route_map: str) -> set[str]:
    """What a route map permits: the prefixes of the prefix lists its permit rules match."""
    out = set()
    for rule in policy["route-map"][route_map]["rule"].values():
        if "permit" in rule["action"]:
            plist = policy["prefix-list"][rule["match"]["ip-prefix-list"]]
            out |= {p for r in plist["rule"].values() if r["action"] == "permit" for p in r["match"]}
    return out


def test_nvue_cores_take_the_sites_default_and_announce_only_the_summaries():
    core = _core(stack_layout("lab"))
    policy, neighbors = _nvue_policy(core)
    site = {n.address for n in core.bgp.neighbors if n.site}  # its OOB sessions take none (test_oob_routing.py)
    assert len(site) == 2
    for n in (v for k, v in neighbors.items() if k in site):
        p = n["address-family"]["ipv4-unicast"]["policy"]
        assert _prefixes(policy, p["inbound"]["route-map"]) == {"0.0.0.0/0"}
        assert _prefixes(policy, p["outbound"]["route-map"]) == SUMMARIES


def _frr_policy(frr: str, direction: str) -> set[str]:
    maps = set(re.findall(rf"neighbor \S+ route-map (\S+) {direction}", frr))
    assert len(maps) == 1, frr
    lists = set(re.findall(rf"route-map {maps.pop()} permit \d+\n match ip address prefix-list (\S+)", frr))
    return {p for name in lists for p in re.findall(rf"ip prefix-list {name} seq \d+ permit (\S+)", frr)}


@pytest.mark.parametrize("os_", ["cumulus", "sonic"])
def test_frr_cores_take_the_sites_default_and_announce_only_the_summaries(os_):
    layout = build(spec_with("lab", management={"inband": {"switch_os": os_}}))
    core = _core(layout)
    frr = render_frr(core)
    assert len(re.findall(r"neighbor \S+ route-map \S+ in", frr)) == 2  # each border session
    assert _frr_policy(frr, "in") == {"0.0.0.0/0"}
    assert _frr_policy(frr, "out") == SUMMARIES


def test_site_routes_from_the_spec():
    layout = build(spec_with("lab", addressing={"site_routes": ["10.0.0.0/8", "172.16.0.0/12"]}))
    policy, neighbors = _nvue_policy(_core(layout))
    site = next(n.address for n in _core(layout).bgp.neighbors if n.site)
    inbound = neighbors[site]["address-family"]["ipv4-unicast"]["policy"]["inbound"]["route-map"]
    assert _prefixes(policy, inbound) == {"10.0.0.0/8", "172.16.0.0/12"}
    assert _frr_policy(render_frr(_core(layout)), "in") == {"10.0.0.0/8", "172.16.0.0/12"}


def test_a_bad_site_route_names_the_field():
    with pytest.raises(SpecErrors) as e:
        spec_with("lab", addressing={"site_routes": ["10.0.0.1/8"]})
    assert any(x.field.startswith("addressing.site_routes") and "host bits" in str(x) for x in e.value.errors), \
        e.value.errors


def test_switches_without_a_border_take_no_policy():
    leaf = next(i for i in build_intents(stack_layout("lab")) if i.name == "su01-leaf-rail0")
    assert "route-map" not in render_frr(leaf)
    assert "policy" not in yaml.safe_load(render_nvue(leaf))[0]["set"].get("router", {})
