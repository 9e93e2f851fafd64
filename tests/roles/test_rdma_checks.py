"""rdma's input checks and its hardware requirement are one assert (issue 39: the hardware
failure was its own task, skipped on every node with an RDMA NIC): bad input and a node without
the NIC it must have each fail naming their rule, both at once name both, a good node passes.
Run by ansible-playbook on local hosts: main.yml's own task with the role's defaults and vars,
devices standing for what detect.yml's read found (rdma_devices, vars/main.yml)."""

from __future__ import annotations

import copy

import yaml

from tests.role_files import ROOT
from tests.roles.playbook import run_play

ROLE = ROOT / "roles/rdma"
NAME = "Check the DOCA URL and the firmware plan, and that an RDMA NIC is here where one is required"
NIC = [{"pci": "0000:18:00.0", "vendor": "0x15b3"}]
HARDWARE = "no PCI device with vendor id"
INPUTS = "rdma_firmware_link_type must be ETH or IB (got 'FC')"


def test_inputs_and_hardware_fail_naming_each_rule(tmp_path):
    tasks = yaml.safe_load((ROLE / "tasks/main.yml").read_text())
    task = copy.deepcopy(next(t for t in tasks if t.get("name") == NAME))
    # per host, over the role's defaults (the play's vars_files outrank host vars; task vars do not)
    task["vars"] |= {"rdma_require_hardware": "{{ require }}", "rdma_devices": "{{ devices }}",
                     "rdma_firmware_link_type": "{{ link_type | default('ETH') }}"}
    hosts = {
        "good": {"devices": NIC, "require": True},
        "no-nic-not-required": {"devices": [], "require": False},
        "no-nic-required": {"devices": [], "require": True},
        "bad-link-type": {"devices": NIC, "require": True, "link_type": "FC"},
        "both": {"devices": [], "require": True, "link_type": "FC"},
    }
    for hostvars in hosts.values():  # the DOCA URL's default names the architecture
        hostvars["test_facts"] = {"architecture": "x86_64", "distribution": "Debian",
                                  "distribution_major_version": "12"}
    role_vars = [ROLE / "defaults/main.yml", ROLE / "vars/main.yml", ROLE / "vars/Debian.yml"]
    results = run_play(tmp_path, [task], hosts, vars_files=role_vars)
    msgs = {host: " ".join(next((r["msg"] for r in res if r.get("failed")), "").split())
            for host, res in results.items()}
    assert msgs["good"] == msgs["no-nic-not-required"] == ""
    assert HARDWARE in msgs["no-nic-required"] and INPUTS not in msgs["no-nic-required"]
    assert INPUTS in msgs["bad-link-type"] and HARDWARE not in msgs["bad-link-type"]
    assert INPUTS in msgs["both"] and HARDWARE in msgs["both"]
