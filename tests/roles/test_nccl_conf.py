"""The nccl role's validation, settings and nccl.conf template, run by ansible-playbook on
local "hosts" (one per case, in a single run): good inventories give the exact file, bad
input fails with a message naming the variable. Nothing is written outside tmp_path."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ANSIBLE_STRATEGY_LINES
from tests.roles.playbook import assert_refused

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"

LAB_RAILS = [  # su01-node01 of the lab plan: DGX H100 numbering, mlx5_1/mlx5_7 are storage
    {"rail": r, "gpu": r, "hca": hca, "netdev": f"enp{r}np0", "numa": r // 4}
    for r, hca in enumerate(["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"])
]
BASE = {"superpod_fabric_kind": "roce", "superpod_inband_interface": "bond0", "rails": LAB_RAILS}

CASES = {
    # name: (host vars over BASE, expected lines | expected error fragment)
    "lab_defaults": ({}, ["NCCL_IB_HCA==mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11",
                          "NCCL_SOCKET_IFNAME==bond0", "NCCL_IB_TC=106"]),
    "infiniband_unordered_with_options": (
        {"superpod_fabric_kind": "infiniband", "rails": [LAB_RAILS[1], LAB_RAILS[0]],
         "nccl_ib_hca_port": 1, "nccl_ib_gid_index": 3, "nccl_net_gdr_level": "PHB",
         "nccl_ib_qps_per_connection": 2, "nccl_extra_options": {"NCCL_IB_SL": 1, "NCCL_DEBUG": "WARN"}},
        ["NCCL_IB_HCA==mlx5_0:1,mlx5_3:1", "NCCL_SOCKET_IFNAME==bond0", "NCCL_IB_GID_INDEX=3",
         "NCCL_NET_GDR_LEVEL=PHB", "NCCL_IB_QPS_PER_CONNECTION=2", "NCCL_DEBUG=WARN", "NCCL_IB_SL=1"]),
    "prefix_match_fixed_tc_no_rails": (
        {"rails": [], "nccl_ib_hca_exact_match": False, "nccl_socket_ifname_exact_match": False,
         "nccl_ib_tc": 104},
        ["NCCL_SOCKET_IFNAME=bond0", "NCCL_IB_TC=104"]),
    "explicit_hcas_no_tc": ({"nccl_ib_hcas": ["mlx5_4", "mlx5_0"], "nccl_ib_tc": None},
                            ["NCCL_IB_HCA==mlx5_4,mlx5_0", "NCCL_SOCKET_IFNAME==bond0"]),
    "bad_hca_name": ({"rails": [dict(LAB_RAILS[0], hca="mlx5_0,mlx5_1")]}, "rails[].hca"),
    "duplicate_rail": ({"rails": [LAB_RAILS[0], dict(LAB_RAILS[1], rail=0)]}, "unique rail indices"),
    "no_inband_interface": ({"superpod_inband_interface": ""}, "nccl_socket_ifname"),
    "gid_out_of_range": ({"nccl_ib_gid_index": 300}, "nccl_ib_gid_index (300) must be null or 0-255"),
    "bad_gdr_level": ({"nccl_net_gdr_level": "NVL"}, "nccl_net_gdr_level"),
    "bad_tc": ({"nccl_ib_tc": "high"}, "nccl_ib_tc (high)"),
    "zero_qps": ({"nccl_ib_qps_per_connection": 0}, "nccl_ib_qps_per_connection (0) null or 1-128"),
    "extra_overrides_managed_key": ({"nccl_extra_options": {"NCCL_IB_HCA": "mlx5"}}, "not one the role manages"),
    "extra_not_nccl": ({"nccl_extra_options": {"CUDA_VISIBLE_DEVICES": "0"}}, "keys must be NCCL_"),
    "extra_multiline": ({"nccl_extra_options": {"NCCL_DEBUG": "WARN\nNCCL_IB_HCA=x"}}, "values on one line"),
    # two groups of rules broken at once: the one check names both (expected fragments as a tuple)
    "gid_and_extra_both_bad": ({"nccl_ib_gid_index": 300, "nccl_extra_options": {"CUDA_VISIBLE_DEVICES": "0"}},
                               ("nccl_ib_gid_index (300) must be null or 0-255", "keys must be NCCL_")),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nccl")
    hosts = {name: dict(BASE, **overrides, ansible_connection="local",
                        ansible_python_interpreter=sys.executable, out=str(tmp / f"{name}.conf"))
             for name, (overrides, _) in CASES.items()}
    (tmp / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False,
        "tasks": [
            # public: the role's vars (nccl_settings, vars/main.yml) for the templates below
            {"ansible.builtin.include_role": {"name": "nccl", "tasks_from": "validate.yml", "public": True}},
            {"ansible.builtin.template": {"src": str(ROOT / "roles/nccl/templates/nccl.conf.j2"),
                                          "dest": "{{ out }}", "mode": "0644"}},
            {"ansible.builtin.template": {"src": str(ROOT / "roles/nccl/templates/nccl.env.j2"),
                                          "dest": "{{ out }}.env", "mode": "0644"}},
        ],
    }]))
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\n{ANSIBLE_STRATEGY_LINES}")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="16")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(tmp / "inventory.yml"), str(tmp / "play.yml")],
                          capture_output=True, text=True, env=env, check=False)
    out = json.loads(proc.stdout)
    failures = {}
    for play in out["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if res.get("failed"):
                    failures[host] = res.get("msg", "")
    return tmp, failures


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, list)])
def test_good_inventory_gives_exact_file(results, case):
    tmp, failures = results
    assert case not in failures, failures.get(case)
    text = (tmp / f"{case}.conf").read_text()
    assert text.startswith("# ")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert lines == CASES[case][1]


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, str)])
def test_bad_input_fails_naming_the_variable(results, case):
    tmp, failures = results
    assert case in failures, f"{case} was accepted"
    assert CASES[case][1] in failures[case]
    assert not (tmp / f"{case}.conf").exists()


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, tuple)])
def test_bad_input_names_every_rule_it_breaks(results, case):
    """The checks are one task (one host-task per node): its message names each broken group of rules."""
    tmp, failures = results
    assert_refused(failures, case, CASES[case][1], tmp / f"{case}.conf")


def test_families_are_not_copies():
    # the conventions every role keeps are in test_role_conventions.py; RHEL names its packages
    # differently, so its family file must not be a copy of Debian's
    base = ROOT / "roles/nccl/vars"
    debian, rhel = (yaml.safe_load((base / f"{f}.yml").read_text()) for f in ("Debian", "RedHat-9"))
    assert debian["nccl_family_build_packages"] != rhel["nccl_family_build_packages"]


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, list)])
def test_containers_get_the_same_settings_as_an_env_file(results, case):
    """Containers do not see the host's /etc/nccl.conf: the env file (Enroot environ.d,
    --env-file) carries the same KEY=VALUE lines, and the role writes it by default."""
    tmp, _ = results
    lines = [ln for ln in (tmp / f"{case}.conf.env").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == CASES[case][1]
    defaults = yaml.safe_load((ROOT / "roles/nccl/defaults/main.yml").read_text())
    assert "/etc/enroot/environ.d/50-superpod-nccl.env" in defaults["nccl_env_files"]


def test_nccl_tests_build_installs_nccl_first():
    """nccl-tests links against NCCL: the build installs libnccl (+ headers) from NVIDIA's
    repository and checks nccl.h before make, per family with the real package names."""
    tasks = yaml.safe_load((ROOT / "roles/nccl/tasks/nccl_tests.yml").read_text())
    names = [t["name"] for t in tasks]
    build = names.index("Build nccl-tests (make reports a change only when something was rebuilt)")
    assert names.index("Install NCCL (library and headers)") < build
    assert names.index("Fail clearly without NCCL") < build
    pkgs = {f: yaml.safe_load((ROOT / f"roles/nccl/vars/{f}.yml").read_text())["nccl_family_library_packages"]
            for f in ("Debian", "Ubuntu-22", "Ubuntu-24", "RedHat-9")}
    assert pkgs["Ubuntu-24"] == ["libnccl2", "libnccl-dev"] and pkgs["RedHat-9"] == ["libnccl", "libnccl-devel"]
