"""In-band switch pairs: the nodes' bonds, the MLAG peer link and the VRR gateway, all held to
the plan (fabric.inband_fabric's links, ipam's vlan10 / vlan10-v0 addresses)."""

from __future__ import annotations

import pytest

from tests.conftest import spec_with, stack_layout
from topology import catalog
from topology.errors import SpecError, SpecErrors
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.sonic import config_db
from topology.render.switches.sonic_yang import validate

PAIRED = ("inband_switch", "inband_core")


def _intents(layout):
    return {sw.name: sw for sw in build_intents(layout) if sw.role in PAIRED}


def _bond_of(sw) -> dict[str, tuple[int, str]]:
    return {m: (b.pair_id, b.peer) for b in sw.bonds for m in b.members}


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_each_nodes_two_inband_ports_share_one_mlag_id_across_the_pair(stack):
    layout = stack_layout(stack)
    sws = _intents(layout)
    ids: dict[str, dict[str, int]] = {}  # node -> switch -> bond id
    for lk in layout.links:
        if lk.tier in ("node-inband", "mgmt-core"):
            pair_id, peer = _bond_of(sws[lk.b_device])[lk.b_port]
            assert peer == lk.a_device
            ids.setdefault(lk.a_device, {})[lk.b_device] = pair_id
    assert ids
    for node, by_switch in ids.items():
        assert len(by_switch) == 2, node
        assert len(set(by_switch.values())) == 1, (node, by_switch)
        a, b = by_switch
        assert sws[a].pairing.peer == b and sws[b].pairing.peer == a


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_peer_link_is_the_planned_inband_peer_ports_and_backup_the_peers_oob(stack):
    layout = stack_layout(stack)
    sws = _intents(layout)
    planned: dict[str, set[str]] = {}
    for lk in layout.links:
        if lk.tier == "inband-peer":
            planned.setdefault(lk.a_device, set()).add(lk.a_port)
            planned.setdefault(lk.b_device, set()).add(lk.b_port)
    oob = {a.device: a.address.split("/")[0] for a in layout.addresses if a.interface == "eth0"}
    paired = [sw for sw in sws.values() if sw.pairing]
    assert paired and {sw.name for sw in paired} == set(planned)
    for sw in paired:
        assert set(sw.pairing.peer_link) == planned[sw.name]
        assert sw.pairing.backup_ip == oob[sw.pairing.peer]
        other = sws[sw.pairing.peer].pairing
        assert sw.pairing.system_mac == other.system_mac and sw.pairing.priority != other.priority


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_vrr_is_the_nodes_gateway_and_the_svi_the_planned_vlan10_address(stack):
    layout = stack_layout(stack)
    sws = _intents(layout)
    gateway_of = {a.device: a.peer for a in layout.addresses if a.interface == "bond0"}
    svi = {a.device: a.address for a in layout.addresses if a.interface == "vlan10"}
    checked = 0
    for lk in layout.links:
        if lk.tier in ("node-inband", "mgmt-core") and lk.b_device in svi:
            (gw,) = [s for s in sws[lk.b_device].svis if s.vlan == 10]
            assert gw.vrr.split("/")[0] == gateway_of[lk.a_device]
            assert gw.address == svi[lk.b_device]
            checked += 1
    assert checked


def test_evpn_mh_is_refused_at_spec_validation_naming_the_field():
    """EVPN-MH would need BGP l2vpn-evpn, VXLAN and VNIs on the pair, none of which is rendered:
    an evpn_mh pair without a peer link would not carry the nodes' bonds, so the spec refuses it."""
    with pytest.raises((SpecError, SpecErrors)) as e:
        spec_with("lab", management={"inband": {"pairing": "evpn_mh"}})
    assert str(e.value).startswith("management.inband.pairing"), str(e.value)
    assert "use pairing: mlag" in str(e.value) and "l2vpn-evpn" in str(e.value)


def test_sonic_inband_pair_validates_and_carries_mclag():
    # cores on SN5400: SONiC's SN4600C platform has no 4 x 25G breakout (tests/test_sonic_platform.py)
    sonic = {"switch_os": "sonic", "core_switch_model": "sn5400"}
    layout = build(spec_with("lab", management={"inband": sonic}))
    cat = catalog.load()
    sws = _intents(layout)
    for sw in sws.values():
        db = config_db(sw, cat.switches[sw.model])
        skipped = validate(db)
        assert set(skipped) <= {"MCLAG_DOMAIN", "MCLAG_INTERFACE", "MCLAG_UNIQUE_IP"}  # no sonic-mclag model here
        domain = db["MCLAG_DOMAIN"]["1"]
        assert domain["peer_ip"] == sws[sw.pairing.peer].pairing.source_ip
        assert {k.split("|")[1] for k in db["MCLAG_INTERFACE"]} == {f"PortChannel{b.pair_id}" for b in sw.bonds}
        gw = next(s for s in sw.svis if s.vrr)
        assert f"Vlan10|{gw.vrr}" in db["VLAN_INTERFACE"] and f"Vlan10|{gw.address}" in db["VLAN_INTERFACE"]
