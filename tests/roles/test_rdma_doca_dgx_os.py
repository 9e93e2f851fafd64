"""DOCA on DGX OS (issue 34): DGX OS brings DOCA-OFED from its own DGX repository, so rdma adds no
linux.mellanox.com source there (and removes the one an earlier run added); elsewhere it adds it.
DGX OS is detected from /etc/dgx-release through nvidia_repo's dgx_os.yml (the one detection).

Run by ansible-playbook: rdma's own packages-doca.yml on Ubuntu 24.04 stand-in facts, with the
package and repository modules swapped for a recorder (same arguments)."""

from __future__ import annotations

import copy

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import run_play

ROLE = ROOT / "roles/rdma"
UBUNTU24 = {"os_family": "Debian", "distribution": "Ubuntu", "distribution_major_version": "24",
            "architecture": "x86_64", "kernel": "6.8.0-49-generic"}
# /etc/dgx-release as DGX OS writes it (keys as in tests/roles/test_host_tuning_acs.py)
DGX_RELEASE = ('DGX_NAME="DGX Server"\nDGX_PRETTY_NAME="NVIDIA DGX Server"\n'
               'DGX_SWBUILD_DATE="2025-05-08-08-05-57"\nDGX_SWBUILD_VERSION="7.1.0"\n'
               'DGX_PLATFORM="DGX Server for DGX H100"\nDGX_SERIAL_NUMBER="1234567890"\n')
MODULES = ("ansible.builtin.apt", "ansible.builtin.deb822_repository", "ansible.builtin.yum_repository",
           "ansible.builtin.package")
RECORDER = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"module": {"type": "str"}, "args": {"type": "dict"}}, supports_check_mode=True)
module.exit_json(changed=True, recorded=module.params)
"""


def _tasks() -> list[dict]:
    out = []
    for task in load(ROLE / "tasks/packages-doca.yml"):
        task = copy.deepcopy(task)
        module = next((m for m in MODULES if m in task), None)
        if module:
            task["recorded"] = {"module": module, "args": task.pop(module)}
        out.append(task)
    return out


def _run(tmp_path, release: str | None) -> list[dict]:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "recorded.py").write_text(RECORDER)
    release_file = tmp_path / "dgx-release"
    if release is not None:
        release_file.write_text(release)
    host = {"test_facts": UBUNTU24, **load(ROLE / "defaults/main.yml"), **load(ROLE / "vars/main.yml"),
            **load(ROLE / "vars/Ubuntu-24.yml"),
            "rdma_rebuild_nvidia_dkms": False}
    results = run_play(tmp_path, _tasks(), {"node": host},
                       extra_vars={"nvidia_repo_dgx_release_file": str(release_file)})["node"]
    assert not [r for r in results if r.get("failed")], [r for r in results if r.get("failed")]
    return results


def _doca_sources(results) -> list[dict]:
    return [r["recorded"]["args"] for r in results
            if not r.get("skipped") and r.get("recorded", {}).get("module") == "ansible.builtin.deb822_repository"]


@pytest.mark.timeout(120)
def test_dgx_os_gets_no_mellanox_source(tmp_path):
    results = _run(tmp_path, DGX_RELEASE)
    sources = _doca_sources(results)
    assert sources and all(s["state"] == "absent" for s in sources), sources
    installs = [r["recorded"]["args"] for r in results
                if r.get("recorded", {}).get("module") == "ansible.builtin.package" and not r.get("skipped")]
    assert installs and installs[0]["name"][0] == "doca-ofed"  # from DGX OS's repositories


@pytest.mark.timeout(120)
def test_plain_ubuntu_gets_the_doca_source(tmp_path):
    sources = _doca_sources(_run(tmp_path, None))
    assert [s["state"] for s in sources] == ["present"]
    assert sources[0]["uris"][0].startswith("https://linux.mellanox.com/public/repo/doca/")
