"""The roce_qos role's input checks and config template, run by ansible-playbook on local
"hosts" (one per case, in a single run): the rendered JSON is what the apply script reads,
and bad input fails with a message naming the variable and the rule."""

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

RAILS = [{"rail": 1, "gpu": 1, "hca": "mlx5_3", "netdev": "enp64s0np0"},
         {"rail": 0, "gpu": 0, "hca": "mlx5_0", "netdev": "enp24s0np0"}]
BASE = {"superpod_fabric_kind": "roce", "rails": RAILS}
# the inventory's storage NICs (topology/render/inventory.py HostNicVars) and storage_fabric.qos
STORAGE = [{"netdev": "enp41s0f0np0", "hca": "mlx5_8", "address": "100.127.0.2/31", "gateway": "100.127.0.1"}]

CASES = {
    "defaults": ({}, None),
    "custom": ({"roce_qos_pfc_priorities": [4], "roce_qos_ecn_priorities": [4], "roce_qos_rdma_cm_tos": 138,
                "roce_qos_dscp2prio": {34: 4}, "roce_qos_tool": "dcb"}, None),
    "priority_out_of_range": ({"roce_qos_pfc_priorities": [8]}, "must be priorities 0-7"),
    "dscp_out_of_range": ({"roce_qos_dscp2prio": {64: 3}}, "must map DSCP 0-63 to priority 0-7"),
    "tos_out_of_range": ({"roce_qos_rdma_cm_tos": 256}, "roce_qos_rdma_cm_tos (256) must be 0-255"),
    # ToS 106 is DSCP 26 -> priority 3, but PFC only on 4: RDMA would be lossy
    "tos_on_lossy_priority": ({"roce_qos_pfc_priorities": [4]}, "is DSCP 26, which maps\nto priority 3"),
    "duplicate_netdev": ({"rails": [RAILS[0], dict(RAILS[1], netdev="enp64s0np0")]}, "unique rail indices, netdevs"),
    "netdev_too_long": ({"rails": [dict(RAILS[0], netdev="enp64s0np0-way-too-long")]}, "at most\n15 characters"),
    "storage_lossless": ({"superpod_storage_nics": STORAGE, "superpod_storage_qos": "lossless"}, None),
    "storage_ecn": ({"superpod_storage_nics": STORAGE, "superpod_storage_qos": "ecn"}, None),
    "storage_none": ({"superpod_storage_nics": STORAGE, "superpod_storage_qos": "none"}, None),
    "storage_bad_mode": ({"superpod_storage_nics": STORAGE, "superpod_storage_qos": "pfc"},
                         "roce_qos_storage_qos (pfc) must be lossless, ecn or none"),
    # two groups of rules broken at once: the one check names both (expected fragments as a tuple)
    "tos_and_storage_both_bad": ({"roce_qos_rdma_cm_tos": 256, "superpod_storage_nics": STORAGE,
                                  "superpod_storage_qos": "pfc"},
                                 ("roce_qos_rdma_cm_tos (256) must be 0-255",
                                  "roce_qos_storage_qos (pfc) must be lossless, ecn or none")),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("roce_qos")
    hosts = {name: dict(BASE, **overrides, ansible_connection="local",
                        ansible_python_interpreter=sys.executable, out=str(tmp / f"{name}.json"))
             for name, (overrides, _) in CASES.items()}
    (tmp / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False,
        "tasks": [
            {"ansible.builtin.include_role": {"name": "roce_qos", "tasks_from": "validate.yml", "public": True}},
            {"ansible.builtin.template": {"src": str(ROOT / "roles/roce_qos/templates/roce-qos.json.j2"),
                                          "dest": "{{ out }}", "mode": "0644"}},
        ],
    }]))
    (tmp / "ansible.cfg").write_text(f"[defaults]\nroles_path = {ROOT / 'roles'}\n{ANSIBLE_STRATEGY_LINES}")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="16")
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(tmp / "inventory.yml"), str(tmp / "play.yml")],
                          capture_output=True, text=True, env=env, check=False)
    failures = {}
    for play in json.loads(proc.stdout)["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if res.get("failed"):
                    failures[host] = " ".join(res.get("msg", "").split())
    return tmp, failures


def test_defaults_render_the_config_the_script_reads(results):
    tmp, failures = results
    assert "defaults" not in failures, failures.get("defaults")
    cfg = json.loads((tmp / "defaults.json").read_text())
    assert "role roce_qos" in cfg.pop("_comment")
    assert cfg == {
        "trust": "dscp", "pfc_priorities": [3], "ecn_priorities": [3], "ecn_points": ["roce_np", "roce_rp"],
        "dscp2prio": {"26": 3, "48": 6}, "rdma_cm_tos": 106, "rdma_cm_roce_mode": "", "port": 1,
        "tool": "auto",
        "interfaces": [{"rail": 0, "netdev": "enp24s0np0", "hca": "mlx5_0"},
                       {"rail": 1, "netdev": "enp64s0np0", "hca": "mlx5_3"}],
    }


def test_custom_lossless_priority_is_accepted(results):
    tmp, failures = results
    assert "custom" not in failures, failures.get("custom")
    cfg = json.loads((tmp / "custom.json").read_text())
    assert (cfg["pfc_priorities"], cfg["rdma_cm_tos"], cfg["dscp2prio"], cfg["tool"]) == ([4], 138, {"34": 4}, "dcb")


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, tuple)])
def test_bad_input_names_every_rule_it_breaks(results, case):
    """The checks are one task (one host-task per node): its message names each broken group of rules."""
    tmp, failures = results
    assert_refused(failures, case, CASES[case][1], tmp / f"{case}.json")


@pytest.mark.parametrize("case", [c for c, (_, want) in CASES.items() if isinstance(want, str)])
def test_bad_input_fails_naming_the_variable(results, case):
    tmp, failures = results
    assert case in failures, f"{case} was accepted"
    assert " ".join(CASES[case][1].split()) in failures[case]
    assert not (tmp / f"{case}.json").exists()


def test_families_are_not_copies():
    # the conventions every role keeps are in test_role_conventions.py; RHEL names its packages
    # differently, so its family file must not be a copy of Debian's
    base = ROOT / "roles/roce_qos/vars"
    debian, rhel = (yaml.safe_load((base / f"{f}.yml").read_text()) for f in ("Debian", "RedHat-9"))
    assert debian["roce_qos_family_packages"] != rhel["roce_qos_family_packages"]


@pytest.mark.parametrize("mode, pfc", [("lossless", None), ("ecn", []), ("none", "absent")])
def test_storage_nics_follow_storage_fabric_qos(results, mode, pfc):
    """lossless: the rails' settings; ecn: ECN and RDMA-CM ToS, no PFC; none: left alone."""
    tmp, failures = results
    assert f"storage_{mode}" not in failures, failures.get(f"storage_{mode}")
    cfg = json.loads((tmp / f"storage_{mode}.json").read_text())
    rails = [i for i in cfg["interfaces"] if "rail" in i]
    storage = [i for i in cfg["interfaces"] if i.get("storage")]
    assert [r["netdev"] for r in rails] == ["enp24s0np0", "enp64s0np0"]
    if pfc == "absent":
        assert storage == []
        return
    want = {"storage": True, "netdev": STORAGE[0]["netdev"], "hca": STORAGE[0]["hca"]}
    if pfc is not None:
        want["pfc_priorities"] = pfc
    assert storage == [want]
