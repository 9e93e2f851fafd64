"""cuda_toolkit holds its packages again after an install changed them. The holds are read before
the install (one read per run), and apt's install of a held package back down to its pin
(allow_change_held_packages) leaves it unheld: the hold task must take the installed packages as
well as those the read saw unheld (the drift corpus's "package upgraded (above its pin)" case: the
fix restored the pin and lost the hold). Under --check the packages a run would install are not
there to hold yet (dpkg refuses them), so only the unheld ones are reported."""

from __future__ import annotations

import copy

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

HOLD = "Hold the toolkit packages (apt)"
DEBIAN = {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "12"}


def held_items(tmp_path, host: dict, check: bool) -> list[str]:
    """The packages the role's hold task would hold, its module swapped for a debug of each item."""
    task = copy.deepcopy(next(t for t in load(ROOT / "roles/cuda_toolkit/tasks/install.yml") if t.get("name") == HOLD))
    task.pop("ansible.builtin.dpkg_selections")
    task["ansible.builtin.debug"] = {"msg": "{{ item }}"}
    facts = {"name": "Node facts", "test_facts": {"facts": DEBIAN}, "check_mode": False}  # under --check too
    results = run_play(tmp_path, [facts, task], {"node": host}, check=check)
    [res] = [r for r in results["node"] if r["task"] == HOLD]
    assert not res.get("failed"), [i.get("msg") for i in res.get("results", [])]
    return [i["item"] for i in res.get("results", [])]


@pytest.mark.parametrize("check", [False, True], ids=["apply", "check"])
def test_a_package_the_install_changes_is_held_again(tmp_path, check):
    host = {"cuda_toolkit_hold": True, "cuda_toolkit_unheld": ["nvidia-cuda-toolkit"],
            # held before the run (the read saw it held), above its pin: the install takes it back down
            "cuda_toolkit_packages_to_install": ["libclang1-14=1:14.0.6-12"]}
    held = held_items(tmp_path, host, check)
    assert sorted(held) == (["nvidia-cuda-toolkit"] if check else ["libclang1-14", "nvidia-cuda-toolkit"])
