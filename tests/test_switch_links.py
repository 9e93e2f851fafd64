"""Switch-to-switch links at the cage's native speed, oversubscription as bandwidth (issue 15
item 5); storage servers on a leaf pair (item 3); the UFM high-availability pair (item 13)."""

from __future__ import annotations

from collections import Counter, defaultdict

import netaddr
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_with, stack_layout
from tests.invariants import check_all, check_growth, check_switch_links
from topology.errors import SpecError
from topology.layout.build import build
from topology.render.summary import summary


def _sn5600(sus: int, **changes):
    """SUs of 64 nodes on SN5600 leaves and spines (storage on SN5600, in-band on SN5400 to fit 64 nodes)."""
    base = {"scalable_units": sus, "max_scalable_units": sus, "nodes_per_su": 64,
            "compute_fabric": {"switch_model": "sn5600"}, "racks": {"racks_per_row": 20},
            "storage_fabric": {"switch_model": "sn5600"},
            "management": {"inband": {"switch_model": "sn5400", "core_switch_model": "sn5400",
                                      "uplinks_per_switch": 2}}}  # 2 x 400G: 64 SUs' switches fit one core pair
    return spec_with("roce-1k", **{**base, **changes})


@pytest.mark.parametrize("stack", ["lab", "roce-1k", "dgx-h100-ib", "roce-8k"])
def test_examples_run_switch_links_at_native_speed(stack):
    check_switch_links(stack_layout(stack))


def test_sn5600_uplinks_are_800g_cages_not_breakout_halves():
    layout = build(_sn5600(1))
    ups = [lk for lk in layout.links if lk.tier == "leaf-spine"]
    assert {lk.speed_gbps for lk in ups} == {800}
    # no "swp49s0/s1 -> spine-01 swp1s0/s1": every uplink an unsplit cage, at both ends
    assert all("s" not in lk.a_port[3:] and "s" not in lk.b_port[3:] for lk in ups), ups[:2]
    # host ports still follow the NIC: 400G halves of the leaf's bottom cages
    downs = [lk for lk in layout.links if lk.tier == "node-leaf"]
    assert {lk.speed_gbps for lk in downs} == {400} and downs[0].b_port == "swp1s0" and downs[1].b_port == "swp1s0"
    check_switch_links(layout)


def test_oversubscription_is_bandwidth_not_ports():
    layout = build(_sn5600(1))
    leaf = next(t for t in layout.tiers if t.role == "leaf")
    # 64 x 400G down : 32 x 800G up is 1:1 (a port ratio would have asked for 64 uplinks)
    assert (leaf.down_ports, leaf.up_ports, leaf.up_speed_gbps) == (64, 32, 800)
    assert leaf.down_gbps == leaf.up_gbps
    assert summary(layout)["oversubscription"]["leaf"] == "1:1"
    two = build(_sn5600(1, compute_fabric={"switch_model": "sn5600", "oversubscription": "2:1"}))
    assert next(t for t in two.tiers if t.role == "leaf").up_ports == 16
    # storage at the seed's 4:1: 32 nodes x 2 x 200G down, 8 x 400G up
    storage = next(t for t in stack_layout("roce-1k").tiers if t.role == "storage_leaf")
    assert (storage.up_ports, storage.up_speed_gbps) == (8, 400) and storage.down_gbps == 4 * storage.up_gbps


# NVIDIA DGX SuperPOD B300 with Spectrum-X (RA, "Larger DGX SuperPOD component counts"): SUs of
# 64 nodes, SN5600 leaves with 64 x 400G down and 32 x 800G up, twin-planar. One plane is a
# single-plane pod of 8 x 400G nodes: half the table's leaves, spines and leaf-spine cables, and
# the table's node-leaf count (its node cables are twin-port, one 400G leg per plane).
# SUs -> (leaves, spines, node-leaf links, leaf-spine cables) of one plane.
B300_SPECTRUM_X_PLANE = {1: (8, 4, 512, 256), 2: (16, 8, 1024, 512), 4: (32, 16, 2048, 1024),
                         8: (64, 32, 4096, 2048)}


@pytest.mark.parametrize("sus", sorted(B300_SPECTRUM_X_PLANE))
def test_sn5600_pods_match_one_plane_of_nvidias_spectrum_x_ra(sus):
    layout = build(_sn5600(sus))
    roles = Counter(d.role for d in layout.devices)
    tiers = Counter(lk.tier for lk in layout.links)
    assert (roles["leaf"], roles["spine"], tiers["node-leaf"], tiers["leaf-spine"]) == B300_SPECTRUM_X_PLANE[sus]
    assert layout.facts["tiers"] == 2
    check_all(layout)


