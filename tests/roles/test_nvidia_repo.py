"""NVIDIA's CUDA repository has one owner (role nvidia_repo). Three roles used to add the same
URL with three different Signed-By keyrings, and apt then refuses every source
(NVIDIA/cuda-repo-management#4), also on nodes that already had cuda-keyring's source. The role
runs here by ansible-playbook against source directories under tmp_path."""

import re

import pytest

from tests.role_files import FAMILIES, ROOT, load
from tests.roles.playbook import run_play

CUDA_URL = re.compile(r"developer\.download\.nvidia\.com/compute/cuda/repos")


def test_only_nvidia_repo_names_nvidia_cuda_repository():
    """No other role carries the URL or writes an apt/yum source for it."""
    offenders = []
    for path in sorted((ROOT / "roles").rglob("*")):
        rel = path.relative_to(ROOT / "roles")
        if not path.is_file() or rel.parts[0] == "nvidia_repo" or "molecule" in rel.parts:
            continue
        text = path.read_text(errors="replace")
        if CUDA_URL.search(text):
            offenders.append(str(rel))
    assert offenders == []


@pytest.mark.parametrize("family,distro", [("Debian", "debian12"), ("Ubuntu-22", "ubuntu2204"),
                                           ("Ubuntu-24", "ubuntu2404"), ("RedHat-9", "rhel9")])
def test_family_distro_directories(family, distro):
    data = load(ROOT / "roles/nvidia_repo/vars" / f"{family}.yml")
    assert data["nvidia_repo_family_distro"] == distro
    assert data["nvidia_repo_family_kind"] == ("yum" if family == "RedHat-9" else "apt")
    assert set(FAMILIES) == {p.stem for p in (ROOT / "roles/nvidia_repo/vars").glob("*.yml")} - {"main"}


