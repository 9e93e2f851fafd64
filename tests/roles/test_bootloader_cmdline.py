"""The kernel command line path of hugepages and host_tuning, run by ansible-playbook on local
hosts with the bootloader commands replaced by a recorder: what the handler hands to grubby
(RHEL 9) or update-grub (Debian/Ubuntu) is checked argument by argument, as the command module
receives it. Files go to tmp_path only (family paths and the stamp are pointed there)."""

import json

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

RECORDER = """#!/bin/sh
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$0.calls"
"""


def family_vars(role: str, family: str, tmp, host: str) -> dict:
    """The role's family vars with the files it writes moved under tmp/host."""
    data = load(ROOT / "roles" / role / "vars" / f"{family}.yml")
    base = tmp / host
    data[f"{role}_family_cmdline_file"] = str(base / "cmdline.d" / f"61-{role}.conf")
    if data[f"{role}_family_bootloader_method"] == "grubby":
        data[f"{role}_family_effective_cmdline_command"] = f"cat {base}/cmdline.d/*.conf | xargs"
    else:
        data[f"{role}_family_cmdline_file"] = str(base / "grub.d" / f"61-{role}.cfg")
        data[f"{role}_family_effective_cmdline_command"] = (
            f". {base}/grub; for f in {base}/grub.d/*.cfg; do [ -r \"$f\" ] && . \"$f\"; done;"
            " echo $GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT")
    return data


def prepare(tmp, host: str, stamp: str, other_files: dict[str, str]):
    base = tmp / host
    for sub in ("cmdline.d", "grub.d"):
        (base / sub).mkdir(parents=True)
    (base / "grub").write_text('GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n')
    for name, text in other_files.items():
        (base / name).write_text(text)
    if stamp:
        (base / "stamp").write_text(stamp + "\n")
    recorder = base / "bootloader-update"
    recorder.write_text(RECORDER)
    recorder.chmod(0o755)


def calls(tmp, host: str) -> list[list[str]]:
    path = tmp / host / "bootloader-update.calls"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def role_tasks(role: str, files: list[str], runs: int = 1, public: bool = False) -> list:
    """include_role of each tasks file; public: the role's vars (vars/main.yml, where its derived
    values live) stay visible to the tasks after it, as they do for a role in a play's roles."""
    return [{"ansible.builtin.include_role": {"name": role, "tasks_from": f, **({"public": True} if public else {})}}
            for _ in range(runs) for f in files]


def extra(role: str, tmp) -> dict:
    return {f"{role}_bootloader_stamp": f"{tmp}/{{{{ inventory_hostname }}}}/stamp",
            f"{role}_bootloader_update_command": f"{tmp}/{{{{ inventory_hostname }}}}/bootloader-update"}


@pytest.fixture(scope="module")
def hugepages_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hugepages-cmdline")
    hosts = {
        # Default settings (no boot-time page): nothing may reach the kernel command line.
        "defaults-ubuntu": family_vars("hugepages", "Ubuntu-24", tmp, "defaults-ubuntu"),
        "defaults-rhel": family_vars("hugepages", "RedHat-9", tmp, "defaults-rhel"),
        # RHEL 9: 1G pages shrink from 8 to 16 at 2M default, host_tuning dropped a C-state
        # parameter: what left the plan is removed, then the union of both roles' files applied.
        "rhel-change": dict(family_vars("hugepages", "RedHat-9", tmp, "rhel-change"),
                            hugepages_1g_count=16),
    }
    prepare(tmp, "defaults-ubuntu", "", {})
    prepare(tmp, "defaults-rhel", "", {})
    prepare(tmp, "rhel-change", "default_hugepagesz=1G hugepagesz=1G hugepages=8 intel_idle.max_cstate=0",
            {"cmdline.d/60-host_tuning.conf": "iommu=pt\n"})
    # the read, the drop-in's write (with the role's other boot-time files, moved under tmp) and the
    # bootloader step; nothing to install, no sysctl written to this machine's kernel
    tasks = role_tasks("hugepages", ["detect.yml", "boot.yml", "cmdline.yml"], runs=2, public=True) + [
        {"ansible.builtin.debug": {"msg": "{{ hugepages_cmdline_params }}"}},
        {"ansible.builtin.debug": {"msg": "{{ hugepages_cmdline_missing }}"}},
    ]
    elsewhere = {"hugepages_sysctl_file": f"{tmp}/{{{{ inventory_hostname }}}}/sysctl.conf",
                 "hugepages_runtime_script": f"{tmp}/{{{{ inventory_hostname }}}}/libexec/superpod-hugepages",
                 "hugepages_systemd_dir": f"{tmp}/{{{{ inventory_hostname }}}}/systemd",
                 "hugepages_packages_to_install": [], "hugepages_can_sysctl": False}
    return tmp, run_play(tmp, tasks, hosts, dict(extra("hugepages", tmp), **elsewhere))


