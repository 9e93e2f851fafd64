"""SONiC config_db.json validated against SONiC's own YANG models (yanglint), and frr.conf
derived from the same intent."""

from __future__ import annotations

import copy
import shutil

import pytest

from tests.conftest import spec_with
from topology import catalog
from topology.layout.build import build
from topology.render.switches.build import build_intents
from topology.render.switches.frr import render_frr
from topology.render.switches.sonic import config_db
from topology.render.switches.sonic_yang import YangError, to_yang_json, validate

pytestmark = pytest.mark.skipif(shutil.which("yanglint") is None, reason="yanglint (libyang-tools) not installed")

_cache: dict = {}


def _sonic(stack: str):
    if stack not in _cache:
        sonic = {"switch_os": "sonic"}
        # in-band cores on SN5400: SONiC's SN4600C platform has no 4 x 25G breakout for the
        # storage servers' service ports (tests/test_sonic_platform.py)
        inband = sonic | {"core_switch_model": "sn5400"}
        layout = build(
            spec_with(stack, compute_fabric=sonic, storage_fabric=sonic, management={"inband": inband, "oob": sonic})
        )
        cat = catalog.load()
        _cache[stack] = layout, {sw.name: (sw, config_db(sw, cat.switches[sw.model])) for sw in build_intents(layout)}
    return _cache[stack]


def test_every_lab_config_db_validates_against_sonic_yang():
    _, dbs = _sonic("lab")
    assert len(dbs) > 10
    for name, (_sw, db) in dbs.items():
        try:
            validate(db)
        except YangError as e:  # pragma: no cover - the message is the point
            pytest.fail(f"{name}: {e}")


def test_one_switch_per_role_of_roce_1k_validates():
    _, dbs = _sonic("roce-1k")
    seen: set[str] = set()
    for _name, (sw, db) in dbs.items():
        if sw.role not in seen:
            seen.add(sw.role)
            validate(db)
    assert {"leaf", "spine", "storage_leaf", "inband_switch", "oob_switch"} <= seen


def _leaf_db():
    return copy.deepcopy(_sonic("lab")[1]["su01-leaf-rail0"][1])


def test_a_bad_mtu_fails_validation():
    db = _leaf_db()
    db["PORT"]["Ethernet0"]["mtu"] = "9300"
    with pytest.raises(YangError, match="mtu|9300"):
        validate(db)


def test_an_unknown_port_fails_validation():
    db = _leaf_db()
    db["INTERFACE"]["Ethernet999|100.64.9.0/31"] = {}
    db["INTERFACE"]["Ethernet999"] = {}
    with pytest.raises(YangError, match="Ethernet999|leafref|[Ii]nvalid"):
        validate(db)


def test_a_bad_pfc_queue_map_fails_validation():
    db = _leaf_db()
    port = next(iter(db["PORT_QOS_MAP"]))
    db["PORT_QOS_MAP"][port]["dscp_to_tc_map"] = "NO_SUCH_MAP"
    with pytest.raises(YangError):
        validate(db)


def test_config_db_carries_the_intent():
    layout, dbs = _sonic("lab")
    sw, db = dbs["su01-leaf-rail0"]
    meta = db["DEVICE_METADATA"]["localhost"]
    assert meta["docker_routing_config_mode"] == "split-unified"
    assert int(meta["bgp_asn"]) == sw.bgp.asn
    aliases = {v["description"].split()[0]: k for k, v in db["PORT"].items() if "description" in v}
    for p in sw.ports:
        assert f"{aliases[p.name]}|{p.address}" in db["INTERFACE"]
        assert db["PORT"][aliases[p.name]]["mtu"] == "9216"
        assert db["PORT_QOS_MAP"][aliases[p.name]]["pfc_enable"] == "3"
        assert db["PFC_WD"][aliases[p.name]]["action"] == "drop"
    assert db["DSCP_TO_TC_MAP"]["AZURE"]["26"] == "3" and db["DSCP_TO_TC_MAP"]["AZURE"]["48"] == "6"
    assert db["WRED_PROFILE"]["AZURE_LOSSLESS"]["ecn"] == "ecn_all"
    assert {v["asn"] for v in db["BGP_NEIGHBOR"].values()} == {
        str(a.asn) for a in layout.asns if a.device == "spine-01"
    }
    assert "LOOPBACK_INTERFACE" in db and f"Loopback0|{sw.loopback}" in db["LOOPBACK_INTERFACE"]


def test_storage_breakouts_in_breakout_cfg():
    _, dbs = _sonic("lab")
    db = dbs["su01-storage-leaf"][1]
    assert db["BREAKOUT_CFG"]["Ethernet0"] == {"brkout_mode": "2x200G[100G,50G,40G,25G,10G]"}
    assert db["PORT"]["Ethernet4"]["alias"] == "etp1b"
    assert db["PORT"]["Ethernet4"]["description"].startswith("swp1s1 to ")


def test_yang_json_uses_numbers_for_numeric_leaves():
    data = to_yang_json(_leaf_db())
    port = data["sonic-port:sonic-port"]["PORT"]["PORT_LIST"][0]
    assert isinstance(port["mtu"], int) and isinstance(port["speed"], int)


def test_frr_conf_peers_with_planned_asns():
    _, dbs = _sonic("lab")
    sw, _db = dbs["su01-leaf-rail0"]
    conf = render_frr(sw)
    assert f"router bgp {sw.bgp.asn}" in conf
    for n in sw.bgp.neighbors:
        assert f" neighbor {n.address} remote-as {n.remote_as}" in conf
    for net in sw.bgp.networks:
        assert f"  network {net}" in conf
    assert "  maximum-paths 64" in conf
