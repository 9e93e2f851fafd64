"""filter_plugins/superpod_missing_packages: which of a role's packages a node lacks, from site.yml's
fresh package read. A package wrongly called present would never be installed, so every doubtful
case (no fresh read, a pin at another version, a name it cannot split) must count as missing."""

from __future__ import annotations

import importlib.util

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


def test_the_hosts_current_list_wins_over_the_first_read():
    # a role read the packages again after removing or installing some: that list is the node now
    first = fresh(deb(rdma_core="44.0-2", perftest="4.5-1"))
    now = {"packages": deb(rdma_core="44.0-2", ibverbs_utils="44.0-2")}
    assert missing(["perftest", "ibverbs-utils"], first, now) == ["perftest"]
    assert missing(["perftest", "ibverbs-utils"], first, {"distribution": "Debian"}) == ["ibverbs-utils"]
    # the host's (possibly hour-old, cached) list alone is not a fresh read
    assert missing(["perftest"], None, now) == ["perftest"]
