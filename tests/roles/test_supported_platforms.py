"""Every role loads its OS family variables from vars/ with first_found: Debian 12, Ubuntu
22.04/24.04 and RHEL 9 (and its rebuilds) each find their file; an unsupported release (Debian
13, Ubuntu 20.04, RHEL 8) finds none and fails, instead of silently loading Debian 12's facts
through a family-wide `Debian.yml` fallback. The candidate names are rendered from each role's
own task, as first_found receives them."""

import jinja2
import pytest
import yaml

from tests.role_files import ROOT

ROLES = ["hugepages", "host_tuning", "nvidia_driver", "cuda_toolkit", "dcgm_exporter", "roce_qos", "rdma",
         "gpu_operator", "nccl", "rail_network", "nvidia_repo", "munge", "slurm"]
SUPPORTED = {("Debian", "Debian", "12"): "Debian.yml", ("Ubuntu", "Debian", "22"): "Ubuntu-22.yml",
             ("Ubuntu", "Debian", "24"): "Ubuntu-24.yml", ("RedHat", "RedHat", "9"): "RedHat-9.yml",
             ("Rocky", "RedHat", "9"): "RedHat-9.yml"}
UNSUPPORTED = [("Debian", "Debian", "13"), ("Ubuntu", "Debian", "20"), ("RedHat", "RedHat", "8")]


def candidates(role: str, distribution: str, family: str, major: str) -> list[str]:
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks/main.yml").read_text())
    task = next(t for t in tasks if t["name"].startswith("Load the OS family variables"))
    files = next(iter(task["vars"].values()))["files"]
    facts = {"distribution": distribution, "os_family": family, "distribution_major_version": major}
    return [jinja2.Template(f).render(ansible_facts=facts) for f in files]


def found(role: str, names: list[str]) -> str | None:
    return next((n for n in names if (ROOT / "roles" / role / "vars" / n).is_file()), None)


@pytest.mark.parametrize("role", ROLES)
def test_supported_platforms_find_their_file(role):
    for facts, file in SUPPORTED.items():
        assert found(role, candidates(role, *facts)) == file, (role, facts)


@pytest.mark.parametrize("role", ROLES)
def test_unsupported_releases_find_nothing(role):
    for facts in UNSUPPORTED:
        assert found(role, candidates(role, *facts)) is None, (role, facts)
