"""The slurm role's templates, rendered by ansible-playbook's own template module from a generated
inventory with the role's defaults, write byte for byte the files `superpod plan` writes to
build/<stack>/slurm/ (so the plan shows what an apply puts on the pod); the TaskProlog hands a
task the nccl role's environment without overriding what the job set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import stack_layout
from topology.render.inventory import render_inventory
from topology.render.slurm_files import render_slurm

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
ROLE = ROOT / "roles" / "slurm"
FILES = ["slurm.conf", "gres.conf", "topology.conf", "cgroup.conf"]


def _render_with_ansible(tmp: Path, stack: str, extra: dict | None = None) -> dict[str, str]:
    """Every file the role templates, from the stack's generated inventory and the role defaults."""
    inventory = tmp / "inventory"
    for path, text in render_inventory(stack_layout(stack), inventory).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = tmp / "out"
    out.mkdir()
    play = [{
        "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ROLE / "defaults" / "main.yml")],
        "tasks": [
            {"name": "as the role does", "ansible.builtin.set_fact": {
                "slurm_cfg": "{{ slurm_plan | combine(slurm_hardware_override) }}"}},
            {"name": "render", "ansible.builtin.template": {"src": f"{ROLE}/templates/{{{{ item }}}}.j2",
                                                              "dest": f"{out}/{{{{ item }}}}"},
             "loop": FILES + ["taskprolog.sh"]},
        ],
    }]
    (tmp / "play.yml").write_text(yaml.safe_dump(play))
    # the generated group_vars/all with one local host (the pod's thousand hosts are not needed)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": local}}}))
    (tmp / "extra.json").write_text(json.dumps(extra or {}))
    run = subprocess.run([str(PLAYBOOK_BIN), "-i", str(inventory), "-e", f"@{tmp / 'extra.json'}",
                          str(tmp / "play.yml")], capture_output=True,
                         text=True, cwd=tmp, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {name: (out / name).read_text() for name in FILES + ["taskprolog.sh"]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab's files as the role writes them, the TaskProlog reading an env file with a space in its path."""
    tmp = tmp_path_factory.mktemp("slurm-role")
    env_file = tmp / "nccl env"
    env_file.write_text("# nccl role\nNCCL_IB_HCA==mlx5_0,mlx5_3\nNCCL_SOCKET_IFNAME==bond0\nNCCL_IB_TC=106\n")
    return _render_with_ansible(tmp, "lab", {"slurm_nccl_env_file": str(env_file)}), tmp


@pytest.mark.parametrize("stack", ["lab", "roce-8k"])
def test_role_writes_what_the_plan_writes(stack, lab, tmp_path):
    planned = {p.name: text for p, text in render_slurm(stack_layout(stack), Path("/b")).items()}
    rendered = lab[0] if stack == "lab" else _render_with_ansible(tmp_path, stack)
    assert {name: rendered[name] for name in FILES} == planned


def test_task_prolog_exports_the_nccl_environment_the_job_did_not_set(lab):
    files, tmp = lab
    prolog = tmp / "taskprolog.sh"
    prolog.write_text(files["taskprolog.sh"])
    env = {"PATH": os.environ["PATH"], "NCCL_IB_TC": "104"}  # the job chose its own traffic class
    out = subprocess.run(["/bin/sh", str(prolog)], capture_output=True, text=True, env=env, check=True).stdout
    assert out.splitlines() == ["export NCCL_IB_HCA==mlx5_0,mlx5_3", "export NCCL_SOCKET_IFNAME==bond0"]
