"""BFD and graceful restart on the sessions between planned switches, in frr.conf: every session
the plan's cables make between two switches with an ASN has BFD; the site's sessions have none
(the pod does not configure the site's routers); the BGP instance restarts gracefully. FRR's
parser takes these lines (tests/test_frr_parser.py)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import spec_with
from topology.layout.build import build
from topology.render.switches.build import iter_intents
from topology.render.switches.frr import render_frr


def _planned_sessions(layout, unnumbered: bool) -> dict[str, set[str]]:
    """switch -> its BGP peers as frr.conf names them (the peer's address, or the local port
    when unnumbered), from the plan's cables between two switches with ASNs."""
    asn = {a.device for a in layout.asns}
    addr = {(a.device, a.interface): a.address.split("/")[0] for a in layout.addresses}
    out: dict[str, set[str]] = {}
    for lk in layout.links:
        if lk.a_device not in asn or lk.b_device not in asn or lk.tier == "device-oob":
            continue
        for dev, port, peer, peer_port in ((lk.a_device, lk.a_port, lk.b_device, lk.b_port),
                                           (lk.b_device, lk.b_port, lk.a_device, lk.a_port)):
            compute = layout.by_name[dev].role in ("leaf", "spine", "core")
            name = port if unnumbered and compute else addr.get((peer, peer_port))
            if name:
                out.setdefault(dev, set()).add(name)
    # an MLAG pair's own session across its peer link, between the two switches' vlan10 addresses
    svi = {a.device: a.address.split("/")[0] for a in layout.addresses if a.interface == "vlan10"}
    for lk in layout.links:
        if lk.tier == "inband-peer" and lk.a_device in asn and lk.b_device in asn:
            out.setdefault(lk.a_device, set()).add(svi[lk.b_device])
            out.setdefault(lk.b_device, set()).add(svi[lk.a_device])
    return out


def _site_peers(layout) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for lk in layout.border_links:
        a = next(x for x in layout.addresses if (x.device, x.interface) == (lk.a_device, lk.a_port))
        out.setdefault(lk.a_device, set()).add(a.peer)
    return out


GR_LINES = {"full": " bgp graceful-restart", "off": " bgp graceful-restart-disable"}  # helper-only: FRR's default


@pytest.mark.parametrize("peering,graceful_restart", [("numbered", "full"), ("unnumbered", "helper-only"),
                                                      ("numbered", "off")])
def test_bfd_on_every_planned_switch_session_none_toward_the_site(peering, graceful_restart):
    # the spec's switch_services, not literals of the renderer: BFD timers and the restart mode
    layout = build(spec_with("lab", compute_fabric={"bgp_peering": peering},
                             switch_services={"bfd_interval_ms": 250, "bfd_multiplier": 4,
                                              "bgp_graceful_restart": graceful_restart}))
    planned, site = _planned_sessions(layout, peering == "unnumbered"), _site_peers(layout)
    assert site, "the lab plans border uplinks"
    checked = 0
    for sw in iter_intents(layout):
        if sw.bgp is None:
            continue
        conf = render_frr(sw)
        with_bfd = set(re.findall(r"^ neighbor (\S+) bfd profile FABRIC$", conf, re.M))
        assert with_bfd == planned.get(sw.name, set()), sw.name
        assert not with_bfd & site.get(sw.name, set()), sw.name
        assert re.search(r"^bfd\n profile FABRIC\n  detect-multiplier 4\n  receive-interval 250\n"
                         r"  transmit-interval 250\n exit\nexit$", conf, re.M), sw.name
        body = conf.split(f"router bgp {sw.bgp.asn}\n", 1)[1].split("\n !\n", 1)[0].splitlines()
        expected = [GR_LINES[graceful_restart]] if graceful_restart in GR_LINES else []
        assert [ln for ln in body if "graceful-restart" in ln] == expected, sw.name
        checked += 1
    assert checked >= 15
