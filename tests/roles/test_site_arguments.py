"""site.yml against a freshly generated inventory: every role's argument check and defaults resolve.

Molecule scenarios set many variables by hand; users run site.yml on the plain generated
inventory. This runs the argument validation of every role in site.yml (tagged `always`) with
`--check` and a tag that selects no other task, against this machine as one planned GPU node,
the management node and an Ethernet switch, so a default that only resolves after the role loads
its family vars, or a spec that rejects what the inventory emits, fails here instead of on a
user's pod.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def site_roles() -> list[str]:
    plays = yaml.safe_load((ROOT / "site.yml").read_text())
    return [r["role"] if isinstance(r, dict) else r for play in plays for r in play.get("roles", [])]


def test_every_site_role_validates_its_arguments_on_the_generated_inventory(tmp_path):
    out = tmp_path / "lab"
    subprocess.run([BIN / "superpod", "plan", "--stack", "lab", "-C", ROOT, "--out", out],
                   check=True, capture_output=True)
    inventory = out / "inventory"
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    gpu_node = sorted(hosts["all"]["children"]["gpu_nodes"]["hosts"])[0]
    mgmt_node = sorted(hosts["all"]["children"]["mgmt_nodes"]["hosts"])[0]
    switch = sorted(hosts["all"]["children"]["ethernet_switches"]["hosts"])[0]

    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_CACHE_PLUGIN="memory")
    run = subprocess.run(
        [BIN / "ansible-playbook", "-i", inventory, ROOT / "site.yml", "--check",
         "--limit", f"{gpu_node},{mgmt_node},{switch}", "--tags", "superpod-argument-check-only",
         "-e", "ansible_connection=local", "-e", f"ansible_python_interpreter={sys.executable}",
         "-e", "superpod_host_dcgm_exporter=true"],  # the opt-in role validates too
        capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

    validated = set(re.findall(r"TASK \[(\w+) : Validating arguments against arg spec", run.stdout))
    assert validated == set(site_roles()) - {"gpu_operator"}, validated  # no kube_control_plane host
    assert re.search(rf"{re.escape(gpu_node)}\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", run.stdout)
