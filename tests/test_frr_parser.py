"""Every rendered frr.conf passes FRR's own parser (Debian's frr: `vtysh -C -f`, and `vtysh -m`
for lines FRR would read outside their block): SONiC's files on the four example stacks and
option variants, and the files the FRR container labs load (tests/e2e/fabriclab.py).

Fast: files that differ only in numbers (ASNs, addresses, port and switch numbers) take the
same path through FRR's grammar, so one file of each shape is parsed (32 shapes among the
1,041 SONiC frr.conf files of roce-8k with BGP); the numbers come from spec-validated pools and are
checked by the plan's own tests."""

from __future__ import annotations

import re

import pytest

from tests.conftest import STACKS, spec_with
from topology.layout.build import build
from topology.render.switches import sonic_frr_conf
from topology.render.switches.build import iter_intents
from topology.render.switches.frr import render_frr
from topology.render.switches.frr_check import check_all, vtysh

pytestmark = pytest.mark.skipif(vtysh() is None, reason="vtysh (Debian's frr package) not installed")

SONIC = {"switch_os": "sonic"}
# In-band on SONiC takes SN5400 cores: SONiC's SN4600C platform has no 4 x 25G mode for the storage
# servers' ports (tests/test_sonic_platform.py), so the plan refuses SN4600C cores there.
ALL_SONIC = {"compute_fabric": SONIC, "storage_fabric": SONIC,
             "management": {"inband": {**SONIC, "core_switch_model": "sn5400"}, "oob": SONIC}}
UNNUMBERED = {"compute_fabric": {"switch_os": "sonic", "bgp_peering": "unnumbered"}}


def _with(*changes: dict) -> dict:
    out: dict = {}
    for change in changes:
        for key, value in change.items():
            out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


VARIANTS = {
    **{f"{s}-sonic": (s, ALL_SONIC) for s in STACKS},
    **{f"{s}-sonic-unnumbered": (s, _with(ALL_SONIC, UNNUMBERED)) for s in STACKS if s != "dgx-h100-ib"},
    "lab-compute-sonic-only": ("lab", {"compute_fabric": SONIC}),
    "roce-1k-storage-and-oob-sonic": ("roce-1k", {"storage_fabric": SONIC, "management": {"oob": SONIC}}),
    "roce-1k-per-leaf-rails": ("roce-1k", _with(ALL_SONIC, {"addressing": {"rail_mode": "per_leaf"}})),
    "lab-per-leaf-rail-pods": ("lab", _with(ALL_SONIC, {"addressing": {"rail_mode": "per_leaf",
                                                                       "rail_pods": "100.104.0.0/16"}})),
    "lab-p2p-rail-pods": ("lab", _with(ALL_SONIC, {"addressing": {"rail_pods": "100.104.0.0/16"}})),
    "lab-storage-on-inband-bond": ("lab", _with(ALL_SONIC, {"storage_fabric": {"node_ports": "inband_bond"}})),
    "lab-site-asn-and-routes": ("lab", _with(ALL_SONIC, {"addressing": {
        "border_asn": 65010, "site_routes": ["10.0.0.0/8", "172.16.0.0/12"]}})),
    "lab-no-border": ("lab", _with(ALL_SONIC, {"management": {"inband": {"border_uplinks": 0}}})),
    "roce-1k-growth-to-8": ("roce-1k", _with(ALL_SONIC, UNNUMBERED, {"max_scalable_units": 8})),
    # in-band spines and the services pair (the OOB uplinks' sessions land there)
    "lab-three-tier-inband": ("lab", _with(ALL_SONIC, {"max_scalable_units": 16, "management": {"inband": {
        "mgmt_nodes": 3}}})),
}


def shape(conf: str) -> str:
    return re.sub(r"\d+", "0", conf)


def one_per_shape(files: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    seen: set[str] = set()
    for name, conf in files.items():
        if shape(conf) not in seen:
            seen.add(shape(conf))
            out[name] = conf
    return out


def _judge(files: dict[str, str]) -> None:
    assert files, "no frr.conf rendered"
    refused = check_all(one_per_shape(files))
    assert not refused, "\n".join(f"{name}: {err}" for name, errs in refused.items() for err in errs)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_sonic_frr_conf_passes_frrs_parser(variant):
    stack, changes = VARIANTS[variant]
    layout = build(spec_with(stack, **changes))
    _judge({sw.name: sonic_frr_conf(sw) for sw in iter_intents(layout) if sw.os == "sonic" and sw.bgp})


@pytest.mark.parametrize("peering", ["numbered", "unnumbered"])
def test_the_frr_labs_configs_pass_frrs_parser(peering):
    """The files the FRR container labs load: every routed switch, the plan's own port names."""
    layout = build(spec_with("lab", compute_fabric={"bgp_peering": peering}))
    _judge({sw.name: render_frr(sw) for sw in iter_intents(layout) if sw.bgp})


GOOD = """hostname x
router bgp 65001
 neighbor FABRIC peer-group
 address-family ipv4 unicast
  neighbor FABRIC activate
 exit-address-family
exit
"""


@pytest.mark.parametrize(("bad", "says"), [
    (GOOD.replace("  neighbor FABRIC activate", "  neighbor FABRIC enable"), "line 5"),
    (GOOD.replace("  neighbor FABRIC activate", "  neighbor FABRIC capability extended-nexthop"),
     "line 5 ('neighbor FABRIC capability extended-nexthop') is not valid in its block"),
    (GOOD.replace("router bgp 65001", "router bgp 4294967296"), "line 2"),
])
def test_the_judge_refuses_what_frr_refuses_naming_the_line(bad, says):
    assert check_all({"good": GOOD}) == {}
    refused = check_all({"bad": bad})
    assert any(says in err for err in refused["bad"]), refused
