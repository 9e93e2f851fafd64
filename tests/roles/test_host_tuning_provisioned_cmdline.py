"""host_tuning on nodes whose kernel command line belongs to provisioning (Base Command Manager,
Warewulf, PXE images: no /etc/default/grub, as on the real H100 node, testdata h100-node): with
host_tuning_bootloader_method: none the role writes no drop-in, runs no bootloader command and
reports the command line the image needs (and what the running kernel lacks); the GRUB method on
such a host fails naming the setting that fixes it. Run by ansible-playbook on local hosts, the
bootloader command replaced by a recorder (tests/roles/test_bootloader_cmdline.py)."""

from __future__ import annotations

import pytest

from tests.roles.playbook import debug_values, run_play
from tests.roles.test_bootloader_cmdline import calls, extra, family_vars, role_tasks

PARAMS = ["intel_idle.max_cstate=0", "processor.max_cstate=1", "iommu=pt"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("host_tuning-provisioned")
    hosts = {}
    for name, method in (("provisioned", "none"), ("grub-missing", None), ("unknown-method", "lilo")):
        base = tmp / name
        base.mkdir()
        recorder = base / "bootloader-update"
        recorder.write_text("#!/bin/sh\necho \"$@\" >> \"$0.calls\"\n")
        recorder.chmod(0o755)
        # PARAMS: an Intel CPU's C-state parameters and iommu=pt (the role's defaults); no governor
        hv = dict(family_vars("host_tuning", "Ubuntu-24", tmp, name), host_tuning_cpu_vendor="intel",
                  host_tuning_cpu_governor="",
                  host_tuning_grub_default_file=str(base / "grub"))  # absent: no GRUB on this host
        if method:
            hv["host_tuning_bootloader_method"] = method
        hosts[name] = hv
    tasks = role_tasks("host_tuning", ["read.yml", "cmdline.yml"], public=True) + [
        {"ansible.builtin.debug": {"msg": "{{ host_tuning_cmdline_needed | default('unset') }}"}},
        {"ansible.builtin.debug": {"msg": "{{ host_tuning_cmdline_missing }}"}},
        # what the role's one warning task (tasks/report.yml) prints
        {"name": "Warnings", "ansible.builtin.debug": {"msg": "{{ host_tuning_warnings }}"}},
    ]
    return tmp, run_play(tmp, tasks, hosts, extra("host_tuning", tmp))


def test_none_reports_the_command_line_and_touches_no_bootloader(runs):
    tmp, results = runs
    res = results["provisioned"]
    assert not any(r.get("failed") for r in res), [r.get("msg") for r in res if r.get("failed")]
    needed, missing, _ = debug_values(res)[-3:]
    assert needed == " ".join(PARAMS)
    running = open("/proc/cmdline").read().split()
    assert missing == [p for p in PARAMS if p not in running]
    assert calls(tmp, "provisioned") == [] and not (tmp / "provisioned/grub.d").exists()
    assert not (tmp / "provisioned/stamp").exists()
    [warnings] = [r["msg"] for r in res if r["task"] == "Warnings"]
    assert any("host_tuning_bootloader_method: none" in w and w.endswith(" ".join(PARAMS)) for w in warnings), warnings


def test_grub_method_without_grub_fails_naming_the_fix(runs):
    _, results = runs
    failed = [r for r in results["grub-missing"] if r.get("failed")]
    assert failed and "host_tuning_bootloader_method: none" in failed[0]["msg"]


def test_unknown_method_fails_naming_the_choices(runs):
    """The method and GRUB's presence are one check: a bad method is named, not GRUB."""
    _, results = runs
    failed = [r for r in results["unknown-method"] if r.get("failed")]
    assert failed
    assert 'host_tuning_bootloader_method is "lilo": it must be grub_dropin, grubby or none' in failed[0]["msg"]
    assert "is missing" not in failed[0]["msg"]
