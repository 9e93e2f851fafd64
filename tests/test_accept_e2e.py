"""`superpod accept` end to end on the lab plan: the real playbook and role through ansible-runner
on localhost (one local connection per planned node), the tools replaced by stand-ins that
print the real tools' formats (tests/accept_fakes/, built from testdata/h100-node/) with three
faults injected: a throttled GPU, a slow rail, a lost GPU. Each must give its FAIL and its
work-list line; the healthy node passes. node_check is off here (it reads this machine's
netdevs, which no plan matches); tests/test_accept.py judges its result file. ~45 s."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT, stack_layout
from topology.cli import app
from topology.render.labels import cable_labels

pytestmark = pytest.mark.slow

FAKES = ROOT / "tests" / "accept_fakes" / "bin"
THROTTLED, LOST, SLOW = ("su01-node02", 3), ("su01-node03", 5), ("su01-node04", 2)  # (node, GPU / rail)


def planned_cable(node: str, rail: int) -> tuple[str, str]:
    """(netdev, cable ID) of a node's rail, from the layout and its labels (not from accept's reader)."""
    layout = stack_layout("lab")
    (link,) = [lk for lk in layout.links if lk.tier == "node-leaf" and lk.a_device == node
               and lk.b_device.endswith(f"-leaf-rail{rail}")]
    (label,) = [c for c in cable_labels(layout) if c.link == link]
    return link.a_port, label.cable_id


@pytest.fixture(scope="module")
def accepted(tmp_path_factory):
    proj = tmp_path_factory.mktemp("accept")
    for name in ("ansible.cfg", "roles", "playbooks", "filter_plugins", "action_plugins", "library", "topology",
                 "Pulumi.lab.yaml"):
        (proj / name).symlink_to(ROOT / name)
    runner = CliRunner()
    assert runner.invoke(app, ["plan", "--stack", "lab", "-C", str(proj)]).exit_code == 0
    hosts = yaml.safe_load((proj / "inventories/lab/hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    scenario = {"gpus": 8, "throttled": {THROTTLED[0]: THROTTLED[1]}, "lost": {LOST[0]: LOST[1]},
                "slow_rail": {SLOW[0]: next(r["hca"] for r in hosts[SLOW[0]]["rails"] if r["rail"] == SLOW[1])},
                "addresses": {hv["ansible_host"]: n for n, hv in hosts.items()}}
    (proj / "scenario.json").write_text(json.dumps(scenario))
    overlay = {"all": {"vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "acceptance_node_check": False,
        "acceptance_install": False,  # no CUDA or internet here: the role's install is molecule's and the H100's
        **{f"acceptance_{k}": str(FAKES / t) for k, t in (("nvidia_smi", "nvidia-smi"), ("nvbandwidth", "nvbandwidth"),
                                                          ("all_reduce_perf", "all_reduce_perf"),
                                                          ("ib_write_bw", "ib_write_bw"), ("mpirun", "mpirun"))},
        "acceptance_dcgmi": str(proj / "no-dcgmi"),
        "acceptance_environment": {"ACCEPT_FAKE_NODE": "{{ inventory_hostname }}",
                                   "ACCEPT_FAKE_SCENARIO": str(proj / "scenario.json")}}}}
    (proj / "overlay.yml").write_text(yaml.safe_dump(overlay))
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = runner.invoke(app, ["accept", "--stack", "lab", "-C", str(proj), "-i", str(proj / "overlay.yml"),
                                 "--json"], env=env)
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    return result.exit_code, doc, hosts, proj


def verdicts(doc, subject_part, check_part):
    return [c for c in doc["checks"] if subject_part in c["subject"] and check_part in c["check"]]


def test_a_failing_check_exits_1_and_the_run_is_kept(accepted):
    code, doc, _, proj = accepted
    assert code == 1
    run = Path(doc["run"])
    assert run.parent == proj / ".runs" / "lab" / "accept"
    assert json.loads((run / "verdicts.json").read_text())["summary"] == doc["summary"]
    assert (run / "worklist.txt").read_text().splitlines() == doc["work_list"]


def test_the_healthy_node_passes(accepted):
    _, doc, _, _ = accepted
    mine = [c for c in doc["checks"] if c["subject"] == "su01-node01"]
    assert {c["check"]: c["verdict"] for c in mine if c["verdict"] != "PASS"} == {"node_check": "SKIP",
                                                                                 "dcgmi diag": "SKIP"}
    assert {c["check"] for c in mine if c["verdict"] == "PASS"} == {
        "GPU health", "nvbandwidth host->GPU copy (PCIe)", "nvbandwidth GPU->host copy (PCIe)",
        "nvbandwidth GPU<->GPU copy (NVLink)", "all_reduce (node)"}


def test_throttled_gpu(accepted):
    _, doc, hosts, _ = accepted
    node, gpu = THROTTLED
    (health,) = verdicts(doc, node, "GPU health")
    assert health["verdict"] == "FAIL" and f"GPU {gpu}: throttled: HW thermal slowdown" in health["detail"]
    (ar,) = verdicts(doc, node, "all_reduce (node)")
    assert ar["verdict"] == "FAIL"  # a throttled GPU holds the NVLink all_reduce back
    rack = hosts[node]["superpod_rack"]
    assert any(w.startswith(f"{rack}, {node} GPU {gpu} ") and "throttled" in w for w in doc["work_list"])


def test_lost_gpu(accepted):
    _, doc, hosts, _ = accepted
    node, gpu = LOST
    (health,) = verdicts(doc, node, "GPU health")
    assert health["verdict"] == "FAIL" and f"GPU {gpu} missing" in health["detail"]
    assert {c["verdict"] for c in verdicts(doc, node, "nvbandwidth")} == {"FAIL"}  # 7 of 8 measured
    (su,) = [c for c in doc["checks"] if c["scope"] == "su"]
    assert su["verdict"] == "FAIL"
    rack = hosts[node]["superpod_rack"]
    assert any(w.startswith(f"{rack}, {node} GPU {gpu} (rail {gpu}") and "not seen by the driver" in w
               for w in doc["work_list"])


def test_slow_rail_names_nic_and_cable(accepted):
    _, doc, hosts, _ = accepted
    node, rail = SLOW
    rails = [c for c in doc["checks"] if c["scope"] == "rail"]
    assert len(rails) == 8 * 2  # 4 nodes: 2 pairs under each of 8 rail leaves
    bad = [c for c in rails if c["verdict"] == "FAIL"]
    assert [c["subject"] for c in bad] == [f"su01 rail {rail} su01-node03<->{node}"]
    netdev, cable = planned_cable(node, rail)
    assert any(f"{node} NIC " in w and f"({netdev}, rail {rail}), cable {cable}:" in w for w in doc["work_list"])
