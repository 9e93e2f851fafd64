"""A sysctl changed at runtime (its file intact) is drift: under --check, host_tuning and hugepages
name it (issue 33's drift corpus). Their fix is a `sysctl -w` command, which Ansible skips in check
mode, so without a check-mode report a drift check of a real node (writable /proc/sys) called such
a node clean. Run by ansible-playbook under --check on this machine: its own kernel's running
values are the judge, read here from /proc/sys; check mode writes nothing (asserted)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play
from tests.roles.test_bootloader_cmdline import role_tasks

KEY = "kernel.numa_balancing"
PROC = Path("/proc/sys/kernel/numa_balancing")
SHOW = "Show the sysctls that differ from the running kernel (check mode)"

pytestmark = pytest.mark.skipif(not (PROC.exists() and os.access("/proc/sys/kernel/hostname", os.W_OK)),
                                reason="needs NUMA balancing and a writable /proc/sys (root, no container)")


def running() -> str:
    return PROC.read_text().strip()


def other(value: str) -> str:
    return "1" if value == "0" else "0"


def shown(results: list[dict]) -> list[dict]:
    """What the check-mode report task said, item by item (results name tasks `role : task`)."""
    return [i for r in results if r["task"].split(" : ")[-1] == SHOW for i in r.get("results", [r])]


# host_tuning's one read, then main.yml's include of the runtime changes with its own condition (no
# governor, ACS left alone: only the sysctl is under test); hugepages' sysctl file of tasks
HOST_TUNING_APPLY = "Apply now what differs on the running node"


def host_tuning_tasks() -> list:
    task = next(t for t in load(ROOT / "roles/host_tuning/tasks/main.yml") if t.get("name") == HOST_TUNING_APPLY)
    return role_tasks("host_tuning", ["read.yml"], public=True) + [
        {"name": HOST_TUNING_APPLY, "when": task["when"],
         "ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": task["ansible.builtin.include_tasks"]}}]


ROLES = {
    # role -> (its tasks, the host vars that plan KEY at a value, extra vars)
    "host_tuning": (host_tuning_tasks, lambda value: {"host_tuning_numa_balancing": value == "1"},
                    {"host_tuning_cpu_governor": "", "host_tuning_pcie_acs_disable": False,
                     "host_tuning_bootloader_method": "none"}),
    # hugepages: its one read (detect.yml), then its change-only steps (changes.yml); nothing to
    # install, no bootloader step, no runtime pages
    "hugepages": (lambda: role_tasks("hugepages", ["detect.yml", "changes.yml"]),
                  lambda value: {"hugepages_sysctls": {KEY: value}},
                  {"hugepages_can_sysctl": True, "hugepages_packages_to_install": [],
                   "hugepages_bootloader_stale": False}),
}
# hugepages' plan is a role variable (vars/main.yml), which host vars cannot override: its plan is
# an extra var, one run per host
PLAN_AS_EXTRA_VARS = {"hugepages"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtime-sysctl")
    before = running()
    out = {}
    for role, (tasks, planned, extra) in ROLES.items():
        conf = tmp / f"{role}.conf"
        extra = {f"{role}_sysctl_file": str(conf), **extra}
        if role in PLAN_AS_EXTRA_VARS:
            out[role] = {}
            for host, value in (("drifted", other(before)), ("as-planned", before)):
                (tmp / host).mkdir()
                out[role].update(run_play(tmp / host, tasks(), {host: {}}, {**extra, **planned(value)}, check=True))
        else:
            hosts = {"drifted": planned(other(before)), "as-planned": planned(before)}
            out[role] = run_play(tmp, tasks(), hosts, extra, check=True)
        assert not conf.exists()  # check mode wrote nothing
    assert running() == before  # nor changed the kernel
    return before, out


@pytest.mark.parametrize("role", ["host_tuning", "hugepages"])
def test_a_runtime_sysctl_that_differs_is_reported_as_a_change_in_check_mode(runs, role):
    before, out = runs
    changed = [i for i in shown(out[role]["drifted"]) if i.get("changed")]
    assert [i["msg"] for i in changed] == [f"{KEY}={other(before)} (running {before})"], out[role]["drifted"]


def read_values(role: str, results: list[dict]) -> list[tuple[str, str]]:
    """The running values the role read: (key, value) per planned sysctl."""
    if role == "host_tuning":  # one superpod_state read; its sysctls command prints key=value per line
        [read] = [r for r in results if r.get("commands")]
        return [tuple(line.split("=", 1)) for line in read["commands"]["sysctls"]["stdout"].splitlines()]
    # hugepages: one superpod_state read of everything, the sysctl's /proc/sys file among them
    [read] = [r for r in results if r.get("action") == "superpod_state"]
    return [(KEY, base64.b64decode(read["slurp"][str(PROC)]).decode().strip())]


@pytest.mark.parametrize("role", ["host_tuning", "hugepages"])
def test_a_runtime_sysctl_as_planned_is_no_drift(runs, role):
    before, out = runs
    results = out[role]["as-planned"]
    # the running value was read (and matched): the write and its check-mode report are not
    # even loaded there (one skipped include task), so nothing reports a change
    assert read_values(role, results) == [(KEY, before)], results
    assert not shown(results), results