def facts(distribution: str, major: str, arch: str = "x86_64") -> dict:
    return {"distribution": distribution, "distribution_major_version": major,
            "os_family": "RedHat" if distribution == "RedHat" else "Debian", "architecture": arch}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nvidia-repo")
    key = tmp / "key.asc"
    key.write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\nstand-in\n-----END PGP PUBLIC KEY BLOCK-----\n")
    hosts = {
        "fresh-ubuntu": {"test_facts": facts("Ubuntu", "24")},
        "grace-ubuntu": {"test_facts": facts("Ubuntu", "22", "aarch64")},
        "keyring-debian": {"test_facts": facts("Debian", "12")},
        "debian13": {"test_facts": facts("Debian", "13")},
        "mirror-rhel": {"test_facts": facts("RedHat", "9"), "nvidia_repo_cuda_url": "http://mirror.example/cuda/rhel9"},
        # a mirror given with its trailing slash (as molecule's stand-in is) must not become "//"
        "mirror-ubuntu": {"test_facts": facts("Ubuntu", "24"), "nvidia_repo_cuda_url": "file:///srv/mirror/cuda/"},
        # DGX OS 7: /etc/dgx-release, DGX OS's own repository sources, and a source this role
        # wrote before DGX OS was recognised
        # (a site that turned source reuse off still gets no second source on DGX OS)
        "dgx-os": {"test_facts": facts("Ubuntu", "24"), "nvidia_repo_reuse_existing": False},
    }
    for host in hosts:
        (tmp / host / "apt/sources.list.d").mkdir(parents=True)
        (tmp / host / "yum").mkdir()
    # What the old roles left: cuda_toolkit's and dcgm_exporter's sources for the same URL.
    legacy = tmp / "keyring-debian/apt/sources.list.d"
    for name in ("superpod-cuda", "superpod-nvidia-dcgm"):
        (legacy / f"{name}.sources").write_text(
            "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/\n"
            f"Suites: /\nSigned-By: /etc/apt/keyrings/{name}.asc\n")
    # cuda-keyring's own source (the package NVIDIA documents; DGX OS ships an equivalent).
    (legacy / "cuda-debian12-x86_64.list").write_text(
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n")
    dgx = tmp / "dgx-os"
    (dgx / "dgx-release").write_text('DGX_NAME="DGX Server"\nDGX_PRETTY_NAME="NVIDIA DGX Server"\n'
                                     'DGX_SWBUILD_VERSION="7.2.1"\nDGX_SERIAL_NUMBER="1234567890"\n')
    (dgx / "apt/sources.list.d/cuda-compute-repo.list").write_text(DGX_CUDA_SOURCE)
    (dgx / "apt/sources.list.d/superpod-nvidia-cuda.sources").write_text(
        "Types: deb\nURIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/\n"
        "Suites: /\nSigned-By: /etc/apt/keyrings/superpod-nvidia-cuda.asc\n")
    extra = {"nvidia_repo_apt_dir": f"{tmp}/{{{{ inventory_hostname }}}}/apt",
             "nvidia_repo_dgx_release_file": f"{tmp}/{{{{ inventory_hostname }}}}/dgx-release",
             "nvidia_repo_keyring_dir": f"{tmp}/{{{{ inventory_hostname }}}}/keyrings",
             "nvidia_repo_yum_dir": f"{tmp}/{{{{ inventory_hostname }}}}/yum",
             "nvidia_repo_cuda_key": f"file://{key}", "nvidia_repo_refresh_cache": False}
    tasks = [{"ansible.builtin.include_role": {"name": "nvidia_repo"}},
             {"ansible.builtin.include_role": {"name": "nvidia_repo"}},  # a second consumer: no change
             {"name": "DGX OS", "ansible.builtin.debug": {"msg": "{{ nvidia_repo_dgx_os | default('unset') }}"}}]
    return tmp, run_play(tmp, tasks, hosts, extra)


# A stand-in for the source DGX OS's cuda-compute-repo package keeps (its exact file is not
# published; what matters is that it is DGX OS's, not this role's).
DGX_CUDA_SOURCE = ("deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] "
                   "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/ /\n")


def test_dgx_os_keeps_its_own_repositories(runs):
    """On DGX OS the role adds no source (and no key), whatever nvidia_repo_reuse_existing says,
    and takes back the one it wrote before; DGX OS's files are left as they are. (Before: a second
    source with another Signed-By, and apt refuses every source.)"""
    tmp, results = runs
    res = results["dgx-os"]
    assert not [r for r in res if r.get("failed")], res
    left = sorted(p.name for p in (tmp / "dgx-os/apt/sources.list.d").iterdir())
    assert left == ["cuda-compute-repo.list"]
    assert (tmp / "dgx-os/apt/sources.list.d/cuda-compute-repo.list").read_text() == DGX_CUDA_SOURCE
    assert not (tmp / "dgx-os/keyrings").exists()
    [dgx] = [r["msg"] for r in res if r["task"] == "DGX OS"]
    assert dgx == {"dgx_name": "DGX Server", "dgx_pretty_name": "NVIDIA DGX Server", "dgx_swbuild_version": "7.2.1"}
    assert sum(1 for r in res if r.get("changed")) == 1  # the old source removed, once
    [plain] = [r["msg"] for r in results["fresh-ubuntu"] if r["task"] == "DGX OS"]
    assert plain == {}


def test_fresh_node_gets_one_source_with_one_keyring(runs):
    tmp, results = runs
    assert not [r for r in results["fresh-ubuntu"] if r.get("failed")]
    sources = tmp / "fresh-ubuntu/apt/sources.list.d/superpod-nvidia-cuda.sources"
    assert sources.read_text().splitlines()[1:] == [
        "Types: deb", "URIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/",
        "Suites: /", f"Signed-By: {tmp}/fresh-ubuntu/keyrings/superpod-nvidia-cuda.asc"]
    assert (tmp / "fresh-ubuntu/keyrings/superpod-nvidia-cuda.asc").read_text().startswith("-----BEGIN PGP")
    assert sum(1 for r in results["fresh-ubuntu"] if r.get("changed")) == 3  # dir, key, source: first run only


def test_grace_uses_the_sbsa_repository(runs):
    tmp, _ = runs
    text = (tmp / "grace-ubuntu/apt/sources.list.d/superpod-nvidia-cuda.sources").read_text()
    assert "URIs: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/sbsa/" in text


def test_existing_cuda_keyring_source_is_reused_and_old_duplicates_removed(runs):
    tmp, results = runs
    assert not [r for r in results["keyring-debian"] if r.get("failed")]
    left = sorted(p.name for p in (tmp / "keyring-debian/apt/sources.list.d").iterdir())
    assert left == ["cuda-debian12-x86_64.list"]
    assert not (tmp / "keyring-debian/keyrings/superpod-nvidia-cuda.asc").exists()


def test_rhel_mirror_is_one_repo_file(runs):
    tmp, results = runs
    assert not [r for r in results["mirror-rhel"] if r.get("failed")], results["mirror-rhel"]
    text = (tmp / "mirror-rhel/yum/superpod-nvidia-cuda.repo").read_text()
    assert "baseurl = http://mirror.example/cuda/rhel9/" in text
    assert "gpgcheck = 1" in text


def test_a_mirror_url_keeps_one_trailing_slash(runs):
    tmp, results = runs
    assert not [r for r in results["mirror-ubuntu"] if r.get("failed")]
    text = (tmp / "mirror-ubuntu/apt/sources.list.d/superpod-nvidia-cuda.sources").read_text()
    assert "URIs: file:///srv/mirror/cuda/\n" in text


def test_unsupported_release_fails_instead_of_loading_debian_12(runs):
    tmp, results = runs
    failed = [r for r in results["debian13"] if r.get("failed")]
    assert failed and "No file was found" in failed[0]["msg"]
    assert not list((tmp / "debian13/apt/sources.list.d").iterdir())
