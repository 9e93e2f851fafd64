"""host_tuning stamps each reboot reason with the boot it was first seen in (the kernel's boot id),
and reports the reasons that survived a reboot as "still pending after reboot" (issue 33): the
reboot did not apply them, and another reboot will not. Run by ansible-playbook on local hosts,
the boot id file and the previous report placed per host."""

from __future__ import annotations

import json

import pytest

from tests.roles.playbook import run_play
from tests.roles.test_bootloader_cmdline import role_tasks

OLD_BOOT, THIS_BOOT = "0b1d0c5e-1111-4e0a-9d5e-000000000001", "0b1d0c5e-2222-4e0a-9d5e-000000000002"
# a kernel parameter no running kernel has: planned, it is a reason (the read compares /proc/cmdline)
MISSING_PARAM = "superpod.reboot-stamp-test=1"
CMDLINE = f"kernel parameters not in the running kernel: {MISSING_PARAM}"
BIOS = 'BIOS settings waiting for a reboot: {"SriovGlobalEnable": "Enabled"}'

# host -> (the reasons found now, the previous report's reboot_reasons_since or None for no report)
CASES = {
    "first-seen": ([CMDLINE], None),
    "same-boot-again": ([CMDLINE], {CMDLINE: THIS_BOOT}),
    "survived-a-reboot": ([CMDLINE, BIOS], {CMDLINE: OLD_BOOT}),  # BIOS appeared only in this boot
    "cleared-by-the-reboot": ([], {CMDLINE: OLD_BOOT}),
}


def plan(reasons: list[str]) -> dict:
    """The role's inputs that give these reasons: the kernel parameter planned, BIOS settings pending
    (what tasks/bios.yml leaves); nothing else on the command line, no governor."""
    return {"host_tuning_cstates_disabled": False, "host_tuning_iommu": "", "host_tuning_cpu_governor": "",
            "host_tuning_bootloader_method": "grubby",
            "host_tuning_kernel_params_extra": [MISSING_PARAM] if CMDLINE in reasons else [],
            **({"host_tuning_bios_pending_reboot": {"SriovGlobalEnable": "Enabled"}} if BIOS in reasons else {})}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    assert MISSING_PARAM not in open("/proc/cmdline").read().split()
    tmp = tmp_path_factory.mktemp("reboot-stamp")
    hosts = {}
    for host, (reasons, since) in CASES.items():
        (tmp / host).mkdir()
        (tmp / host / "boot_id").write_text(THIS_BOOT + "\n")
        if since is not None:
            (tmp / host / "report.fact").write_text(json.dumps({"reboot_reasons": list(since),
                                                                "reboot_reasons_since": since}) + "\n")
        hosts[host] = plan(reasons)
    # the role's one read (the boot id, the previous report), then what vars/main.yml derives from it
    tasks = role_tasks("host_tuning", ["read.yml"], public=True) + [
        {"ansible.builtin.debug": {"msg": {"reasons": "{{ host_tuning_reboot_reasons }}",
                                           "since": "{{ host_tuning_reboot_reasons_since }}",
                                           "still": "{{ host_tuning_still_pending_after_reboot }}"}}}]
    extra = {"host_tuning_boot_id_file": f"{tmp}/{{{{ inventory_hostname }}}}/boot_id",
             "host_tuning_facts_file": f"{tmp}/{{{{ inventory_hostname }}}}/report.fact",
             "host_tuning_hugepages_fact_file": f"{tmp}/{{{{ inventory_hostname }}}}/no-hugepages.fact"}
    out = run_play(tmp, tasks, hosts, extra)
    found = {h: next(r["msg"] for r in reversed(res) if r.get("action") == "ansible.builtin.debug")
             for h, res in out.items()}
    for host, (reasons, _) in CASES.items():
        assert found[host].pop("reasons") == reasons, (host, found[host])
    return found


def test_a_new_reason_is_stamped_with_this_boot(results):
    assert results["first-seen"] == {"since": {CMDLINE: THIS_BOOT}, "still": []}


def test_a_second_run_in_the_same_boot_keeps_the_stamp(results):
    assert results["same-boot-again"] == {"since": {CMDLINE: THIS_BOOT}, "still": []}


def test_a_reason_that_survived_a_reboot_is_still_pending_and_a_new_one_is_not(results):
    assert results["survived-a-reboot"] == {"since": {CMDLINE: OLD_BOOT, BIOS: THIS_BOOT}, "still": [CMDLINE]}


def test_reasons_the_reboot_cleared_are_gone(results):
    assert results["cleared-by-the-reboot"] == {"since": {}, "still": []}