def test_sixteen_sn5600_sus_split_800g_cages_to_two_spines():
    """The RA's 16-SU row: 128 leaves and 64 spines a plane, 4,096 leaf-spine cables. 32 x 800G
    uplinks cannot reach 64 spines unsplit, so each 800G cage runs as 2 x 400G legs to two
    different spines (8,192 legs, two a cable), in two tiers instead of a core tier."""
    layout = build(_sn5600(16))
    roles = Counter(d.role for d in layout.devices)
    ups = [lk for lk in layout.links if lk.tier == "leaf-spine"]
    assert layout.facts["tiers"] == 2 and layout.facts["gpus"] == 8192
    assert (roles["leaf"], roles["spine"], roles["core"]) == (128, 64, 0)
    assert len(ups) == 8192 and {lk.speed_gbps for lk in ups} == {400} and {lk.a_shared for lk in ups} == {2}
    check_switch_links(layout)  # each leg of a cage, at both ends, to a different switch


def test_split_cages_are_growth_stable():
    small = build(_sn5600(1, max_scalable_units=16))
    big = build(_sn5600(2, max_scalable_units=16))
    assert {lk.speed_gbps for lk in small.links if lk.tier == "leaf-spine"} == {400}
    check_growth(small, big)
    check_switch_links(big)


def test_spine_count_that_does_not_divide_names_one_that_does():
    with pytest.raises(SpecError) as e:
        build(spec_with("roce-1k", compute_fabric={"spine_count": 12}))
    assert e.value.field == "compute_fabric.spine_count"
    assert "16" in str(e.value)  # 12 does not divide 32 uplinks; 16 (or 32) does


def test_uplinks_that_are_not_whole_ports_name_the_ratio():
    with pytest.raises(SpecError) as e:
        build(_sn5600(1, nodes_per_su=3))  # 3 x 400G = 1,200 Gb/s: 1.5 uplinks of 800G
    assert e.value.field == "compute_fabric.oversubscription" and "nodes_per_su 4" in str(e.value)


def test_storage_leaves_beyond_a_spines_native_ports_split_cages_to_different_spines():
    """64 SUs' storage leaves and a server pair outnumber an SN5400 spine's 64 x 400G ports: the
    uplinks run as 2 x 200G legs, each leg of a cage to a different spine (checked by the invariant)."""
    # in-band cores with room for the border uplinks and the appliances' in-band beside 64 SUs
    inband = {"inband": {"uplinks_per_switch": 2, "core_switch_model": "sn5600"}}
    layout = build(spec_with("roce-1k", scalable_units=1, max_scalable_units=64, management=inband))
    ups = [lk for lk in layout.links if lk.tier == "storage_leaf-storage_spine"]
    assert {lk.speed_gbps for lk in ups} == {200}
    check_switch_links(layout)
    small = build(spec_with("roce-1k", scalable_units=1, max_scalable_units=62, management=inband))
    assert {lk.speed_gbps for lk in small.links if lk.tier == "storage_leaf-storage_spine"} == {400}


def test_storage_uplinks_round_up_to_a_spine_count_that_divides_them():
    """150 servers: three server leaf pairs of 50 x 200G (26 x 400G up, at least 1:1) beside SU
    leaves of 2 x 400G need 3 spines, and no count of 3 or more divides both: the uplinks round
    up to 4 spines (4 and 28 uplinks; the ratio is a ceiling) rather than refusing the spec."""
    layout = build(spec_with("lab", scalable_units=2, max_scalable_units=2, storage_fabric={"storage_servers": 150}))
    per_pair = defaultdict(Counter)
    for lk in layout.links:
        if lk.tier == "storage_leaf-storage_spine":
            per_pair[lk.a_device][lk.b_device] += 1
    spines = {d.name for d in layout.devices if d.role == "storage_spine"}
    assert len(spines) == 4 and all(set(c) == spines and len(set(c.values())) == 1 for c in per_pair.values())
    assert sum(per_pair["su01-storage-leaf"].values()) == 4 and sum(per_pair["storage-leaf-01"].values()) == 28
    check_all(layout)


def test_storage_servers_land_on_a_leaf_pair_routed_by_each_leaf():
    layout = build(spec_with("roce-1k", storage_fabric={"storage_servers": 80}))  # two pairs of server leaves
    leaves_of = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "server-storage_leaf":
            leaves_of[lk.a_device].add(lk.b_device)
    assert len(leaves_of) == 80 and all(len(v) == 2 for v in leaves_of.values()), leaves_of
    pairs = Counter(frozenset(v) for v in leaves_of.values())
    assert len(pairs) == 2 and set(pairs.values()) == {40}
    # each server address is in the subnet of the leaf it is cabled to, whose SVI is its gateway
    leaf_of_port = {(lk.a_device, lk.a_port): lk.b_device for lk in layout.links if lk.tier == "server-storage_leaf"}
    svi = {a.device: a for a in layout.addresses if a.interface == "vlan200"}
    for a in layout.addresses:
        if (a.device, a.interface) in leaf_of_port:
            gw = svi[leaf_of_port[(a.device, a.interface)]]
            assert a.network == gw.network and a.peer == str(netaddr.IPNetwork(gw.address).ip), a


