"""playbooks/rolling_reboot.yml reboots a node for every role's reason, not only host_tuning's:
the reboot play's own tasks run here by ansible-playbook against stand-in local facts (the
reports nvidia_driver, rdma, host_tuning leave in facts.d), with the reboot refused
(host_tuning_reboot_allowed false), so the refusal names the reasons it would reboot for and
nothing reboots. A report written before the running kernel booted is void: that boot has
already happened, and the role's next run re-checks (no reboot loop)."""

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

DRIVER_REASON = "nvidia module 570.86.15 is loaded but 580.95.05 is installed: drain the node, then reboot"
FIRMWARE_REASON = "ConnectX firmware: mlx5_0 (0000:18:00.0) LINK_TYPE_P1 IB(1) -> ETH(2) waits for a reboot"


def boot_time() -> int:
    return next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime "))


def write_fact(facts: Path, role: str, report: dict, stale: bool = False):
    path = facts / f"superpod_{role}.fact"
    path.write_text(json.dumps(report) + "\n")
    if stale:
        before = boot_time() - 600
        os.utime(path, (before, before))


def reboot_play_tasks() -> list:
    plays = yaml.safe_load((ROOT / "playbooks/rolling_reboot.yml").read_text())
    reboot = [p for p in plays if p.get("serial")]
    assert len(reboot) == 1
    return reboot[0]["tasks"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rolling-reboot")
    tuned = {"reboot_required": False, "reboot_reasons": [], "cmdline_params": ["iommu=pt"]}
    cases = {
        "driver-and-firmware": [("host_tuning", tuned, False),
                                ("nvidia_driver", {"reboot_required": True, "reboot_reasons": [DRIVER_REASON]}, False),
                                ("rdma", {"reboot_required": True, "reboot_reasons": [FIRMWARE_REASON]}, False),
                                ("hugepages", {"reboot_required": False}, False)],
        "reasons-from-before-the-boot": [("host_tuning", tuned, False),
                                         ("nvidia_driver", {"reboot_required": True, "reboot_reasons": [DRIVER_REASON]},
                                          True)],
        "nothing-pending": [("host_tuning", tuned, False),
                            ("nvidia_driver", {"reboot_required": False, "reboot_reasons": []}, False)],
    }
    for host, facts in cases.items():
        (tmp / host).mkdir()
        for role, report, stale in facts:
            write_fact(tmp / host, role, report, stale)
    hosts = {h: {"test_facts": {"virtualization_role": "host", "virtualization_type": "kvm"}} for h in cases}
    extra = {"host_tuning_reboot_allowed": False,
             "host_tuning_local_facts_dir": f"{tmp}/{{{{ inventory_hostname }}}}",
             "host_tuning_facts_file": f"{tmp}/{{{{ inventory_hostname }}}}/superpod_host_tuning.fact"}
    return run_play(tmp, reboot_play_tasks(), hosts, extra)


def test_the_reboot_names_every_roles_reason(runs):
    failed = [r for r in runs["driver-and-firmware"] if r.get("failed")]
    assert len(failed) == 1, runs["driver-and-firmware"]
    assert "host_tuning_reboot_allowed is false" in failed[0]["msg"]
    assert f"nvidia_driver: {DRIVER_REASON}" in failed[0]["msg"]
    assert f"rdma: {FIRMWARE_REASON}" in failed[0]["msg"]


@pytest.mark.parametrize("host", ["reasons-from-before-the-boot", "nothing-pending"])
def test_no_reboot_without_a_current_reason(runs, host):
    assert not [r for r in runs[host] if r.get("failed")], runs[host]
    # neither the reboot nor the post-reboot re-run of the tuning happened
    ran = [r["task"] for r in runs[host] if not r.get("skipped")]
    assert "Reboot and wait for the node" not in ran
    assert not [r for r in runs[host] if r.get("action") == "ansible.builtin.include_role" and not r.get("skipped")
                and r["task"].startswith("Re-run")]


def test_the_rerun_after_the_reboot_reports_its_own_reasons(tmp_path):
    """The reboot's facts (every role's reasons) must not stand in for host_tuning's own reasons in
    the role's run after it (rolling_reboot.yml's "Re-run the tuning"): those are vars/main.yml
    values, which a fact of the same name would shadow for the rest of the play."""
    missing = "superpod.rolling-reboot-test=1"  # a parameter no running kernel has
    assert missing not in open("/proc/cmdline").read().split()
    write_fact(tmp_path, "host_tuning", {"reboot_required": False, "reboot_reasons": [], "cmdline_params": []})
    write_fact(tmp_path, "nvidia_driver", {"reboot_required": True, "reboot_reasons": [DRIVER_REASON]})
    plan = {"host_tuning_cstates_disabled": False, "host_tuning_iommu": "", "host_tuning_cpu_governor": "",
            "host_tuning_bootloader_method": "grubby", "host_tuning_kernel_params_extra": [missing],
            "test_facts": {"virtualization_role": "host", "virtualization_type": "kvm"}}
    # the reboot play's task (refused: reboots are not allowed here), then the role's read in the rerun
    tasks = [{"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "reboot",
                                               "apply": {"ignore_errors": True}}},
             {"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "read.yml", "public": True}},
             {"name": "Own reasons", "ansible.builtin.debug": {"msg": {
                 "reasons": "{{ host_tuning_reboot_reasons }}", "required": "{{ host_tuning_reboot_required }}"}}}]
    extra = {"host_tuning_reboot_allowed": False, "host_tuning_local_facts_dir": str(tmp_path),
             "host_tuning_facts_file": str(tmp_path / "superpod_host_tuning.fact"),
             "host_tuning_hugepages_fact_file": str(tmp_path / "none.fact")}
    (tmp_path / "play").mkdir()
    results = run_play(tmp_path / "play", tasks, {"node": plan}, extra)["node"]
    refused = [r for r in results if r.get("failed")]
    assert refused and f"nvidia_driver: {DRIVER_REASON}" in refused[0]["msg"], results
    [own] = [r["msg"] for r in results if r["task"] == "Own reasons"]
    assert own == {"reasons": [f"kernel parameters not in the running kernel: {missing}"], "required": True}, own
