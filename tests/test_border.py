"""Management reachability, the rest of issue 15 item 12: the OOB switch's own vlan2 address
names no gateway of its own (it routes upward over its /31s), the in-band core routes north-south
to the site over `management.inband.border_uplinks` addressed links with eBGP to
`addressing.border_asn`, and UFM appliances and storage servers get bonded in-band Ethernet."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import netaddr
import pytest
import yaml

from tests.conftest import spec_with, stack_layout
from tests.invariants import check_addresses, check_all, check_growth
from topology import catalog
from topology.errors import SpecError, SpecErrors
from topology.layout.build import build
from topology.render.inventory import render_inventory
from topology.render.switches.build import build_intents
from topology.render.switches.frr import render_frr
from topology.render.switches.nvue import render_nvue
from topology.render.switches.sonic import render_config_db
from topology.render.switches.sonic_yang import validate, yanglint
from topology.render.tables import cabling_csv


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_an_oob_switch_is_not_its_own_gateway(stack):
    layout = stack_layout(stack)
    switches = {d.name for d in layout.devices if d.role == "oob_switch"}
    own = {}
    for a in layout.addresses:
        own.setdefault(a.device, set()).add(a.address.split("/")[0])
    for a in layout.addresses:
        if a.device in switches and a.interface == "vlan2":
            assert a.peer not in own[a.device], f"{a.device} vlan2 names its own {a.peer} as gateway"


def _border(layout):
    return [lk for lk in layout.border_links if lk.tier == "border"]


@pytest.mark.parametrize("count", [0, 1, 2, 4])
def test_each_inband_core_has_the_spec_count_of_border_uplinks(count):
    layout = build(spec_with("lab", management={"inband": {"border_uplinks": count}}))
    cores = [d.name for d in layout.devices if d.role == "inband_core"]
    per_core = Counter(lk.a_device for lk in _border(layout))
    assert cores and all(per_core[c] == count for c in cores), per_core
    assert all(lk.b_device == "site-border" for lk in _border(layout))
    check_all(layout)


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib", "roce-8k"])
def test_border_uplinks_are_addressed_cabled_and_free_of_other_cables(stack):
    layout = stack_layout(stack)
    border = _border(layout)
    assert len(border) == 2 * sum(d.role == "inband_core" for d in layout.devices)
    inside = {(lk.a_device, lk.a_port) for lk in layout.links} | {(lk.b_device, lk.b_port) for lk in layout.links}
    pool = netaddr.IPNetwork(layout.spec.addressing.border)
    addr = {(a.device, a.interface): a for a in layout.addresses}
    rows = list(csv.DictReader(io.StringIO(cabling_csv(layout))))
    for lk in border:
        assert (lk.a_device, lk.a_port) not in inside, lk
        a = addr[(lk.a_device, lk.a_port)]
        net = netaddr.IPNetwork(a.network)
        assert a.pool == "border" and net.prefixlen == 31 and net in pool, a
        assert a.peer == str(net.network) and a.address == f"{net.network + 1}/31", a  # site .0, core .1
        row = next(r for r in rows if (r["a_device"], r["a_port"]) == (lk.a_device, lk.a_port))
        assert row["b_device"] == "site-border" and row["kind"] == "border", row
        assert row["media"] and float(row["length_m"]) > 0 and row["a_part"] and row["cable_part"], row
    check_addresses(layout)


def test_border_ports_are_growth_stable_and_the_cores_share_the_top_asn():
    small = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4))
    big = stack_layout("roce-1k")
    assert _border(small) and set(_border(small)) <= set(_border(big))
    for layout in (small, big):
        asns = {a.asn for a in layout.asns if a.scope == "inband-border"}
        assert asns == {layout.spec.addressing.asn_last}
        check_addresses(layout)


def test_three_tier_inband_cores_take_the_border_above_their_spine_links():
    layout = build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20}))
    assert layout.facts and any(d.role == "inband_spine" for d in layout.devices)
    border = _border(layout)
    assert len(border) == 2 * sum(d.role == "inband_core" for d in layout.devices)
    check_all(layout)


def test_too_many_border_uplinks_name_the_field():
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", management={"inband": {"border_uplinks": 16}}, max_scalable_units=12))
    assert e.value.field == "management.inband.border_uplinks", e.value
    fits = int(str(e.value).split("use border_uplinks: ")[1].split(",")[0])
    assert 0 < fits < 16
    # the hint holds: those border uplinks fit (the cages left for the storage servers' in-band are then none)
    check_all(build(spec_with("lab", management={"inband": {"border_uplinks": fits}}, max_scalable_units=12,
                              storage_fabric={"storage_servers": 0})))


@pytest.mark.parametrize("asn,rule", [
    (23456, "reserved"), (65535, "reserved"), (13335, "RFC 6996"), (4200000000, "own range"),
])
def test_a_bad_site_asn_is_refused(asn, rule):
    with pytest.raises((SpecError, SpecErrors)) as e:
        spec_with("lab", addressing={"border_asn": asn})
    errs = e.value.errors if isinstance(e.value, SpecErrors) else [e.value]
    assert any(x.field == "addressing.border_asn" and rule in str(x) for x in errs), errs


def _core_intent(layout):
    return next(i for i in build_intents(layout) if i.name == "inband-core-01")


def test_the_cores_peer_with_the_site_in_nvue_and_frr():
    layout = build(spec_with("lab", addressing={"border_asn": 65010}))
    core = _core_intent(layout)
    peers = {a.peer for a in layout.addresses if a.device == core.name and a.pool == "border"}
    assert core.bgp and {n.address for n in core.bgp.neighbors if n.site} == peers and len(peers) == 2
    # its other sessions: the OOB aggregation (tests/test_oob_routing.py), the in-band switches and
    # the other core across the peer link (tests/test_inband_routing.py)
    inband = {d.name for d in layout.devices if d.role in ("inband_switch", "inband_core")}
    assert all(n.peer.startswith("oob-agg") or n.peer in inband for n in core.bgp.neighbors if not n.site)
    nvue = yaml.safe_load(render_nvue(core))
    vrf = nvue[0]["set"]["vrf"]["default"]["router"]["bgp"]
    assert {k: v["remote-as"] for k, v in vrf["neighbor"].items() if k in peers} == dict.fromkeys(peers, 65010)
    assert set(vrf["address-family"]["ipv4-unicast"]["aggregate-route"]) == {"10.16.0.0/14", "10.20.0.0/14"}
    frr = render_frr(core)
    assert all(f"neighbor {p} remote-as 65010" in frr for p in peers)
    default = _core_intent(stack_layout("lab"))  # no site ASN given: the site's, whatever it is
    assert {n.remote_as for n in default.bgp.neighbors if n.site} == {"external"}


def test_sonic_cores_render_the_border_sessions():
    # cores on SN5400: SONiC's SN4600C platform has no 4 x 25G breakout (tests/test_sonic_platform.py)
    inband = {"switch_os": "sonic", "core_switch_model": "sn5400"}
    layout = build(spec_with("lab", management={"inband": inband}, addressing={"border_asn": 65010}))
    core = _core_intent(layout)
    db = json.loads(render_config_db(core, catalog.load().switches[core.model]))
    assert {n for n in db["BGP_NEIGHBOR"]} == {n.address for n in core.bgp.neighbors}
    if yanglint():
        validate(db)  # the border sessions, breakouts and appliance bonds against SONiC's YANG models
    assert "remote-as 65010" in render_frr(core)


APPLIANCES = ("ufm", "storage_server")


def _check_appliance_inband(layout) -> None:
    appliances = [d.name for d in layout.devices if d.role in APPLIANCES]
    assert appliances
    on = {}
    for lk in layout.links:
        if lk.tier == "service-inband":
            on.setdefault(lk.a_device, set()).add(lk.b_device)
    addr = {(a.device, a.interface): a for a in layout.addresses}
    vrr = {}
    for a in layout.addresses:
        if a.pool == "inband" and a.interface.endswith("-v0"):
            vrr.setdefault(a.address.split("/")[0], set()).add(a.device)
    mgmt = next(a for a in layout.addresses if a.device.startswith("mgmt-") and a.interface == "bond0")
    for name in appliances:
        assert len(on.get(name, ())) == 2, (name, on.get(name))  # bonded over both switches of the pair
        a = addr[(name, "bond0")]
        # a subnet of their own after the services subnet: their count never resizes the SUs' subnets
        assert a.pool == "inband" and a.network != mgmt.network and a.peer != mgmt.peer, a
        assert netaddr.IPNetwork(a.network).prefixlen == netaddr.IPNetwork(mgmt.network).prefixlen, a
        assert vrr[a.peer] == on[name], (a, vrr[a.peer])  # the pair holding the bond owns the gateway
    check_all(layout)


def inventory_hosts(layout) -> dict[str, dict]:
    """Every host's vars in the rendered hosts.yml."""
    files = render_inventory(layout, Path("inv"))
    doc = yaml.safe_load(next(t for p, t in files.items() if p.name == "hosts.yml"))
    out: dict[str, dict] = {}

    def walk(group: dict) -> None:
        for name, hv in (group.get("hosts") or {}).items():
            out.setdefault(name, {}).update(hv or {})
        for child in (group.get("children") or {}).values():
            walk(child or {})
    walk(doc["all"])
    return out


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib"])
def test_ufm_and_storage_servers_have_bonded_inband_ethernet(stack):
    layout = stack_layout(stack)
    _check_appliance_inband(layout)
    hosts = inventory_hosts(layout)
    for d in layout.devices:
        if d.role in APPLIANCES:
            bond = next(a for a in layout.addresses if a.device == d.name and a.interface == "bond0")
            hv = hosts[d.name]
            assert hv["ansible_host"] == bond.address.split("/")[0]
            members = sorted(lk.a_port for lk in layout.links if lk.a_device == d.name and lk.tier == "service-inband")
            assert (hv["superpod_inband_address"], hv["superpod_inband_gateway"]) == (bond.address, bond.peer)
            assert sorted(hv["superpod_inband_members"]) == members and len(members) == 2


