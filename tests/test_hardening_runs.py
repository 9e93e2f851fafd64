"""apply/drift inputs and records (issue 20, items 11, 13 and 14): a kill -9 mid-run leaves no
secret of the operator's environment in .runs/, a corrupt overlay or inventory is named before
anything runs, and stack names cannot leave inventories/."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topology.cli import app
from topology.operate.runs import OperateError, RunRequest, check_request, reduced_env

runner = CliRunner()
TOKEN = "ghp_hunter2-never-on-disk"


def _project(tmp_path: Path) -> Path:
    inv = tmp_path / "inventories" / "lab"
    inv.mkdir(parents=True)
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    localhost: {ansible_connection: local}\n")
    (tmp_path / "site.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.wait_for: {timeout: 60}\n"
    )
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    return tmp_path


@pytest.mark.timeout(120)
def test_kill_9_mid_apply_leaves_no_secret_in_the_run_record(tmp_path):
    project = _project(tmp_path)
    code = ("import sys; from pathlib import Path; from topology.operate.runs import RunRequest, run_playbook; "
            "run_playbook(RunRequest(project_dir=Path(sys.argv[1]), stack='lab'))")
    env = os.environ | {"GITHUB_TOKEN": TOKEN, "AWS_SECRET_ACCESS_KEY": TOKEN, "PULUMI_CONFIG_PASSPHRASE": TOKEN}
    proc = subprocess.Popen([sys.executable, "-c", code, str(project)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    commands: list[Path] = []
    while not commands and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        commands = list((project / ".runs" / "lab").glob("*/artifacts/run/command"))
    time.sleep(1)  # ansible-playbook is running now
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert commands, "the run never started"
    recorded = commands[0].read_text()
    assert "ansible-playbook" in recorded and TOKEN not in recorded
    env_recorded = json.loads(recorded)["env"]
    assert "GITHUB_TOKEN" not in env_recorded and env_recorded["ANSIBLE_NOCOLOR"] == "1"
    assert all(TOKEN not in p.read_text(errors="replace") for p in project.rglob("*") if p.is_file())


def test_reduced_env_drops_secret_names_and_keeps_paths():
    env = {"GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "SSH_AUTH_SOCK": "/run/a.sock", "HOME": "/root",
           "ANSIBLE_PRIVATE_KEY_FILE": "/k", "MY_PASSWORD": "p", "ANSIBLE_HOST_KEY_CHECKING": "True"}
    assert reduced_env(env, {"ANSIBLE_HOST_KEY_CHECKING": "True"}) == {
        "SSH_AUTH_SOCK": "/run/a.sock", "HOME": "/root", "ANSIBLE_PRIVATE_KEY_FILE": "/k",
        "ANSIBLE_HOST_KEY_CHECKING": "True"}


@pytest.mark.parametrize("body", [b"all: [unclosed\n", b"all:\n  hosts: {a: 1\n", b"all: caf\xe9\n"])
def test_corrupt_overlay_or_inventory_is_named(tmp_path, body):
    project = _project(tmp_path)
    overlay = tmp_path / "site-switches.yml"
    overlay.write_bytes(body)
    with pytest.raises(OperateError, match=r"--inventory-overlay: .*site-switches.yml is not (valid YAML|UTF-8)"):
        check_request(RunRequest(project_dir=project, stack="lab", overlays=(overlay,)))
    folder = tmp_path / "overlay.d"
    folder.mkdir()
    (folder / "jump.yml").write_bytes(body)
    with pytest.raises(OperateError, match=r"--inventory-overlay: .*jump.yml is not"):
        check_request(RunRequest(project_dir=project, stack="lab", overlays=(folder,)))
    (project / "inventories" / "lab" / "hosts.yml").write_bytes(body)
    result = runner.invoke(app, ["apply", "--stack", "lab", "-C", str(project)], catch_exceptions=False)
    assert result.exit_code == 2 and "error: --stack: " in result.output and "hosts.yml is not" in result.output


@pytest.mark.parametrize("stack", ["x/../../evil", "../lab", "LAB"])
def test_apply_stack_names_follow_the_pod_name_rule(tmp_path, stack):
    result = runner.invoke(app, ["drift", "--stack", stack, "-C", str(_project(tmp_path))], catch_exceptions=False)
    assert result.exit_code == 2 and "error: --stack: must be lowercase" in result.output
    assert not (tmp_path / ".runs").exists()
