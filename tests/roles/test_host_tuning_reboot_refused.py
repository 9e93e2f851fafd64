"""host_tuning's last step, one include whatever a needed reboot leads to (issue 39: the reboot
include and the forbidden-reboot failure were two tasks, both skipped on every node that needs no
reboot): where a reboot is needed but not allowed, the role fails only when
host_tuning_fail_on_pending_reboot asks it to, naming the reasons; a node that needs none runs
nothing. Run by ansible-playbook on local hosts, main.yml's own task (its when and file choice),
never with reboots allowed (that path reboots: the molecule scenario runs it on a container)."""

from __future__ import annotations

import copy

import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

TASKS = ROOT / "roles/host_tuning/tasks"
NAME = "Reboot when needed and allowed, or fail on a forbidden pending reboot when asked to"


def test_forbidden_reboot_fails_only_when_asked_to(tmp_path):
    task = copy.deepcopy(next(t for t in yaml.safe_load((TASKS / "main.yml").read_text()) if t.get("name") == NAME))
    # the role's own file choice, read from the role's tasks directory (not the test play's)
    task["ansible.builtin.include_tasks"] = f"{TASKS}/" + task["ansible.builtin.include_tasks"]
    common = {"host_tuning_reboot_allowed": False, "host_tuning_reboot_reasons": ["kernel parameters: iommu=pt"]}
    hosts = {
        "needed-fail": dict(common, host_tuning_reboot_required=True, host_tuning_fail_on_pending_reboot=True),
        "needed-warn-only": dict(common, host_tuning_reboot_required=True, host_tuning_fail_on_pending_reboot=False),
        "not-needed": dict(common, host_tuning_reboot_required=False, host_tuning_fail_on_pending_reboot=True),
    }
    results = run_play(tmp_path, [task], hosts)
    failed = [r for r in results["needed-fail"] if r.get("failed")]
    assert failed
    assert failed[0]["msg"] == "host_tuning: reboot required and not allowed: ['kernel parameters: iommu=pt']"
    for host in ("needed-warn-only", "not-needed"):
        assert not any(r.get("failed") for r in results[host]), results[host]
        [include] = [r for r in results[host] if r["task"] == NAME]
        assert include.get("skipped"), include
