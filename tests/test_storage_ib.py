"""An InfiniBand storage fabric (issue 15, items 1 and 13): NVIDIA's DGX SuperPOD H100 RA shape,
a separate NDR storage fabric beside the compute fabric. IPoIB storage hosts are on-link in one
partition (no gateway: no device routes them), the fabric gets a subnet manager (a UFM pair, or
the storage switches' embedded SM), and every storage port carries an InfiniBand name."""

from __future__ import annotations

import re
from pathlib import Path

import netaddr
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import spec_with
from tests.invariants import check_all, check_growth
from topology import catalog
from topology.errors import SpecError
from topology.layout.build import build
from topology.render.inventory import render_inventory
from topology.render.switches import render_switch_configs

IB_STORAGE = {"storage_fabric": {"switch_model": "qm9700"}}
IB_NAME = re.compile(r"^ib")


def _ib_storage(**changes):
    return build(spec_with("dgx-h100-ib", **{**IB_STORAGE, **changes}))


@pytest.fixture(scope="module")
def layout():
    return _ib_storage()


def test_ipoib_storage_hosts_are_on_link_in_one_subnet(layout):
    check_all(layout)
    storage = [a for a in layout.addresses if a.pool == "storage"]
    assert storage
    assert all(a.peer == "" for a in storage), [a for a in storage if a.peer][:3]
    assert len({a.network for a in storage}) == 1  # one partition: one broadcast domain
    hosts = {d.name for d in layout.devices if d.role in ("gpu_node", "storage_server")}
    assert {a.device for a in storage} == hosts


def test_infiniband_switches_hold_no_address_but_their_management_port(layout):
    cat = catalog.load()
    ib = {d.name for d in layout.devices if d.model in cat.switches and cat.switches[d.model].kind == "infiniband"}
    assert any(d.role == "storage_leaf" and d.name in ib for d in layout.devices)
    assert [a for a in layout.addresses if a.device in ib and a.pool != "oob"] == []


def test_every_storage_port_has_an_infiniband_name(layout):
    ports = [(lk.a_device, lk.a_port) for lk in layout.links
             if lk.fabric == "storage" and lk.tier != "storage_leaf-storage_spine"]
    assert ports
    assert all(IB_NAME.match(p) for _, p in ports), [x for x in ports if not IB_NAME.match(x[1])][:3]
    addressed = [a.interface for a in layout.addresses if a.pool == "storage"]
    assert all(IB_NAME.match(i) for i in addressed)


def test_a_ufm_pair_manages_the_storage_fabric_by_default(layout):
    ufms = sorted(d.name for d in layout.devices if d.role == "ufm" and d.name.startswith("storage-"))
    assert ufms == ["storage-ufm-01", "storage-ufm-02"]
    cabled = {lk.a_device: lk.b_device for lk in layout.links if lk.tier == "ufm-storage_leaf"}
    assert set(cabled) == set(ufms)
    leaves = {d.name for d in layout.devices if d.role == "storage_leaf"}
    assert set(cabled.values()) <= leaves
    files = render_switch_configs(layout, Path("/out"))
    assert "routing_engine" in files[Path("/out/switches/storage-subnet-manager/opensm.conf")]
    assert "ipoib" in files[Path("/out/switches/storage-subnet-manager/partitions.conf")]


def test_the_switches_embedded_sm_needs_no_appliance():
    layout = _ib_storage(storage_fabric={"switch_model": "qm9700", "subnet_manager": "switch"})
    check_all(layout)
    assert not [d for d in layout.devices if d.name.startswith("storage-ufm")]
    files = render_switch_configs(layout, Path("/out"))
    assert "embedded" in files[Path("/out/switches/storage-subnet-manager/opensm.conf")]


def test_a_storage_ufm_needs_the_slot_the_compute_ufm_frees():
    with pytest.raises(SpecError) as e:
        build(spec_with("lab", storage_fabric={"switch_model": "qm9700"}))
    assert e.value.field == "storage_fabric.subnet_manager" and "switch" in e.value.rule
    check_all(build(spec_with("lab", storage_fabric={"switch_model": "qm9700", "subnet_manager": "switch"})))


def test_ipoib_storage_is_growth_stable():
    small = _ib_storage(scalable_units=2, max_scalable_units=4)
    big = _ib_storage(scalable_units=4, max_scalable_units=4)
    check_growth(small, big)
    net = {a.network for a in small.addresses if a.pool == "storage"}
    assert len(net) == 1 and netaddr.IPNetwork(net.pop()).size >= 4 * 32 * 2 + 16 * 2 + 2


def test_inventory_storage_nics_have_no_gateway(layout, tmp_path):
    files = render_inventory(layout, tmp_path)
    hosts = next(v for k, v in files.items() if k.name == "hosts.yml")
    assert "ibp41s0f0" in hosts
    node = next(d for d in layout.devices if d.role == "gpu_node")
    mine = [a for a in layout.addresses if a.device == node.name and a.pool == "storage"]
    assert {a.interface for a in mine} == {"ibp41s0f0", "ibp170s0f0"} and all(not a.peer for a in mine)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.sampled_from([4, 8, 16, 31, 32, 64]), sus=st.integers(1, 3), ufm=st.booleans(),
       manager=st.sampled_from(["ufm", "switch"]), servers=st.integers(0, 40))
def test_generated_ib_storage_pods_hold_the_invariants(nodes, sus, ufm, manager, servers):
    def pod(built):
        return spec_with("dgx-h100-ib", scalable_units=built, max_scalable_units=sus, nodes_per_su=nodes,
                         compute_fabric={"fabric_manager": ufm, "switch_subnet_manager": not ufm},
                         storage_fabric={"switch_model": "qm9700", "subnet_manager": manager,
                                         "storage_servers": servers})
    try:
        big = build(pod(sus))
    except SpecError as e:  # refusals name the field to change
        assert e.field.startswith(("storage_fabric.", "compute_fabric.", "racks.", "nodes_per_su")), e
        return
    check_all(big)
    assert all(not a.peer for a in big.addresses if a.pool == "storage")
    assert any(d.name == "storage-ufm-01" for d in big.devices) == (manager == "ufm")
    check_growth(build(pod(1)), big)
