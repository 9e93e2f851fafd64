"""SONiC pushes: a JSON Patch (`config apply-patch`) where the Generic Config Updater can make
the change, `config reload` only where it must (roles/switch_fabric/filter_plugins/switch_fabric_sonic.py).

The patch is community.general.json_diff's (the role's filter), applied here with the jsonpatch
library GCU itself uses (RFC 6902), to a running ConfigDB made from the lab's SONiC rendering:
the result must be the plan's tables, with the tables the plan does not own untouched. What
needs a reload comes from GCU's own rules (sonic-utilities patch_sorter.py CreateOnlyMoveValidator)
and from the bgp container reading docker_routing_config_mode when it starts.
"""

from __future__ import annotations

import copy
import importlib.util
import json

import jsonpatch
import pytest
from ansible_collections.community.general.plugins.filter.json_patch import FilterModule as JsonPatchFilters

from tests.conftest import ROOT, spec_with
from topology.layout.build import build
from topology.render.switches import render_switch_configs

_spec = importlib.util.spec_from_file_location(
    "switch_fabric_sonic", ROOT / "roles/switch_fabric/filter_plugins/switch_fabric_sonic.py")
sonic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sonic)
json_diff = JsonPatchFilters().filters()["json_diff"]
LEAF = "su01-leaf-rail1"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("sonic")
    layout = build(spec_with("lab", compute_fabric={"switch_os": "sonic"}))
    return layout, render_switch_configs(layout, out), out / "switches" / LEAF


@pytest.fixture(scope="module")
def planned(rendered):
    _, files, where = rendered
    return json.loads(files[where / "config_db.json"])


def test_the_gate_waits_for_every_session_the_plan_gives_the_leaf(rendered):
    """The planned sessions, read from frr.conf for the gate, are the leaf's uplinks in the plan."""
    layout, files, where = rendered
    planned_peers = {a.peer for a in layout.addresses_by_device[LEAF] if a.peer and a.pool != "oob"
                     and any(lk.a_device == LEAF and lk.a_port == a.interface and lk.tier == "leaf-spine"
                             for lk in layout.links)}
    assert planned_peers
    assert set(sonic.switch_fabric_frr_neighbors(files[where / "frr.conf"])) == planned_peers


def _owned(running: dict, planned: dict) -> dict:
    return {t: v for t, v in running.items() if t in planned}


def test_an_in_place_change_is_a_patch_that_lands_the_plan(planned):
    running = copy.deepcopy(planned) | {"FEATURE": {"bgp": {"state": "enabled"}}}
    port = next(iter(running["PORT"]))
    running["PORT"][port]["mtu"] = "1500"  # a hand edit
    running["INTERFACE"]["Ethernet0|192.0.2.1/31"] = {}  # an address the plan does not have
    del running["PFC_WD"]  # a table the plan owns, gone
    assert sonic.switch_fabric_sonic_reload_reasons(_owned(running, planned), planned) == []
    patch = json_diff(_owned(running, planned), planned)
    assert patch and all(op["path"].split("/")[1] in planned for op in patch)
    landed = jsonpatch.apply_patch(running, patch)
    assert {t: landed[t] for t in planned} == planned
    assert landed["FEATURE"] == {"bgp": {"state": "enabled"}}  # not the plan's: untouched


def test_a_factory_switch_and_create_only_fields_need_a_reload(planned):
    factory = {"DEVICE_METADATA": {"localhost": {"hostname": "sonic", "hwsku": "stand-in"}}}
    why = sonic.switch_fabric_sonic_reload_reasons(factory, planned)
    mode = planned["DEVICE_METADATA"]["localhost"]["docker_routing_config_mode"]  # the plan's, not a literal
    assert why == [f"DEVICE_METADATA|localhost docker_routing_config_mode: None -> {mode} (read when bgp starts)"]
    running = copy.deepcopy(planned)
    port = next(iter(running["PORT"]))
    running["PORT"][port]["lanes"] = "0"  # another breakout: another port
    neighbor = next(iter(running["BGP_NEIGHBOR"]))
    running["BGP_NEIGHBOR"][neighbor]["asn"] = "65000"
    why = sonic.switch_fabric_sonic_reload_reasons(running, planned)
    assert [w.split(":")[0] for w in why] == [f"PORT|{port} lanes", f"BGP_NEIGHBOR|{neighbor} asn"]
