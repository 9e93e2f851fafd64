"""Ubuntu's prebuilt signed NVIDIA modules follow the kernel through a meta package named after the
kernel's image meta package, as ubuntu-drivers picks it: linux-modules-nvidia-<branch>-server[-open]-
<flavour> for the GA kernel (generic), ...-<flavour>-hwe-<release> for the HWE kernel (a backport,
whose /proc/version_signature carries `~<release>`). The kernel release alone ("6.8.0-49-generic")
names the GA meta package, whose modules are for the GA kernel: wrong on an HWE kernel. Signatures
in Ubuntu's own format (Ubuntu <abi>.<upload>[~<release>.<n>]-<flavour> <mainline>)."""

from __future__ import annotations

import pytest

from tests.role_files import ROOT
from tests.roles.playbook import debug_values, run_play

ROLE = ROOT / "roles/nvidia_driver"
CASES = {
    # Ubuntu 22.04 GA kernel 5.15, HWE kernel 6.8 (from 24.04), 24.04 GA 6.8, 22.04 nvidia flavour
    "u22-ga": ("22.04", "5.15.0-91-generic", "Ubuntu 5.15.0-91.101-generic 5.15.131", "generic"),
    "u22-hwe": ("22.04", "6.8.0-49-generic", "Ubuntu 6.8.0-49.49~22.04.1-generic 6.8.12", "generic-hwe-22.04"),
    "u24-ga": ("24.04", "6.8.0-49-generic", "Ubuntu 6.8.0-49.49-generic 6.8.12", "generic"),
    "u22-nvidia": ("22.04", "5.15.0-1063-nvidia", "Ubuntu 5.15.0-1063.64-nvidia 5.15.160", "nvidia"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hwe")
    hosts = {}
    for name, (release, kernel, signature, _) in CASES.items():
        (tmp / f"{name}.sig").write_text(signature + "\n")
        hosts[name] = {"test_facts": {"kernel": kernel, "distribution_version": release}, "release": release}
    family = str(ROLE / "vars") + "/Ubuntu-{{ release[:2] }}.yml"
    # the role's one read takes the signature (each host its own file); the flavour is its vars'
    given = {"nvidia_driver_version_signature_file": f"{tmp}/{{{{ inventory_hostname }}}}.sig",
             "nvidia_driver_branch_effective": "570"}
    tasks = [{"name": "family vars", "ansible.builtin.include_vars": family},
             {"name": "read", "ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "detect.yml",
                                                              "public": True}},
             {"name": "show", "ansible.builtin.debug": {"msg": "{{ nvidia_driver_family_kernel_packages }}"}}]
    return run_play(tmp, tasks, hosts, given)


@pytest.mark.parametrize("case", sorted(CASES))
def test_signed_module_meta_package_follows_the_kernel_image_meta(results, case):
    meta = CASES[case][3]
    packages = debug_values(results[case])[-1]
    assert packages["proprietary-signed"]["unpinned"] == [f"linux-modules-nvidia-570-server-{meta}"]
    assert packages["open-signed"]["unpinned"] == [f"linux-modules-nvidia-570-server-open-{meta}"]