# NVIDIA DGX SuperPOD H100 RA (RA-11333): UFM runs as a high-availability pair (Table 7 lists four
# UFM 3.1 appliances: a pair for the compute fabric, a pair for the storage fabric); the compute
# fabric's "Compute and UFM" cables are the nodes' plus 4 (Table 4): the pair's 2 + 2 links, in
# the node slot the UFM takes in SU 1, so the RA's node counts hold (test_fabric.py).
def test_ufm_is_a_high_availability_pair_by_default():
    layout = stack_layout("dgx-h100-ib")
    ufms = sorted(d.name for d in layout.devices if d.role == "ufm")
    assert ufms == ["ufm-01", "ufm-02"]
    leaves = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "ufm-leaf":
            leaves[lk.a_device].add(lk.b_device)
    assert sum(len(v) for v in leaves.values()) == 4 and not leaves["ufm-01"] & leaves["ufm-02"]
    # both in SU 1's UFM slot, each has a BMC on the OOB network
    assert all(layout.by_name[u].su == 1 for u in ufms)
    oob = {lk.a_device for lk in layout.links if lk.tier == "device-oob"}
    assert set(ufms) <= oob


def test_a_single_ufm_is_a_choice():
    layout = build(spec_with("dgx-h100-ib", compute_fabric={"ufm_appliances": 1}))
    assert [d.name for d in layout.devices if d.role == "ufm"] == ["ufm-01"]
    assert Counter(lk.tier for lk in layout.links)["ufm-leaf"] == 2


def test_ipoib_subnets_get_no_gateway_nobody_owns():
    layout = build(spec_with("dgx-h100-ib", addressing={"ipoib": True}))
    rails = [a for a in layout.addresses if a.pool == "rails"]
    assert rails
    owned = {str(netaddr.IPNetwork(a.address).ip) for a in layout.addresses}
    assert all(not a.peer or a.peer in owned for a in rails), [a for a in rails if a.peer][:2]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(storage=st.sampled_from(["sn5400", "sn5600"]), compute=st.sampled_from(["sn5400", "sn5600"]),
       servers=st.integers(0, 150), nodes=st.sampled_from([4, 8, 16, 32]), sus=st.integers(1, 3),
       ratio=st.sampled_from(["1:1", "2:1", "4:1", "3:1"]), inband=st.sampled_from(["sn4600c", "sn5400"]))
def test_generated_pods_keep_native_trunks_and_server_pairs(storage, compute, servers, nodes, sus, ratio, inband):
    try:
        layout = build(spec_with("lab", scalable_units=sus, max_scalable_units=sus, nodes_per_su=nodes,
                                 compute_fabric={"switch_model": compute},
                                 storage_fabric={"switch_model": storage, "storage_servers": servers,
                                                 "oversubscription": ratio},
                                 management={"inband": {"switch_model": inband, "core_switch_model": inband}}))
    except SpecError:
        return  # refusals are pinned elsewhere
    check_switch_links(layout)
    leaves_of = defaultdict(set)
    for lk in layout.links:
        if lk.tier == "server-storage_leaf":
            leaves_of[lk.a_device].add(lk.b_device)
    assert len(leaves_of) == servers and all(len(v) == 2 for v in leaves_of.values())


def test_spine_count_override_splits_cages_as_the_automatic_sizing_does():
    """16 SN5600 SUs reach 64 spines only over 2 x 400G legs: naming that count in spine_count
    plans the same pod (legs and all) instead of refusing it as not dividing 32 uplinks."""
    auto = build(_sn5600(16))
    spines = Counter(d.role for d in auto.devices)["spine"]
    pinned = build(_sn5600(16, compute_fabric={"switch_model": "sn5600", "spine_count": spines}))
    assert pinned.links == auto.links and pinned.devices == auto.devices
    check_switch_links(pinned)


def test_spine_count_override_that_fits_no_leg_names_one_that_does():
    with pytest.raises(SpecError) as e:
        build(_sn5600(16, compute_fabric={"switch_model": "sn5600", "spine_count": 48}))
    assert e.value.field == "compute_fabric.spine_count" and "e.g. 64" in str(e.value)


@pytest.mark.parametrize("sus", [1, 8, 16])
def test_pinning_the_automatic_spine_count_changes_nothing(sus):
    auto = build(_sn5600(sus))
    spines = Counter(d.role for d in auto.devices)["spine"]
    pinned = build(_sn5600(sus, compute_fabric={"switch_model": "sn5600", "spine_count": spines}))
    assert pinned.links == auto.links and pinned.tiers == auto.tiers
