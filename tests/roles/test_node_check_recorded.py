"""node_check reads the plans other roles recorded on the node (host_tuning, hugepages, rdma,
nvidia_driver local facts) in its own module call, not in a round trip per file before it: the
plain `apply`/`drift` run node_check on every converged host (issue 33), so each remote task is
paid per host on every run (issue 39). The merge keeps the plan's rules: the recorded command line
parameters first, then the inventory's; governor, C-states, PCIe ACS, firmware and the GPUDirect
path from the owner's record unless the plan sets them; an owner that did not run is not planned."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

NODE_CHECK = ROOT / "roles/node_check"
MODULE = NODE_CHECK / "library/superpod_node_check.py"
spec = importlib.util.spec_from_file_location("superpod_node_check_recorded", MODULE)
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)

# Modules that run on the controller only (no round trip to the node)
CONTROLLER = {"ansible.builtin.import_tasks", "ansible.builtin.include_vars", "ansible.builtin.assert",
              "ansible.builtin.set_fact", "ansible.builtin.debug", "superpod_plan_mismatch"}

# What the owning roles record (their fact files' keys: host_tuning's cmdline_params,
# governor_wanted and pcie_acs, hugepages' cmdline_params, rdma's firmware report,
# nvidia_driver's gpudirect_rdma)
HOST_TUNING = {"cmdline_params": ["iommu=pt", "intel_idle.max_cstate=1", "processor.max_cstate=1"],
               "governor_wanted": "performance", "pcie_acs": {"disable": True, "by": "host_tuning"}}
HUGEPAGES = {"cmdline_params": ["default_hugepagesz=1G", "iommu=pt"]}
RDMA = {"firmware": {"state": "read", "settings": []}}
DRIVER = {"gpudirect_rdma": "dmabuf"}


def _tasks(path):
    out = []
    for task in yaml.safe_load(path.read_text()) or []:
        if "ansible.builtin.import_tasks" in task:
            out += _tasks(path.parent / task["ansible.builtin.import_tasks"])
        out.append(task)
    return out


def _module(task):
    return next(k for k in task if k not in {"name", "when", "vars", "register", "loop", "loop_control",
                                             "failed_when", "changed_when", "tags", "args"})


def test_node_check_reads_the_node_in_one_module_call():
    """The role's tasks that reach the node: the facts it needs when the play has none, and the
    module (which reads the recorded plans itself): no slurp loop before it."""
    tasks = _tasks(NODE_CHECK / "tasks/main.yml")
    remote = [(_module(t), t.get("when")) for t in tasks if _module(t) not in CONTROLLER]
    assert [m for m, _ in remote] == ["ansible.builtin.setup", "superpod_node_check"]
    assert remote[0][1], "the role's own fact gathering runs only when the play gathered none"
    fact_files = yaml.safe_load((NODE_CHECK / "vars/main.yml").read_text())["node_check_fact_files"]
    call = next(t for t in tasks if _module(t) == "superpod_node_check")
    assert call["superpod_node_check"]["recorded_plans"] == "{{ node_check_fact_files }}"
    assert set(fact_files) == {"host_tuning", "hugepages", "rdma", "nvidia_driver"}


def _write(tmp_path, plans):
    files = {}
    for owner in ("host_tuning", "hugepages", "rdma", "nvidia_driver"):
        files[owner] = str(tmp_path / f"superpod_{owner}.fact")
        if owner in plans:
            (tmp_path / f"superpod_{owner}.fact").write_text(json.dumps(plans[owner]))
    return files


def test_recorded_plans_fill_the_expectations_their_owners_plan(tmp_path):
    files = _write(tmp_path, {"host_tuning": HOST_TUNING, "hugepages": HUGEPAGES, "rdma": RDMA,
                              "nvidia_driver": DRIVER})
    plans, problem = nc.read_recorded_plans(files)
    assert problem == ""
    exp = nc.recorded_expectations({"host": "n1", "cmdline": ["pci=realloc", "iommu=pt"], "governor": None}, plans)
    # host_tuning's, then hugepages', then the inventory's; each once
    assert exp["cmdline"] == ["iommu=pt", "intel_idle.max_cstate=1", "processor.max_cstate=1",
                              "default_hugepagesz=1G", "pci=realloc"]
    assert exp["governor"] == "performance"
    assert exp["cstates_limited"] is True
    assert exp["pcie_acs_disabled"] is True
    assert exp["firmware"] == RDMA["firmware"]
    assert exp["gpudirect_rdma"] == "dmabuf"
    # what the plan sets wins over the record (node_check_expected_governor)
    assert nc.recorded_expectations({"governor": "schedutil"}, plans)["governor"] == "schedutil"


def test_an_owner_that_did_not_run_is_not_planned(tmp_path):
    plans, problem = nc.read_recorded_plans(_write(tmp_path, {"hugepages": {"cmdline_params": []}}))
    assert (plans, problem) == ({"hugepages": {"cmdline_params": []}}, "")
    exp = nc.recorded_expectations({"cmdline": []}, plans)
    assert exp["cmdline"] == []
    assert [exp[k] for k in ("governor", "cstates_limited", "pcie_acs_disabled", "firmware", "gpudirect_rdma")] \
        == [None] * 5
    assert nc.compare_cmdline([], None, exp["cmdline"], True)[0]["status"] == nc.NOT_PLANNED


def test_a_recorded_plan_that_is_not_json_is_an_error_naming_it(tmp_path):
    files = _write(tmp_path, {})
    (tmp_path / "superpod_rdma.fact").write_text("[rdma]\nfirmware=read\n")
    plans, problem = nc.read_recorded_plans(files)
    assert plans is None
    assert problem.startswith(f"recorded_plans.rdma: {files['rdma']} is not JSON")
    (tmp_path / "superpod_rdma.fact").write_text("[1, 2]")
    assert nc.read_recorded_plans(files)[1] == f"recorded_plans.rdma: {files['rdma']} must hold a JSON object"


@pytest.mark.timeout(120)
def test_the_module_reads_the_recorded_plans_under_ansible(tmp_path):
    """Through ansible-playbook (its argument handling), as main.yml calls it: the rows show the
    recorded values as the expectations."""
    node = tmp_path / "node"
    node.mkdir()
    files = _write(node, {"host_tuning": HOST_TUNING, "nvidia_driver": DRIVER})
    (tmp_path / "library").mkdir()
    shutil.copy(MODULE, tmp_path / "library" / MODULE.name)
    task = {"name": "node_check", "superpod_node_check": {
        "expected": {"host": "n1", "cmdline": [], "links": []}, "require_gpu": False, "require_rail_links": False,
        "host_kernel_checks": False, "rail_lldp": "off", "bootloader_stamp": str(node / "stamp"),
        "nvidia_smi": str(node / "no-nvidia-smi"), "recorded_plans": files}}
    [result] = [r for r in run_play(tmp_path, [task], {"n1": {}})["n1"] if r["task"] == "node_check"]
    rows = {r["check"]: r for r in result["checks"]}
    assert rows["kernel cmdline (bootloader)"]["expected"] == " ".join(HOST_TUNING["cmdline_params"])
    assert rows["cpu governor"]["expected"] == "performance"
    assert rows["connectx firmware"]["status"] == nc.NOT_PLANNED  # rdma recorded nothing here
