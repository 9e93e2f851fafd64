"""The CPU governor per family (issue 34). Ubuntu: the boot unit writes the governor straight to
sysfs; Ubuntu's /usr/bin/cpupower only dispatches to linux-tools-<running kernel>, which a kernel
update does not bring, so after the reboot into a new kernel the cpupower unit failed. RHEL:
tuned owns the governor (its cpu plugin undoes a cpupower unit), so the role writes a tuned
profile including throughput-performance with the governor, and makes it the active one.

The Ubuntu unit is rendered by Ansible, checked by `systemd-analyze verify` where systemd is
installed, and its ExecStart run (as systemd would unescape it) against a sysfs tree. The RHEL
path runs host_tuning's governor.yml by ansible-playbook on RHEL 9 stand-in facts with the
modules that change the node swapped for a recorder."""

from __future__ import annotations

import configparser
import copy
import shlex
import shutil
import subprocess

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

ROLE = ROOT / "roles/host_tuning"
UBUNTU24 = {"os_family": "Debian", "distribution": "Ubuntu", "distribution_major_version": "24",
            "kernel": "6.8.0-49-generic"}
RHEL9 = {"os_family": "RedHat", "distribution": "RedHat", "distribution_major_version": "9",
         "kernel": "5.14.0-427.13.1.el9_4.x86_64"}


def _vars(family: str) -> dict:
    return {**load(ROLE / "defaults/main.yml"), **load(ROLE / "vars/main.yml"), **load(ROLE / f"vars/{family}.yml")}


def _render(tmp_path, family: str, template: str, **extra) -> str:
    tmp_path.mkdir(exist_ok=True)
    host = dict(_vars(family), ansible_managed="test", **extra)
    tasks = [{"name": "Render", "ansible.builtin.debug": {
        "msg": "{{ lookup('ansible.builtin.template', '%s') }}" % (ROLE / "templates" / template)}}]
    return debug_values(run_play(tmp_path, tasks, {"h": host})["h"])[-1]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("family", ["Ubuntu-22", "Ubuntu-24"])
def test_ubuntu_unit_sets_the_governor_without_a_per_kernel_tool(tmp_path, family):
    sysfs = tmp_path / "cpu"
    for cpu in range(4):
        (sysfs / f"cpu{cpu}" / "cpufreq").mkdir(parents=True)
        (sysfs / f"cpu{cpu}" / "cpufreq" / "scaling_governor").write_text("powersave\n")
    (sysfs / "cpufreq").mkdir()  # not a CPU: left alone
    unit = _render(tmp_path / "play", family, "superpod-cpu-governor.service.j2", host_tuning_cpufreq_sysfs=str(sysfs))
    packages = _vars(family)["host_tuning_family_packages"]
    assert not [p for p in packages if "linux-tools" in p], packages  # nothing tied to the kernel version
    (tmp_path / "superpod-cpu-governor.service").write_text(unit)
    if shutil.which("systemd-analyze"):
        unit_file = str(tmp_path / "superpod-cpu-governor.service")
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", unit_file],
                                capture_output=True, text=True, check=False)
        assert "superpod-cpu-governor.service:" not in verify.stderr, verify.stderr
    [exec_start] = [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")]
    argv = shlex.split(exec_start.replace("$$", "$"))  # systemd's unescaping of $$
    assert argv[0] == "/bin/sh" and "cpupower" not in exec_start
    subprocess.run(argv, check=True, env={"PATH": "/usr/bin:/bin"})
    governor = _vars(family)["host_tuning_cpu_governor"]
    assert {(sysfs / f"cpu{c}/cpufreq/scaling_governor").read_text().strip() for c in range(4)} == {governor}


RECORDED = ("ansible.builtin.package", "ansible.builtin.template", "ansible.builtin.systemd_service",
            "ansible.builtin.file", "ansible.builtin.command", "superpod_files")
RECORDER = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"module": {"type": "str"}, "args": {"type": "dict"}}, supports_check_mode=True)
module.exit_json(changed=True, recorded=module.params, changed_files=[])
"""


def _governor_tasks(path) -> list[dict]:
    out = []
    for task in load(path):
        task = copy.deepcopy(task)
        task.pop("notify", None)
        module = next((m for m in RECORDED if m in task), None)
        if module and not (module == "ansible.builtin.command" and "tuned-adm" not in str(task[module])):
            task["recorded"] = {"module": module, "args": task.pop(module)}
        out.append(task)
    return out


@pytest.mark.timeout(180)
def test_rhel_sets_the_governor_through_a_tuned_profile(tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "recorded.py").write_text(RECORDER)
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "active_profile").write_text("virtual-guest\n")  # RHEL's default on a VM
    # the role's one read (read-only, real), then the files main.yml runs for the governor (the
    # packages, the boot units, tuned's profile) with the modules that change the node swapped
    tasks = [{"ansible.builtin.include_role": {"name": "host_tuning", "tasks_from": "read.yml", "public": True}}]
    for name in ("packages.yml", "persist.yml", "governor-tuned.yml"):
        tasks += _governor_tasks(ROLE / "tasks" / name)
    host = dict(_vars("RedHat-9"), test_facts=RHEL9, host_tuning_tuned_dir=str(tuned), superpod_package_facts=None,
                host_tuning_pcie_acs_disable=False)
    results = run_play(tmp_path, tasks, {"rhel": host})["rhel"]
    assert not [r for r in results if r.get("failed")], [r for r in results if r.get("failed")]
    ran = [r["recorded"] for r in results if "recorded" in r and not r.get("skipped")]
    templates = [r["args"]["src"] for r in ran if r["module"] == "ansible.builtin.template"]
    assert templates == ["sysctl.conf.j2", "tuned.conf.j2"], ran
    # no cpupower unit beside tuned: its entry is left out, and nothing enables it
    [files] = [r["args"]["files"] for r in ran if r["module"] == "superpod_files"]
    unit = [f for f in files if f.get("src") == "superpod-cpu-governor.service.j2"]
    assert unit and not [f for f in unit if f["enabled"]], files
    assert "superpod-cpu-governor.service" not in [r["args"]["name"] for r in ran
                                                   if r["module"] == "ansible.builtin.systemd_service"]
    assert "tuned" in [name for r in ran if r["module"] == "ansible.builtin.package" for name in r["args"]["name"]]
    assert {"argv": ["tuned-adm", "profile", "superpod-host-tuning"]} in [
        r["args"] for r in ran if r["module"] == "ansible.builtin.command"]
    profile = configparser.ConfigParser()
    profile.read_string(_render(tmp_path / "render", "RedHat-9", "tuned.conf.j2"))
    assert profile["main"]["include"] == "throughput-performance"
    assert profile["cpu"]["governor"] == _vars("RedHat-9")["host_tuning_cpu_governor"]
