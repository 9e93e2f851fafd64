"""Ubuntu (issue 34): the fabric manager comes from the driver's own source. Ubuntu's archive packs
Canonical's -server driver and nvidia-fabricmanager-<branch> as "-0ubuntu..."; NVIDIA's CUDA
repository (added for the fabric manager, NSCQ and NVLSM) packs the same upstream version as
"-1", which sorts above it: the role took the CUDA repository's fabric manager next to
Canonical's driver.

Judged by apt itself: two local flat repositories (Ubuntu's archive and NVIDIA's CUDA repository,
hand-written Packages indexes) behind an APT_CONFIG of their own; the role's resolve-apt.yml
runs the real `apt-cache show` on them (vars/main.yml resolves from its output), its
apt-preferences.j2 is rendered with what it chose, and
`apt-get -s install` says which versions apt would install under that pin."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.role_files import ROOT, load
from tests.roles.playbook import debug_values, run_play

ROLE = ROOT / "roles/nvidia_driver"
pytestmark = pytest.mark.skipif(not shutil.which("apt-get"), reason="apt (the judge) not installed")

DRIVER = "nvidia-headless-580-server"
FM = "nvidia-fabricmanager-580"
# what each source carries (packages.ubuntu.com's noble-updates and NVIDIA's CUDA repository style)
UBUNTU = {DRIVER: ["580.82.07-0ubuntu0.24.04.1", "580.95.05-0ubuntu0.24.04.2"],
          FM: ["580.82.07-0ubuntu0.24.04.1", "580.95.05-0ubuntu0.24.04.1"]}
CUDA = {DRIVER: [], FM: ["580.82.07-1", "580.95.05-1", "580.105.08-1"]}
# Debian 12 / DGX-less nodes taking the driver from NVIDIA's repository: there "-1" is right
CUDA_WITH_DRIVER = {DRIVER: ["580.95.05-1"], FM: ["580.95.05-1", "580.105.08-1"]}


def _archive(root: Path, repos: dict[str, dict[str, list[str]]]) -> dict:
    """Flat repositories under root and an APT_CONFIG that reads only them."""
    sources = []
    for name, packages in repos.items():
        (root / name).mkdir(parents=True)
        stanzas = [f"Package: {pkg}\nVersion: {v}\nArchitecture: amd64\nMaintainer: test <t@example.net>\n"
                   f"Filename: pool/{pkg}_{v}_amd64.deb\nSize: 1\nSHA256: {'0' * 64}\nDescription: test\n"
                   for pkg, versions in packages.items() for v in versions]
        (root / name / "Packages").write_text("\n".join(stanzas))
        sources.append(f"deb [trusted=yes] file:{root / name} ./\n")
    for d in ("state/lists/partial", "cache/archives/partial", "preferences.d", "apt.conf.d"):
        (root / d).mkdir(parents=True)
    (root / "state/status").write_text("")
    (root / "sources.list").write_text("".join(sources))
    conf = root / "apt.conf"
    conf.write_text(f'Dir::State "{root}/state";\nDir::State::status "{root}/state/status";\n'
                    f'Dir::Cache "{root}/cache";\nDir::Etc::sourcelist "{root}/sources.list";\n'
                    f'Dir::Etc::sourceparts "{root}/none";\nDir::Etc::preferences "{root}/preferences";\n'
                    f'Dir::Etc::preferencesparts "{root}/preferences.d";\nDir::Etc::parts "{root}/apt.conf.d";\n'
                    'APT::Architecture "amd64";\nDebug::NoLocking "true";\n')
    env = {"APT_CONFIG": str(conf)}
    subprocess.run(["apt-get", "update", "-qq"], env=env | {"PATH": "/usr/bin:/bin"}, check=True,
                   capture_output=True)
    return env


def _resolve_and_pin(tmp_path: Path, monkeypatch, repos) -> tuple[dict, dict]:
    """(what resolve-apt.yml's read resolved to, what `apt-get -s install` installs under the rendered pin)."""
    env = _archive(tmp_path / "apt", repos)
    monkeypatch.setenv("APT_CONFIG", env["APT_CONFIG"])
    family = load(ROLE / "vars/Ubuntu-24.yml")
    # the read is resolve-apt.yml's, the choice vars/main.yml's (the role's vars: include_role);
    # the package names come as extra vars, above the role's own derivation of them
    given = {"nvidia_driver_version_probe": DRIVER, "nvidia_driver_fm_package": FM, "nvidia_driver_fabricmanager": True,
             "nvidia_driver_version": "", "nvidia_driver_branch_effective": "580", "nvidia_driver_branch_latest": False,
             "nvidia_driver_packages": {}, "nvidia_driver_family_pin_globs": family["nvidia_driver_family_pin_globs"],
             "ansible_managed": "test"}
    read = {"name": "nvidia_driver", "tasks_from": "resolve-apt.yml", "public": True}
    tasks = [{"ansible.builtin.include_role": read},
             {"name": "Chosen", "ansible.builtin.debug": {"msg": {
                 "driver": "{{ nvidia_driver_resolved_version }}",
                 "fm": "{{ nvidia_driver_fabricmanager_resolved_version }}",
                 "pin": "{{ lookup('ansible.builtin.template', '%s') }}" % (ROLE / "templates/apt-preferences.j2")}}}]
    results = run_play(tmp_path / "play", tasks, {"ubuntu": {}}, given)["ubuntu"]
    assert not [r for r in results if r.get("failed")], results
    chosen = debug_values(results)[-1]
    (tmp_path / "apt/preferences").write_text(chosen["pin"])
    sim = subprocess.run(["apt-get", "-s", "install", DRIVER, FM], env=env | {"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    installs = dict(re.findall(r"^Inst (\S+) \((\S+) ", sim, re.M))
    return chosen, installs


@pytest.fixture
def play_dir(tmp_path):
    (tmp_path / "play").mkdir()
    return tmp_path


@pytest.mark.timeout(120)
def test_canonical_driver_gets_ubuntus_fabric_manager(play_dir, monkeypatch):
    chosen, installs = _resolve_and_pin(play_dir, monkeypatch, {"ubuntu": UBUNTU, "cuda": CUDA})
    newest_driver = UBUNTU[DRIVER][-1]
    same_source_fm = next(v for v in UBUNTU[FM] if v.split("-")[0] == newest_driver.split("-")[0])
    assert chosen["driver"] == newest_driver
    assert chosen["fm"] == same_source_fm, chosen
    # apt, under the rendered pin, installs exactly those (not the CUDA repository's "-1")
    assert installs == {DRIVER: newest_driver, FM: same_source_fm}, installs


@pytest.mark.timeout(120)
def test_driver_from_nvidias_repository_keeps_nvidias_fabric_manager(play_dir, monkeypatch):
    chosen, installs = _resolve_and_pin(play_dir, monkeypatch, {"ubuntu": UBUNTU, "cuda": CUDA_WITH_DRIVER})
    # the newest 580 driver on offer is now NVIDIA's -1 (it sorts above -0ubuntu): its FM is NVIDIA's too
    assert chosen["driver"] == "580.95.05-1" and chosen["fm"] == "580.95.05-1", chosen
    assert installs == {DRIVER: "580.95.05-1", FM: "580.95.05-1"}, installs


@pytest.mark.timeout(120)
def test_debian_driver_takes_nvidias_fabric_manager(play_dir, monkeypatch):
    """Debian ships no fabric manager: its driver ("~deb12u1") goes with NVIDIA's, the only one."""
    debian = {DRIVER: ["580.95.05-1~deb12u1"], FM: []}
    chosen, installs = _resolve_and_pin(play_dir, monkeypatch, {"debian": debian, "cuda": CUDA})
    assert chosen["driver"] == "580.95.05-1~deb12u1" and chosen["fm"] == "580.95.05-1", chosen
    assert installs == {DRIVER: "580.95.05-1~deb12u1", FM: "580.95.05-1"}, installs
