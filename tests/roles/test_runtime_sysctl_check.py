"""A sysctl changed at runtime (its file intact) is drift: under --check, host_tuning and hugepages
name it (issue 33's drift corpus). Their fix is a `sysctl -w` command, which Ansible skips in check
mode, so without a check-mode report a drift check of a real node (writable /proc/sys) called such
a node clean. Run by ansible-playbook under --check on this machine: its own kernel's running
values are the judge, read here from /proc/sys; check mode writes nothing (asserted)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtime-sysctl")
    before = running()
    out = {}
    # hugepages reads the running values in its one read (detect.yml) and writes or shows them in
    # its change-only steps (changes.yml); its plan is a role variable, so the plan is an extra var
    # per run here (nothing to install, no bootloader step, no runtime pages)
    hugepages = {"hugepages_can_sysctl": True, "hugepages_packages_to_install": [], "hugepages_bootloader_stale": False}
    for role, files, plans in (
            ("host_tuning", ["sysctl.yml"], None),
            ("hugepages", ["detect.yml", "changes.yml"], {"drifted": other(before), "as-planned": before})):
        conf = tmp / f"{role}.conf"
        if plans is None:
            hosts = {"drifted": {"host_tuning_sysctls": {KEY: other(before)}},
                     "as-planned": {"host_tuning_sysctls": {KEY: before}}}
            out[role] = run_play(tmp, role_tasks(role, files), hosts, {f"{role}_sysctl_file": str(conf)}, check=True)
        else:
            out[role] = {}
            for host, value in plans.items():
                (tmp / host).mkdir()
                out[role].update(run_play(tmp / host, role_tasks(role, files), {host: {}},
                                          dict(hugepages, hugepages_sysctls={KEY: value}), check=True))
        assert not conf.exists()  # check mode wrote nothing
    assert running() == before  # nor changed the kernel
    return before, out


@pytest.mark.parametrize("role", ["host_tuning", "hugepages"])
def test_a_runtime_sysctl_that_differs_is_reported_as_a_change_in_check_mode(runs, role):
    before, out = runs
    changed = [i for i in shown(out[role]["drifted"]) if i.get("changed")]
    assert [i["msg"] for i in changed] == [f"{KEY}={other(before)} (running {before})"], out[role]["drifted"]


@pytest.mark.parametrize("role", ["host_tuning", "hugepages"])
def test_a_runtime_sysctl_as_planned_is_no_drift(runs, role):
    _, out = runs
    results = out[role]["as-planned"]
    # the running value was read (and matched): the write and its check-mode report are not
    # even loaded there (one skipped include task), so nothing reports a change
    if role == "hugepages":  # one read of everything: the sysctl's /proc/sys file among them
        read = [r for r in results if r.get("action") == "superpod_state"]
        assert read and str(PROC) in read[0]["slurp"], results
    else:
        read = [r for r in results if r["task"].split(" : ")[-1] == "Read the running sysctl values"]
        assert read and [i["item"]["key"] for i in read[0]["results"]] == [KEY], results
    assert not shown(results), results
