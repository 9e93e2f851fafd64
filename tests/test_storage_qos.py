"""storage_fabric.qos (lossless | ecn | none) on the storage leaves and spines: NVUE judged by
NVIDIA's object model, SONiC by SONiC's YANG models. The RDMA ports expected are the plan's
storage-fabric cables (nodes, storage servers, leaf-spine), not read from the configs."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.conftest import spec_with
from topology import catalog
from topology.errors import SpecErrors
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.nvue import render_nvue
from topology.render.switches.nvue_model import check_startup
from topology.render.switches.qos import ROCE_QOS
from topology.render.switches.sonic import config_db
from topology.render.switches.sonic_yang import validate

STORAGE_ROLES = {"storage_leaf", "storage_spine"}
_cache: dict = {}


def _intents(qos: str | None, os_name: str = "cumulus"):
    key = (qos, os_name)
    if key not in _cache:
        fabric = {"switch_os": os_name} | ({"qos": qos} if qos else {})
        layout = build(spec_with("lab", storage_fabric=fabric))
        _cache[key] = layout, [sw for sw in build_intents(layout) if sw.role in STORAGE_ROLES]
    return _cache[key]


def _rdma_ports(layout, switch: str) -> set[str]:
    """The plan's storage-fabric data cables of a switch (the tiers between storage-fabric roles and
    the nodes' and servers' storage ports; not OOB, not the servers' in-band service ports)."""
    roles = {d.name: d.role for d in layout.devices}
    out = set()
    for lk in layout.links:
        if lk.tier in ("device-oob", "service-inband"):
            continue
        for dev, port, other in ((lk.a_device, lk.a_port, lk.b_device), (lk.b_device, lk.b_port, lk.a_device)):
            if dev == switch and (roles[other] in STORAGE_ROLES | {"gpu_node", "storage_server"}):
                out.add(port)
    return out


def _nvue(sw) -> dict:
    doc = yaml.safe_load(render_nvue(sw))
    assert check_startup(doc) == [], sw.name
    return doc[0]["set"]


def test_the_default_is_lossless_on_every_storage_switch_port_the_plan_cables_for_rdma():
    layout, intents = _intents(None)
    assert layout.spec.storage_fabric.qos == "lossless"
    assert intents
    for sw in intents:
        cfg = _nvue(sw)
        assert cfg["qos"]["roce"]["mode"] == "lossless", sw.name
        assert set(cfg["qos"]["pfc"]["default-global"]["switch-priority"]) == {str(p) for p in ROCE_QOS.pfc_priorities}
        watched = {name for name, i in cfg["interface"].items() if "pfc-watchdog" in i.get("qos", {})}
        assert watched == _rdma_ports(layout, sw.name), sw.name


def test_ecn_marks_without_pause():
    layout, intents = _intents("ecn")
    for sw in intents:
        cfg = _nvue(sw)
        assert cfg["qos"]["roce"]["mode"] == "lossy", sw.name
        assert "pfc" not in cfg["qos"], sw.name
        assert set(cfg["qos"]["congestion-control"]["default-global"]["traffic-class"]) == {
            str(tc) for tc in ROCE_QOS.ecn_traffic_classes}
        assert not any("qos" in i for i in cfg["interface"].values()), sw.name


def test_none_leaves_the_storage_switches_without_qos():
    _layout, intents = _intents("none")
    for sw in intents:
        assert "qos" not in _nvue(sw), sw.name


def test_a_qos_mode_that_does_not_exist_is_refused_naming_the_field():
    with pytest.raises(SpecErrors, match=r"storage_fabric\.qos"):
        spec_with("lab", storage_fabric={"qos": "pfc"})


@pytest.mark.skipif(shutil.which("yanglint") is None, reason="yanglint (libyang-tools) is the judge")
@pytest.mark.parametrize("mode", ["lossless", "ecn"])
def test_sonic_storage_switches_carry_the_mode_and_sonic_yang_accepts_them(mode):
    layout, intents = _intents(mode, "sonic")
    cat = catalog.load()
    for sw in intents:
        db = config_db(sw, cat.switches[sw.model])
        validate(db)
        planned = _rdma_ports(layout, sw.name)
        by_desc = {row["description"].split(" ")[0]: name for name, row in db["PORT"].items() if "description" in row}
        qos_ports = {by_desc[p] for p in planned}
        assert set(db["PORT_QOS_MAP"]) == qos_ports, sw.name
        for port in qos_ports:
            row = db["PORT_QOS_MAP"][port]
            assert ("pfc_enable" in row) == (mode == "lossless"), (sw.name, port)
            for tc in ROCE_QOS.ecn_traffic_classes:
                assert db["QUEUE"][f"{port}|{tc}"]["wred_profile"], (sw.name, port)
        assert ("PFC_WD" in db) == (mode == "lossless"), sw.name


@pytest.mark.parametrize("mode", ["lossless", "ecn", "none"])
def test_the_inventory_hands_the_storage_mode_to_roce_qos(mode, tmp_path):
    """roles/roce_qos reads superpod_storage_qos (its default of roce_qos_storage_qos)."""
    from topology.render.inventory import render_inventory

    layout = build(spec_with("lab", storage_fabric={"qos": mode}))
    files = render_inventory(layout, tmp_path)
    generated = yaml.safe_load(files[tmp_path / "group_vars" / "all" / "00_generated.yml"])
    assert generated["superpod_storage_qos"] == mode
    defaults = yaml.safe_load(open("roles/roce_qos/defaults/main.yml", encoding="utf-8"))
    assert "superpod_storage_qos" in defaults["roce_qos_storage_qos"]
