"""filter_plugins/superpod_missing_packages: which of a role's packages a node lacks, from site.yml's
fresh package read. A package wrongly called present would never be installed, so every doubtful
case (no fresh read, a pin at another version, a name it cannot split) must count as missing."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess

import pytest

from tests.role_files import ROOT

_spec = importlib.util.spec_from_file_location("superpod_packages", ROOT / "filter_plugins/superpod_packages.py")
plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plugin)
missing = plugin.superpod_missing_packages


def deb(**versions):
    return {n.replace("_", "-"): [{"name": n, "version": v, "arch": "amd64", "source": "apt"}]
            for n, v in versions.items()}


def rpm(name, version, release, epoch=None):
    return {name: [{"name": name, "version": version, "release": release, "epoch": epoch, "source": "rpm"}]}


def fresh(packages):
    return {"changed": False, "ansible_facts": {"packages": packages}}


INSTALLED = deb(rdma_core="44.0-2", perftest="4.5-1", cuda_toolkit_12_4="12.4.1-1", libc6="1:2.36-9")


def test_unpinned_names_missing_in_order():
    assert missing(["perftest", "ibverbs-utils", "rdma-core", "infiniband-diags"], fresh(INSTALLED)) == \
        ["ibverbs-utils", "infiniband-diags"]
    assert missing(["rdma-core", "perftest"], fresh(INSTALLED)) == []
    assert missing("ibverbs-utils", fresh(INSTALLED)) == ["ibverbs-utils"]


@pytest.mark.parametrize("read", [None, {}, {"failed": True, "msg": "no python3-apt"}, {"skipped": True},
                                  {"ansible_facts": {}}, "not a result"])
def test_without_a_fresh_read_everything_is_missing(read):
    # the role run alone (molecule), a failed read, or a skipped pre_task: the install runs as before
    assert missing(["rdma-core", "perftest"], read) == ["rdma-core", "perftest"]


def test_a_pin_counts_only_at_that_version():
    read = fresh(INSTALLED)
    assert missing(["cuda-toolkit-12-4=12.4.1-1"], read) == []
    assert missing(["cuda-toolkit-12-4=12.4.0-1"], read) == ["cuda-toolkit-12-4=12.4.0-1"]
    assert missing(["cuda-toolkit-12-4=12.4.*"], read) == []          # apt's glob pin
    assert missing(["cuda-toolkit-12-6=12.6.0-1"], read) == ["cuda-toolkit-12-6=12.6.0-1"]
    assert missing(["libc6=1:2.36-9"], read) == []                     # apt's version string has the epoch
    assert missing(["rdma-core="], read) == ["rdma-core="]


def test_dnf_pins_split_where_a_name_is_installed():
    read = fresh(rpm("cuda-toolkit-12-4", "12.4.1", "1") | rpm("nvidia-driver", "570.86.15", "1.el9", epoch="3"))
    assert missing(["cuda-toolkit-12-4-12.4.1-1", "cuda-toolkit-12-4-12.4.1", "nvidia-driver-3:570.86.15-1.el9"],
                   read, separator="-") == []
    assert missing(["cuda-toolkit-12-4-12.4.0-1", "cuda-toolkit-12-6-12.6.0-1"], read, separator="-") == \
        ["cuda-toolkit-12-4-12.4.0-1", "cuda-toolkit-12-6-12.6.0-1"]


def test_a_host_fact_list_is_never_a_fresh_read():
    # the fact cache's list can be an hour old: only a read registered in this run counts
    assert missing(["perftest"], {"packages": deb(perftest="4.5-1")}) == ["perftest"]


def command_read(argv: list[str], stdout: str, rc: int = 0) -> dict:
    """A registered ansible.builtin.command result, as the pre_task registers it."""
    return {"changed": False, "cmd": argv, "rc": rc, "stdout": stdout}


def test_dpkg_query_output_is_parsed_installed_only():
    argv = plugin.superpod_package_query("Debian")
    assert argv[0] == "dpkg-query"
    out = ("ii \trdma-core\t44.0-2\tamd64\n"
           "hi \tnvidia-driver-570\t570.86.15-0ubuntu1\tamd64\n"   # held: installed
           "rc \tperftest\t4.5-1\tamd64\n"                          # removed, config left: not installed
           "ii \tlibc6\t2.36-9\tamd64\nii \tlibc6\t2.36-9\ti386\n")
    installed = plugin.superpod_installed_packages(command_read(argv, out))
    assert set(installed) == {"rdma-core", "nvidia-driver-570", "libc6"}
    assert [e["arch"] for e in installed["libc6"]] == ["amd64", "i386"]
    assert installed["rdma-core"] == [{"name": "rdma-core", "version": "44.0-2", "arch": "amd64", "source": "apt"}]
    assert missing(["rdma-core", "perftest", "nvidia-driver-570=570.86.15-0ubuntu1"], command_read(argv, out)) == \
        ["perftest"]


def test_rpm_query_output_is_parsed_with_epoch_and_release():
    argv = plugin.superpod_package_query("RedHat")
    assert argv[0] == "rpm"
    out = "nvidia-driver\t3\t570.86.15\t1.el9\tx86_64\nrdma-core\t0\t48.0\t1.el9\tx86_64\n"
    read = command_read(argv, out)
    assert plugin.superpod_installed_packages(read)["rdma-core"][0]["epoch"] is None
    assert missing(["nvidia-driver-3:570.86.15-1.el9", "rdma-core-48.0-1.el9", "perftest"], read, separator="-") == \
        ["perftest"]


@pytest.mark.parametrize("read", [command_read(["dpkg-query"], "", rc=1), command_read(["false"], "", rc=1),
                                  {"skipped": True}, {"failed": True, "rc": 0, "stdout": "", "cmd": ["rpm"]}])
def test_a_failed_or_skipped_query_is_no_read(read):
    assert plugin.superpod_installed_packages(read) is None
    assert missing(["rdma-core"], read) == ["rdma-core"]


def test_an_unknown_family_gets_no_query():
    assert plugin.superpod_package_query("Suse") == ["false"]


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg-query (Debian/Ubuntu)")
def test_the_query_reads_this_machine():
    # the real dpkg-query (this test machine is Debian), with the pre_task's exact argv
    argv = plugin.superpod_package_query("Debian")
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    installed = plugin.superpod_installed_packages(command_read(argv, proc.stdout))
    assert "dpkg" in installed and installed["dpkg"][0]["version"]
    assert missing(["dpkg", "surely-not-a-package-here"], command_read(argv, proc.stdout)) == \
        ["surely-not-a-package-here"]
