"""The defaults are current, supported versions (November 2026): not the R535 driver branch
(end of support 2026), CUDA 12.4, DOCA 2.9 or DCGM 3 packages. Each default is documented with
its support window in docs/nvidia_driver.md."""

from tests.role_files import FAMILIES, ROOT, load


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


def test_rhel_doca_directory_follows_the_node_minor_release():
    assert "distribution_version" in load(ROOT / "roles/rdma/vars/RedHat-9.yml")["rdma_family_doca_distro"]


def test_support_windows_are_documented():
    text = (ROOT / "docs/nvidia_driver.md").read_text()
    assert "## Supported versions" in text and "R580" in text and "DCGM 4" in text