def test_three_tier_appliances_land_on_the_services_pair():
    layout = build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20}))
    _check_appliance_inband(layout)
    assert {lk.b_device for lk in layout.links if lk.tier == "service-inband"} == {"inband-svc-a", "inband-svc-b"}


def test_appliance_inband_is_growth_stable():
    small = build(spec_with("roce-1k", scalable_units=2, max_scalable_units=4))
    assert any(lk.tier == "service-inband" for lk in small.links)
    check_growth(small, stack_layout("roce-1k"))


def test_the_core_pair_bonds_each_appliance_in_the_services_vlan():
    layout = stack_layout("dgx-h100-ib")
    core = _core_intent(layout)
    names = {d.name for d in layout.devices if d.role in APPLIANCES}
    bonds = [b for b in core.bonds if b.peer in names]
    assert {b.peer for b in bonds} == names
    ids = [b.pair_id for b in core.bonds]
    assert len(ids) == len(set(ids))
    svi_net = {svi.vlan: netaddr.IPNetwork(svi.address).cidr for svi in core.svis}
    for b in bonds:  # each in its subnet's VLAN (vlan11, ...), which the pair answers for
        host = next(a for a in layout.addresses if a.device == b.peer and a.interface == "bond0")
        assert b.access_vlan >= 11 and b.access_vlan in core.vlans, b
        assert netaddr.IPNetwork(host.address).ip in svi_net[b.access_vlan], (b, host)


def test_a_services_pair_without_room_for_the_appliances_names_the_field():
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", scalable_units=2, max_scalable_units=40, racks={"racks_per_row": 20},
                        storage_fabric={"storage_servers": 300}))
    assert e.value.field == "storage_fabric.storage_servers", e.value
    assert "inband-svc-a" in str(e.value) and "management.inband.switch_model" in str(e.value)


def test_three_tier_border_and_appliances_are_growth_stable():
    def at(sus):
        return build(spec_with("lab", scalable_units=sus, max_scalable_units=40, racks={"racks_per_row": 20}))
    small, big = at(2), at(3)
    check_growth(small, big)
    assert _border(small) and set(_border(small)) == set(_border(big))
