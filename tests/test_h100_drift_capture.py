"""`superpod drift` of every GPU-node role and node_check on the real one-GPU H100 node
(testdata/h100-node/drift/all-roles.json, scripts/device/drift-h100.sh): what the node's run
reported, checked against what the lab plan says su01-node01 should have. The VM has one GPU and
none of the plan's NICs, so each planned NIC must be named as missing by the role that owns it,
the GPU count and the rails by node_check, and the host must be drift (exit 1), never an error."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import stack_layout
from topology.render.inventory import render_inventory

CAPTURE = Path(__file__).resolve().parents[1] / "testdata" / "h100-node" / "drift"
HOST = "su01-node01"


def planned_vars() -> dict:
    rendered = render_inventory(stack_layout("lab"), Path("inv"))
    hosts = yaml.safe_load(rendered[Path("inv/hosts.yml")])

    def find(group: dict) -> dict | None:
        if HOST in (group.get("hosts") or {}):
            return group["hosts"][HOST]
        for child in (group.get("children") or {}).values():
            if (found := find(child or {})) is not None:
                return found
        return None

    return find(hosts["all"])


def test_the_real_node_is_drift_naming_every_planned_nic_and_the_gpu_count():
    report = json.loads((CAPTURE / "all-roles.json").read_text())
    host = report["hosts"][HOST]
    assert (report["exit_code"], host["status"], host["problems"], report["errors"]) == (1, "drift", [], [])
    assert host["recap"]["failed"] == 0

    plan = planned_vars()
    expected = {f"planned rail NIC missing: rail {r['rail']} netdev {r['netdev']}" for r in plan["rails"]}
    expected |= {f"planned link missing: {n}" for n in plan["superpod_inband_members"]}
    expected |= {f"planned link missing: {s['netdev']}" for s in plan["superpod_storage_nics"]}
    expected |= {f"link rail{r['rail']} {r['netdev']} (expected up, mtu {r['mtu']}, {r['speed_mbps']} Mb/s, "
                 "actual no such netdev)" for r in plan["rails"]}
    named = set(host["plan_mismatches"])
    assert expected <= named, sorted(expected - named)
    assert any(m.startswith(f"gpu count (expected {plan['superpod_gpu_count']}, actual 1") for m in named)
    # the roles after the first mismatch were still checked on that host
    roles = {c["role"] for c in host["changes"]}
    assert {"hugepages", "host_network", "rail_network", "roce_qos", "nccl", "node_check"} <= roles


def test_the_run_with_fabric_telemetry_on_an_offline_controller_is_an_error_not_drift():
    """The same node with fabric_telemetry included: its wheelhouse is built on the controller with
    pip, and that controller (the node itself) reaches no index; a step that cannot run is an error
    (exit 2) naming it, never a clean or drift verdict."""
    report = json.loads((CAPTURE / "with-fabric_telemetry.json").read_text())
    host = report["hosts"][HOST]
    assert report["exit_code"] == 2 and host["status"] == "failed"
    assert [(p["role"], p["task"]) for p in host["problems"]] == [("fabric_telemetry", "Build the exporter wheel")]
