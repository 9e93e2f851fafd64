"""A full check (`apply --full`, `drift --full`) pays the controller about the same for every task a
host goes through, run or skipped (issue 39). Tasks that the usual paths skip together sit behind
one `include_tasks` carrying their shared condition: where it is false, the host goes through that
one skipped task, and the group's tasks are not even loaded. Run by ansible-playbook under --check
on local hosts (nothing is written); the expectations come from the plan each host is given."""

from __future__ import annotations

import base64

import pytest

from tests.roles.playbook import run_play
from tests.roles.test_bootloader_cmdline import role_tasks

# the tasks of hugepages' tasks/changes.yml (with the files it imports): installs, sysctl writes, the
# bootloader's regeneration, the runtime allocation's unit and reapply
CHANGES_GROUP = ["Install the HugePages tools (hugeadm)",
                 "Report the packages a run would install (check mode, from the package read)",
                 "Apply the sysctls that differ from the running kernel",
                 "Show the sysctls that differ from the running kernel (check mode)",
                 "Regenerate the bootloader configuration when the effective command line changed",
                 "Enable the runtime allocation at boot",
                 "Reapply the runtime allocation where the kernel drifted from the plan"]
CHANGES = "Install, apply and regenerate what changed"


@pytest.mark.timeout(120)
def test_a_converged_node_costs_one_skipped_task_for_the_change_only_steps(tmp_path):
    # nothing to install, no sysctl differing, no runtime pages (the default plan); the stamp holds
    # the effective command line on one host and an older one on the other
    stamps = {"converged": "quiet\n", "stale": "quiet hugepages=8\n"}
    for host, text in stamps.items():
        (tmp_path / host).write_text(text)
    extra = {"hugepages_bootloader_stamp": f"{tmp_path}/{{{{ inventory_hostname }}}}",
             "hugepages_family_effective_cmdline_command": "echo quiet",
             "hugepages_family_bootloader_method": "grub_dropin", "hugepages_bootloader_update_command": "true",
             "hugepages_packages_to_install": [], "hugepages_can_sysctl": False,
             # what the role's read (tasks/detect.yml) found: each host's stamp
             "hugepages_state": {"slurp": {f"{tmp_path}/{h}": base64.b64encode(t.encode()).decode()
                                           for h, t in stamps.items()}}}
    hosts = {host: {} for host in stamps}
    out = run_play(tmp_path, role_tasks("hugepages", ["cmdline.yml"]), hosts, extra, check=True)
    ran = {}
    for host, results in out.items():
        assert not [r for r in results if r.get("failed")], results
        ran[host] = [(r["task"].removeprefix("hugepages : "), bool(r.get("skipped")))
                     for r in results if r["task"].startswith("hugepages : ")]
    assert ran["converged"] == [("Compute the effective kernel command line", False), (CHANGES, True),
                                ("Record the command line handed to the bootloader", False)], ran
    assert not [name for name, _ in ran["converged"] if name in CHANGES_GROUP]
    # a stale stamp loads the group: the regeneration (a command: skipped under --check) and the record
    assert (CHANGES, False) in ran["stale"], ran
    assert ("Regenerate the bootloader configuration when the effective command line changed", True) in ran["stale"]
