"""The defaults are current, supported versions (November 2026): not the R535 driver branch
(end of support 2026), CUDA 12.4, DOCA 2.9 or DCGM 3 packages. Each default is documented with
its support window in docs/nvidia_driver.md."""

import pytest

from tests.role_files import FAMILIES, ROOT, load
from tests.roles.playbook import run_play


def defaults(role: str) -> dict:
    return load(ROOT / "roles" / role / "defaults/main.yml")


def test_driver_branch_is_the_long_term_branch():
    assert defaults("nvidia_driver")["nvidia_driver_branch"] == "580"


def test_cuda_toolkit_matches_the_driver_branch():
    assert [v["version"] for v in defaults("cuda_toolkit")["cuda_toolkit_versions"]] == ["13.0"]


def test_doca_is_past_the_2_9_line():
    major, minor, _ = defaults("rdma")["rdma_doca_version"].split(".")
    assert (int(major), int(minor)) >= (3, 2)


def test_dcgm_4_packages_per_family():
    for family in FAMILIES:
        pkgs = load(ROOT / "roles/dcgm_exporter/vars" / f"{family}.yml")["dcgm_exporter_family_dcgm_packages"]
        assert pkgs[0] == "datacenter-gpu-manager-4-core"
        assert pkgs[1] == "datacenter-gpu-manager-4-cuda{{ dcgm_exporter_cuda_major }}"
    assert defaults("dcgm_exporter")["dcgm_exporter_cuda_major"] == 13


def rendered(tmp_path, role: str, family: str, facts: dict, names: list[str], extra: dict | None = None) -> dict:
    """The role's defaults and a family's vars as Ansible templates them on a host with `facts`."""
    tasks = [{"ansible.builtin.include_vars": str(ROOT / "roles" / role / "defaults/main.yml")},
             {"ansible.builtin.include_vars": str(ROOT / "roles" / role / "vars" / f"{family}.yml")}]
    if (ROOT / "roles" / role / "vars/main.yml").exists():
        tasks.append({"ansible.builtin.include_vars": str(ROOT / "roles" / role / "vars/main.yml")})
    tasks.append({"name": "Values", "ansible.builtin.debug": {"msg": {n: "{{ " + n + " }}" for n in names}}})
    results = run_play(tmp_path, tasks, {"node": {"test_facts": facts}}, extra)
    [values] = [r["msg"] for r in results["node"] if r["task"] == "Values"]
    return values


@pytest.mark.parametrize("family,facts,url", [
    ("Ubuntu-24", {"architecture": "x86_64"}, "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu24.04/x86_64/"),
    # Grace: DOCA's aarch64 directories are arm64-sbsa (e.g. .../3.2.1/rhel10/arm64-sbsa/)
    ("Ubuntu-22", {"architecture": "aarch64"}, "https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu22.04/arm64-sbsa/"),
    # DOCA 3.2 builds per major release only (DKMS covers the minors): rhel9, not rhel9.6
    ("RedHat-9", {"architecture": "x86_64", "distribution_version": "9.6"},
     "https://linux.mellanox.com/public/repo/doca/3.2.1/rhel9/x86_64/"),
])
def test_doca_repository_directory(tmp_path, family, facts, url):
    assert rendered(tmp_path, "rdma", family, facts, ["rdma_doca_repo_url"])["rdma_doca_repo_url"] == url


@pytest.mark.parametrize("family", FAMILIES)
def test_dcgm_profiling_metrics_bring_the_proprietary_module(tmp_path, family):
    """DCGM_FI_PROF_* fields (the default metric list has three) come from DCGM 4's profiling
    module, shipped in datacenter-gpu-manager-4-proprietary(-cuda<N>); apt only pulls it as a
    Recommends, which servers configured without recommends never install."""
    values = rendered(tmp_path, "dcgm_exporter", family, {}, ["dcgm_exporter_dcgm_packages"])
    assert values["dcgm_exporter_dcgm_packages"] == [
        "datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13",
        "datacenter-gpu-manager-4-proprietary", "datacenter-gpu-manager-4-proprietary-cuda13"]
    plain = rendered(tmp_path, "dcgm_exporter", family, {}, ["dcgm_exporter_dcgm_packages"],
                     {"dcgm_exporter_metrics": [{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "t"}]})
    assert plain["dcgm_exporter_dcgm_packages"] == ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13"]


def test_support_windows_are_documented():
    text = (ROOT / "docs/nvidia_driver.md").read_text()
    assert "## Supported versions" in text and "R580" in text and "DCGM 4" in text