@pytest.mark.parametrize("host", ["defaults-ubuntu", "defaults-rhel"])
def test_default_settings_put_nothing_on_the_kernel_command_line(hugepages_runs, host):
    tmp, results = hugepages_runs
    assert not [r for r in results[host] if r.get("failed")], results[host]
    params, missing = debug_values(results[host])[-2:]
    assert params == [] and missing == []  # ansible-core 2.19 turned the empty template into ["None"]
    assert not list((tmp / host).glob("*.d/61-hugepages.*"))
    assert all("None" not in " ".join(c) for c in calls(tmp, host))


def test_grubby_removes_dropped_parameters_then_applies_the_plan(hugepages_runs):
    tmp, results = hugepages_runs
    assert not [r for r in results["rhel-change"] if r.get("failed")], results["rhel-change"]
    assert (tmp / "rhel-change/cmdline.d/61-hugepages.conf").read_text().split() == ["hugepagesz=1G", "hugepages=16"]
    # Exactly one regeneration over two role runs (the second run is idempotent), as argv.
    assert calls(tmp, "rhel-change") == [
        ["--update-kernel=ALL", "--remove-args=default_hugepagesz=1G hugepages=8 intel_idle.max_cstate=0"],
        ["--update-kernel=ALL", "--args=iommu=pt hugepagesz=1G hugepages=16"],
    ]
    assert (tmp / "rhel-change/stamp").read_text().split() == ["iommu=pt", "hugepagesz=1G", "hugepages=16"]


def test_grub_families_run_the_update_command_once(hugepages_runs):
    tmp, _ = hugepages_runs
    assert calls(tmp, "defaults-ubuntu") == [[]]  # first run records the stamp; the second changes nothing


# host_tuning's inputs for a plan of iommu=pt alone; no governor (the read checks a planned one
# against this machine's cpufreq, which these tests are not about)
HOST_TUNING_IOMMU_ONLY = {"host_tuning_cstates_disabled": False, "host_tuning_iommu": "pt",
                          "host_tuning_cpu_governor": ""}


def test_host_tuning_grubby_gets_argv_not_a_shell_string(tmp_path):
    host = "rhel"
    # the plan: iommu=pt alone (the role derives its parameters from these inputs, vars/main.yml)
    hosts = {host: dict(family_vars("host_tuning", "RedHat-9", tmp_path, host), **HOST_TUNING_IOMMU_ONLY)}
    prepare(tmp_path, host, "iommu=pt processor.max_cstate=1", {})
    results = run_play(tmp_path, role_tasks("host_tuning", ["read.yml", "cmdline.yml"], public=True), hosts,
                       extra("host_tuning", tmp_path))
    assert not [r for r in results[host] if r.get("failed")], results[host]
    assert calls(tmp_path, host) == [["--update-kernel=ALL", "--remove-args=processor.max_cstate=1"],
                                     ["--update-kernel=ALL", "--args=iommu=pt"]]
