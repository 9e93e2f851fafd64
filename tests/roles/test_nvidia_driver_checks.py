"""nvidia_driver's one check stops a bad request with a message that names the variable and each
rule that failed, and only those (validate.yml: one assert, after the role's one read (detect.yml),
for the version/branch request, the GPU model's constraints (vars/main.yml's
nvidia_driver_gpu_model_rules being the plan), the GPUDirect RDMA choice and Secure Boot without a
signed path), and a version the repositories lack is still reported, not failed, under --check
(packages-apt.yml: the refresh, the re-read and the fail/report are one include; apt-cache itself
answers, from an APT_CONFIG of the test's own with no source)."""

from __future__ import annotations

import shutil

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

ROLE = ROOT / "roles/nvidia_driver"
RULES = load(ROLE / "vars/main.yml")["nvidia_driver_gpu_model_rules"]
REQUEST = "set nvidia_driver_branch (three digits"
MODEL = "GPU model {model} needs branch >= {branch} and {modules} kernel modules"
GPUDIRECT = "nvidia_driver_gpudirect_rdma=dmabuf: DMA-BUF needs open kernel modules"
SECURE_BOOT = "Secure Boot is enabled on"
# A Debian 12 node (its family vars as host vars, as include_vars gives them) on a 6.1 kernel
DEBIAN = {"test_facts": {"kernel": "6.1.0-28-amd64", "distribution": "Debian", "distribution_major_version": "12",
                         "os_family": "Debian", "distribution_version": "12.8"},
          "nvidia_driver_secure_boot": "disabled", **load(ROLE / "vars/Debian.yml")}

# host -> (its request, the rules whose message it must get)
CASES = {
    "bad-branch": ({"nvidia_driver_branch": "5350", "nvidia_driver_version": ""}, ["request"]),
    "bad-version": ({"nvidia_driver_branch": "", "nvidia_driver_version": "535.x"}, ["request"]),
    "b200-too-old": ({"nvidia_driver_branch": "535", "superpod_gpu_model": "b200"}, ["model"]),
    "b200-proprietary": ({"nvidia_driver_branch": "580", "superpod_gpu_model": "b200",
                          "nvidia_driver_kernel_modules": "proprietary"}, ["model"]),
    "both": ({"nvidia_driver_branch": "53", "nvidia_driver_version": "", "superpod_gpu_model": "b200"},
             ["request", "model"]),
    "b200-fine": ({"nvidia_driver_branch": "580", "superpod_gpu_model": "b200"}, []),
    "dmabuf-proprietary": ({"nvidia_driver_branch": "535", "nvidia_driver_gpudirect_rdma": "dmabuf",
                            "nvidia_driver_kernel_modules": "proprietary"}, ["gpudirect"]),
    # Secure Boot on without a signed path was a fail of its own after the checks: now the one
    # assert names it with the request's and the model's broken rules
    "all-and-secure-boot": ({"nvidia_driver_branch": "53", "nvidia_driver_version": "", "superpod_gpu_model": "b200",
                             "nvidia_driver_secure_boot": "enabled"}, ["request", "model", "secure_boot"]),
    "secure-boot-signed": ({"nvidia_driver_branch": "580", "nvidia_driver_secure_boot": "enabled",
                            "nvidia_driver_secure_boot_signed": True,
                            "nvidia_driver_secure_boot_mok_cert": "/nonexistent/mok.pub"}, []),
}


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "detect.yml"}},
             {"ansible.builtin.include_role": {"name": "nvidia_driver", "tasks_from": "validate.yml"}}]
    hosts = {host: dict(DEBIAN, **req) for host, (req, _) in CASES.items()}
    return run_play(tmp_path_factory.mktemp("validate"), tasks, hosts)


@pytest.mark.parametrize("host", CASES)
def test_a_bad_request_names_the_rules_it_breaks(validated, host):
    request, broken = CASES[host]
    failed = [r for r in validated[host] if r.get("failed")]
    if not broken:
        assert not failed, failed
        return
    [result] = failed
    model = request.get("superpod_gpu_model", "")
    rule = RULES.get(model, {})
    model_msg = MODEL.format(model=model, branch=rule.get("min_branch"), modules=rule.get("kernel_modules"))
    assert (REQUEST in result["msg"]) == ("request" in broken), result["msg"]
    assert (model_msg in result["msg"]) == ("model" in broken), result["msg"]
    assert (GPUDIRECT in result["msg"]) == ("gpudirect" in broken), result["msg"]
    assert (SECURE_BOOT in result["msg"]) == ("secure_boot" in broken), result["msg"]
    if "request" in broken:
        assert f"Got branch='{request['nvidia_driver_branch']}'" in result["msg"]
    if "secure_boot" in broken:  # the way out, for this family (Debian: DKMS and the MOK key pair)
        assert "nvidia_driver_secure_boot_signed: true" in result["msg"] and "mokutil --import" in result["msg"]


@pytest.mark.skipif(not shutil.which("apt-cache"), reason="apt (the judge) not installed")
@pytest.mark.timeout(120)
def test_an_unresolved_version_is_reported_under_check(tmp_path, monkeypatch):
    apt = tmp_path / "apt"
    for d in ("state/lists/partial", "cache/archives/partial", "preferences.d", "apt.conf.d"):
        (apt / d).mkdir(parents=True)
    (apt / "state/status").write_text("")
    (apt / "sources.list").write_text("")
    (apt / "apt.conf").write_text(
        f'Dir::State "{apt}/state";\nDir::State::status "{apt}/state/status";\nDir::Cache "{apt}/cache";\n'
        f'Dir::Etc::sourcelist "{apt}/sources.list";\nDir::Etc::sourceparts "{apt}/none";\n'
        f'Dir::Etc::parts "{apt}/apt.conf.d";\nAPT::Architecture "amd64";\nDebug::NoLocking "true";\n')
    monkeypatch.setenv("APT_CONFIG", str(apt / "apt.conf"))
    # the read as the role runs it (include_role: its vars resolve the versions), then the one
    # folded include as packages-apt.yml carries it (its when)
    include = "ansible.builtin.include_tasks"
    [folded] = [dict(t, **{include: str(ROLE / "tasks" / t[include])})
                for t in load(ROLE / "tasks/packages-apt.yml") if t.get(include) == "resolve-again-apt.yml"]
    given = {"nvidia_driver_version_probe": "nvidia-kernel-dkms",
             "nvidia_driver_fm_package": "nvidia-fabricmanager-535", "nvidia_driver_fabricmanager": False,
             "nvidia_driver_version": "535.309.01", "nvidia_driver_branch_effective": "535",
             "nvidia_driver_branch_latest": False, "nvidia_driver_packages": {},
             "nvidia_driver_repo_distro": {"changed": False}}
    (tmp_path / "play").mkdir()
    read = {"name": "nvidia_driver", "tasks_from": "resolve-apt.yml", "public": True}
    tasks = [{"ansible.builtin.include_role": read}, folded]
    results = run_play(tmp_path / "play", tasks, {"node": {}}, given, check=True)["node"]
    assert not [r for r in results if r.get("failed")], [r.get("msg") for r in results if r.get("failed")]
    reported = [r for r in results if "msg" in r and not r.get("skipped") and "check mode" in str(r["msg"])]
    assert [r["msg"] for r in reported] == [
        "nvidia_driver: no version of nvidia-kernel-dkms matches version 535.309.01; available: []"
        " (check mode: a repository this run would add is not in the cache yet)"], results
    assert reported[0]["changed"]
