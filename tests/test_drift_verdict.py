"""Issue 33: a node that differs from its plan is drift with named items, not an error stop.

Real Ansible (ansible-runner, through the `superpod` CLI) on localhost with the real node_check
role and its module reading this machine: it has no NVIDIA GPU and none of the lab plan's rail
NICs, so node_check finds the node unlike its plan (the real H100 node's verdict, for the same
reasons: GPUs and rail netdevs the plan has and the node lacks). The expectations come from
the lab plan (the layout's inventory for su01-node01) and this machine's /sys/class/net.

- `drift`: exit 1, the host "drift", each mismatch named in the JSON and the table, and the
  tasks after node_check still run and report on the host;
- `apply`: the same mismatches fail the host (exit 1, "failed"): a node unlike its plan is
  never called done;
- a real error (a module that fails) stays exit 2 in drift.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from tests.lab_stack_cli import superpod
from tests.role_files import ROOT
from topology.operate import manifest
from topology.operate.drift import EXIT_DRIFT, EXIT_ERROR, DriftReport
from topology.operate.events import load_events
from topology.operate.report import print_drift

AFTER = "A role after node_check"


def lab_node() -> dict:
    """su01-node01's host vars as `superpod plan` renders the lab pod's inventory."""
    from topology import build
    from topology.render.inventory import render_inventory
    from topology.spec import load_stack_file

    layout = build(load_stack_file(str(ROOT / "Pulumi.lab.yaml")))
    files = render_inventory(layout, Path("/nonexistent/inv"))
    hosts_yml = next(text for path, text in files.items() if path.name == "hosts.yml")
    return yaml.safe_load(hosts_yml)["all"]["children"]["gpu_nodes"]["hosts"]["su01-node01"]


@pytest.fixture(scope="module")
def node() -> dict:
    return lab_node()


def _project(tmp_path: Path, node: dict, extra_task: str = "") -> tuple[Path, Path]:
    project, managed = tmp_path / "project", tmp_path / "managed"
    (project / "inventories" / "lab").mkdir(parents=True)
    managed.mkdir()
    host = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "superpod_gpu_count": node["superpod_gpu_count"], "rails": node["rails"],
            "node_check_host_kernel_checks": False, "node_check_rail_lldp": "off"}
    (project / "inventories" / "lab" / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": host}}}))
    (project / "roles").symlink_to(ROOT / "roles")  # superpod points Ansible at <project>/roles
    (project / "ansible.cfg").write_text(
        f"[defaults]\nfilter_plugins = {ROOT / 'filter_plugins'}\naction_plugins = {ROOT / 'action_plugins'}\n")
    (project / "site.yml").write_text(f"""
- hosts: all
  gather_facts: false
  roles:
    - role: node_check
  tasks:
{extra_task}
    - name: {AFTER}
      ansible.builtin.copy: {{content: "a = 1\\n", dest: {managed}/a.conf, mode: "0644"}}
""")
    return project, managed



def _expected_items(node: dict) -> list[str]:
    """What node_check must name, from the plan and this machine: the planned GPUs (none here)
    and every planned rail netdev this machine does not have."""
    here = set(os.listdir("/sys/class/net"))
    missing = [(f"rail{r['rail']}", r["netdev"]) for r in node["rails"] if r["netdev"] not in here]
    assert missing, "this machine has the plan's rail netdevs: the test needs a node unlike the plan"
    return [f"gpu present (expected {node['superpod_gpu_count']}, actual no NVIDIA GPU found"] + [
        f"link {rail} {netdev} (expected up" for rail, netdev in missing]


@pytest.mark.timeout(300)
def test_drift_names_each_mismatch_and_checks_on_apply_fails_the_host(tmp_path, node):
    project, managed = _project(tmp_path, node)
    base = ("--stack", "lab", "--project-dir", str(project), "--no-progress")
    wanted = _expected_items(node)

    found = superpod("drift", *base, "--json")
    assert found.exit_code == EXIT_DRIFT, found.output
    report = json.loads(found.stdout)
    host = report["hosts"]["localhost"]
    assert report["exit_code"] == EXIT_DRIFT and report["problem_hosts"] == [] and host["problems"] == []
    assert host["status"] == "drift" and report["drifted_hosts"] == ["localhost"]
    (check,) = [c for c in host["changes"] if c["role"] == "node_check"]
    assert check["task"] == "Fail on mismatches"
    for want in wanted:
        assert sum(item.startswith(want) for item in check["mismatches"]) == 1, (want, check["mismatches"])
    assert host["plan_mismatches"] == check["mismatches"]
    # the tasks after node_check ran and reported on the host
    assert AFTER in {c["task"] for c in host["changes"]}
    # apply cannot fix what the node lacks: --fix does not target a mismatch
    assert report["fix"] == {"limit": ["localhost"], "tags": None}  # the copy task (no role) only

    # the table (what `superpod drift` prints without --json) from the run's own recorded events
    (run,) = sorted((project / ".runs" / "lab").glob("*-drift"))
    events = load_events(run / "artifacts" / "run" / "job_events")
    from_events = DriftReport.from_events(events)
    assert from_events.exit_code == EXIT_DRIFT and from_events.mismatches("localhost") == check["mismatches"]
    console = Console(record=True, width=250)
    print_drift(console, from_events)
    table = console.export_text()
    assert "the node differs from its plan" in table
    for want in wanted:
        assert want in table, (want, table)

    # apply: the same mismatches fail the host, and nothing after it is done
    applied = superpod("apply", *base, "--json")
    assert applied.exit_code == 1, applied.output
    result = json.loads(applied.stdout)
    assert result["hosts"]["localhost"]["status"] == "failed"
    (problem,) = result["problems"]
    assert problem["task"] == "Fail on mismatches" and all(w in problem["message"] for w in wanted)
    assert not (managed / "a.conf").exists()

    # the record check (the plain path's node_check, run without --check) reads the same failure as
    # drift naming the same items, not as an error (topology/operate/manifest.py)
    (run,) = sorted((project / ".runs" / "lab").glob("*-apply"))
    found = manifest.quick_results(load_events(run / "artifacts" / "run" / "job_events"))
    assert found.problems == {} and not found.clean("localhost")
    assert [d["detail"] for d in found.drift["localhost"]] == check["mismatches"]
    assert {d["what"] for d in found.drift["localhost"]} == {"node_check : Fail on mismatches"}


@pytest.mark.timeout(300)
def test_a_real_error_in_drift_stays_an_error(tmp_path, node):
    broken = """
    - name: A module that fails
      ansible.builtin.command: /nonexistent/superpod-test-binary
      check_mode: false
      changed_when: false
"""
    project, _ = _project(tmp_path, node, extra_task=broken)
    found = superpod("drift", "--stack", "lab", "--project-dir", str(project), "--no-progress", "--json")
    report = json.loads(found.stdout)
    assert found.exit_code == EXIT_ERROR, found.output
    assert report["hosts"]["localhost"]["status"] == "failed"
    assert [p["task"] for p in report["hosts"]["localhost"]["problems"]] == ["A module that fails"]
    # the mismatches before it are still named
    assert report["hosts"]["localhost"]["plan_mismatches"]
