"""A full check (`apply --full`, `drift --full`) pays the controller about the same for every task a
host goes through, run or skipped (issue 39). Tasks that the usual paths skip together sit behind
one `include_tasks` carrying their shared condition: where it is false, the host goes through that
one skipped task, and the group's tasks are not even loaded. Run by ansible-playbook under --check
on local hosts (nothing is written); the expectations come from the plan each host is given."""

from __future__ import annotations

import pytest

from tests.roles.playbook import run_play
from tests.roles.test_bootloader_cmdline import role_tasks

# the tasks of hugepages' tasks/runtime_apply.yml: the unit, its script and the drift read/reapply
RUNTIME_GROUP = ["Install the runtime allocation script and unit (and the script's directory)",
                 "Enable the runtime allocation at boot",
                 "Read the running per-size/per-node page counts",
                 "Reapply the runtime allocation where the kernel drifted from the plan"]


@pytest.mark.timeout(120)
def test_no_runtime_pages_costs_one_skipped_task(tmp_path):
    # the default plan allocates nothing at runtime (no per-NUMA-node map)
    results = run_play(tmp_path, role_tasks("hugepages", ["runtime.yml"]),
                       {"no-runtime-pages": {"hugepages_runtime_pages": []}}, check=True)["no-runtime-pages"]
    assert not [r for r in results if r.get("failed")], results
    ran = [(r["task"].removeprefix("hugepages : "), bool(r.get("skipped")))
           for r in results if r["task"].startswith("hugepages : ")]
    assert ran == [("Install the runtime allocation and reapply where the kernel drifted", True),
                   ("Remove the runtime allocation unit when nothing is allocated at runtime", False)], ran
    assert not [name for name, _ in ran if name in RUNTIME_GROUP]
