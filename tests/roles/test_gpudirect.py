"""GPUDirect RDMA against the RDMA stack: DMA-BUF where the kernel and the open modules allow
it, nvidia-peermem otherwise, and with DOCA (which replaces the kernel's ib_core) a peermem
that is rebuilt against DOCA's RDMA core (NVIDIA/gpu-operator#2868): rdma runs before
nvidia_driver, rebuilds the NVIDIA DKMS modules after DOCA changed, and nvidia_driver refuses
a prebuilt peermem with DOCA. Run by ansible-playbook with a recorder in place of dkms."""

import json

import pytest
import yaml

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

FAKE_DKMS = """#!/bin/sh
if [ "$1" = status ]; then
  echo "nvidia/580.95.05, 6.8.0-49-generic, x86_64: installed"
  echo "nvidia/580.95.05, 6.8.0-51-generic, x86_64: installed (WARNING! Diff between built and installed module!)"
  echo "mlnx-ofed-kernel/25.07, 6.8.0-49-generic, x86_64: installed"
  echo "nvidia/570.10, 6.8.0-49-generic, x86_64: built"
  exit 0
fi
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$0.calls"
"""


def test_site_runs_rdma_before_nvidia_driver():
    plays = yaml.safe_load((ROOT / "site.yml").read_text())
    gpu_play = next(p for p in plays if p["hosts"] == "gpu_nodes" and any(r["role"] == "rdma" for r in p["roles"]))
    roles = [r["role"] for r in gpu_play["roles"]]
    assert roles.index("rdma") < roles.index("nvidia_driver")


@pytest.mark.parametrize("doca_changed,calls", [
    (True, [["install", "--force", "-m", "nvidia", "-v", "580.95.05", "-k", "6.8.0-49-generic"],
            ["install", "--force", "-m", "nvidia", "-v", "580.95.05", "-k", "6.8.0-51-generic"]]),
    (False, []),
])
def test_doca_change_rebuilds_the_nvidia_dkms_modules(tmp_path, doca_changed, calls):
    dkms = tmp_path / "dkms"
    dkms.write_text(FAKE_DKMS)
    dkms.chmod(0o755)
    results = run_play(tmp_path, [{"ansible.builtin.include_role": {"name": "rdma", "tasks_from": "peermem.yml"}}],
                       {"node": {}}, {"rdma_dkms_command": str(dkms),
                                      "rdma_doca_install": {"changed": doca_changed}})
    assert not [r for r in results["node"] if r.get("failed")], results["node"]
    recorded = tmp_path / "dkms.calls"
    assert ([json.loads(x) for x in recorded.read_text().splitlines()] if recorded.exists() else []) == calls


PLAN_CASES = {
    # host: (family, kernel, overrides, expected gpudirect | error fragment)
    "open-580-noble": ("Ubuntu-24", "6.8.0-49-generic", {"nvidia_driver_branch": "580"}, "dmabuf"),
    "proprietary-535-doca-dkms": ("Ubuntu-22", "5.15.0-125-generic",
                                  {"nvidia_driver_branch": "535", "nvidia_driver_rdma_stack": "doca"}, "peermem"),
    "b200-fabric": ("Ubuntu-24", "6.8.0-49-generic",
                    {"nvidia_driver_branch": "580", "superpod_gpu_model": "b200", "nvidia_driver_fabricmanager": True},
                    "dmabuf"),
    "signed-prebuilt-doca": ("Ubuntu-22", "5.15.0-125-generic",
                             {"nvidia_driver_branch": "535", "nvidia_driver_rdma_stack": "doca",
                              "nvidia_driver_secure_boot": "enabled", "nvidia_driver_secure_boot_signed": True},
                             "needs DKMS-built NVIDIA modules"),
}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpudirect-plan")
    hosts = {}
    for host, (family, kernel, overrides, _) in PLAN_CASES.items():
        major = family.split("-")[1]
        hosts[host] = dict(load(ROOT / "roles/nvidia_driver/vars" / f"{family}.yml"),
                           test_facts={"kernel": kernel, "distribution": "Ubuntu", "distribution_major_version": major,
                                       "os_family": "Debian", "architecture": "x86_64"},
                           **{"nvidia_driver_secure_boot": "disabled", **overrides})
    # the role's one read (on this machine: no NVIDIA GPU, not a container by these facts) and its
    # one check; the decisions are the role's vars (public: the debugs below read them)
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "detect.yml"}},
             {"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "validate.yml", "public": True}},
             {"ansible.builtin.debug": {"msg": "{{ nvidia_driver_gpudirect_effective }}"}},
             {"ansible.builtin.debug": {"msg": "{{ nvidia_driver_fabric_pinned_packages }}"}},
             {"ansible.builtin.debug": {"msg": "{{ nvidia_driver_unpinned_packages }}"}},
             {"ansible.builtin.debug": {"msg": "{{ nvidia_driver_other_kernel_packages }}"}}]
    return run_play(tmp, tasks, hosts)


@pytest.mark.parametrize("host", PLAN_CASES)
def test_gpudirect_choice_follows_modules_kernel_and_rdma_stack(plans, host):
    want = PLAN_CASES[host][3]
    failed = [r for r in plans[host] if r.get("failed")]
    if want in ("dmabuf", "peermem"):
        assert not failed, failed
        assert debug_values(plans[host])[-4] == want
    else:
        assert failed and want in failed[0]["msg"]


# Ubuntu's dependency graph (packages.ubuntu.com, nvidia-graphics-drivers-<branch>[-server]):
# nvidia-headless-<b>[-server][-open] Depends nvidia-dkms-<b>... and nvidia-headless-no-dkms-<b>...
UBUNTU_DEPENDS = {
    "nvidia-headless-{b}-server": ["nvidia-dkms-{b}-server", "nvidia-headless-no-dkms-{b}-server"],
    "nvidia-headless-{b}-server-open": ["nvidia-dkms-{b}-server-open", "nvidia-headless-no-dkms-{b}-server-open"],
}


@pytest.mark.parametrize("host,branch", [("open-580-noble", "580"), ("proprietary-535-doca-dkms", "535")])
def test_other_flavour_removal_spares_what_the_chosen_one_depends_on(plans, host, branch):
    removed = debug_values(plans[host])[-1]
    installed = [p for p in UBUNTU_DEPENDS if p.format(b=branch).endswith("-open") == host.startswith("open")]
    assert len(installed) == 1
    needed = {d.format(b=branch) for d in UBUNTU_DEPENDS[installed[0]]}
    assert removed and not needed & set(removed), removed


def test_b200_fabric_manager_comes_with_nvlsm_and_nscq(plans):
    """NVLink 5 (B200): the fabric manager needs NVLSM; DCGM's NVSwitch telemetry needs NSCQ at
    the fabric manager's version (both from NVIDIA's CUDA repository)."""
    pinned, unpinned = debug_values(plans["b200-fabric"])[-3:-1]
    assert pinned == ["libnvidia-nscq-580"] and "nvlsm" in unpinned
    h100_pinned, h100_unpinned = debug_values(plans["proprietary-535-doca-dkms"])[-3:-1]
    assert h100_pinned == [] and "nvlsm" not in h100_unpinned  # no fabric manager asked for there
