"""`superpod apply` on events recorded from real runs of site.yml on the lab pod's containers
(tests/e2e/recorded/, written by tests/e2e/record.py): per-host summary, failures, retry list,
progress state and the ansible-runner arguments. No Ansible run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from topology.operate import commands
from topology.operate.events import host_problems, host_tallies, load_events, render_diff
from topology.operate.progress import ProgressState
from topology.operate.runs import OperateError, RunOutcome, RunRequest, check_request, runner_kwargs, scrub_recorded_env

RECORDED = Path(__file__).parent / "e2e" / "recorded"
NODES = ["su01-node01", "su01-node02", "su01-node03", "su01-node04"]


@pytest.fixture(scope="module")
def failed_run():
    return load_events(RECORDED / "apply_failed.json")


@pytest.fixture(scope="module")
def second_run():
    return load_events(RECORDED / "apply_second.json")


def test_tallies_come_from_the_play_recap(second_run):
    tallies = host_tallies(second_run)
    assert sorted(tallies) == NODES
    t = tallies["su01-node01"]
    assert (t.ok, t.changed, t.failed, t.unreachable) == (60, 1, 0, 0)
    assert t.status == "changed"


def test_failed_hosts_are_named_with_role_task_and_message(failed_run):
    tallies = host_tallies(failed_run)
    assert {h: t.status for h, t in tallies.items()} == dict.fromkeys(NODES, "failed")
    problems = host_problems(failed_run)
    assert sorted(p.host for p in problems) == NODES
    p = problems[0]
    assert p.kind == "failed" and p.role == "hugepages"
    assert p.task == "Record the command line handed to the bootloader"
    assert "hugepages_effective_cmdline" in p.message


def test_unreachable_host_is_a_problem_and_keeps_its_own_status():
    events = [
        {"event": "runner_on_ok", "event_data": {"host": "a", "task": "t", "role": "r", "res": {"changed": False}}},
        {"event": "runner_on_unreachable", "event_data": {
            "host": "b", "task": "t", "role": "r", "res": {"msg": "container is not running", "unreachable": True}}},
        {"event": "runner_on_failed", "event_data": {"host": "a", "task": "probe", "ignore_errors": True, "res": {}}},
        {"event": "playbook_on_stats", "event_data": {"ok": {"a": 2}, "dark": {"b": 1}, "failures": {},
                                                      "changed": {}, "ignored": {"a": 1}}},
    ]
    problems = host_problems(events)
    assert [(p.host, p.kind, p.message) for p in problems] == [("b", "unreachable", "container is not running")]
    tallies = host_tallies(events)
    assert tallies["b"].status == "unreachable" and tallies["a"].status == "ok"


def test_apply_report_exit_code_and_retry_file(failed_run, tmp_path, monkeypatch):
    monkeypatch.setattr(commands, "run_playbook",
                        lambda req, on_event=None: RunOutcome(tmp_path, rc=2, status="failed", events=failed_run))
    console = Console(record=True, width=200, force_terminal=False)
    code = commands.apply(RunRequest(project_dir=tmp_path, stack="lab"), console, progress=False)
    text = console.export_text()
    assert code == commands.EXIT_FAILED
    assert (tmp_path / "retry.txt").read_text().split() == NODES
    assert f"--limit @{tmp_path}/retry.txt" in text
    assert "hugepages : Record the command line handed to the bootloader" in text
    assert "4 hosts: ok=48 changed=16 failed=4 unreachable=0" in text


def test_apply_exit_0_when_every_host_is_ok(second_run, tmp_path, monkeypatch):
    monkeypatch.setattr(commands, "run_playbook",
                        lambda req, on_event=None: RunOutcome(tmp_path, rc=0, status="successful", events=second_run))
    console = Console(record=True, width=200)
    assert commands.apply(RunRequest(project_dir=tmp_path, stack="lab"), console, progress=False) == 0
    assert not (tmp_path / "retry.txt").exists()


def test_progress_state_follows_plays_tasks_and_hosts(failed_run):
    state = ProgressState()
    for event in failed_run:
        state.feed(event)
    assert state.play == "GPU nodes - host, driver and fabric"
    assert state.task == "Record the command line handed to the bootloader"
    assert state.hosts_with("failed") == NODES
    assert state.task_hosts_done == set(NODES)
    assert state.hosts["su01-node01"]["changed"] == 4


def test_render_diff_of_file_content_and_prepared_text():
    diff = render_diff({"before": "a = 0\n", "after": "a = 1\n", "before_header": "/etc/x", "after_header": "/etc/x"})
    assert diff.splitlines() == ["--- /etc/x", "+++ /etc/x", "@@ -1 +1 @@", "-a = 0", "+a = 1"]
    assert render_diff({"prepared": "+ new line"}) == "+ new line\n"
    assert render_diff([{"before": {"state": "absent"}, "after": {"state": "file"}}]).count("state") == 2
    assert render_diff({"before": "same", "after": "same"}) == ""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "inventories/lab").mkdir(parents=True)
    (tmp_path / "inventories/lab/hosts.yml").write_text("all: {}\n")
    (tmp_path / "site.yml").write_text("---\n[]\n")
    return tmp_path


def test_runner_arguments_inventory_overlays_check_and_env(tmp_path):
    project = _project(tmp_path)
    overlay = tmp_path / "overlay.yml"
    overlay.write_text("all: {}\n")
    req = RunRequest(project_dir=project, stack="lab", overlays=(overlay,), check=True, limit="su01",
                     tags="hugepages", fresh_facts=True, runs_dir=tmp_path / "runs")
    kw = runner_kwargs(req, tmp_path / "runs/lab/x")
    assert kw["inventory"] == [str(project / "inventories/lab"), str(overlay)]
    assert kw["cmdline"] == "--check --diff"
    assert (kw["limit"], kw["tags"]) == ("su01", "hugepages")
    assert kw["envvars"]["ANSIBLE_CONFIG"] == str(project / "ansible.cfg")
    assert kw["envvars"]["ANSIBLE_CACHE_PLUGIN_CONNECTION"] == str(tmp_path / "runs/lab/facts")
    assert kw["envvars"]["ANSIBLE_GATHERING"] == "implicit"
    assert kw["suppress_env_files"] is True and "extravars" not in kw and "passwords" not in kw


def test_missing_inputs_are_named_before_anything_runs(tmp_path):
    with pytest.raises(OperateError, match=r"--stack: no inventory .*superpod plan --stack lab"):
        check_request(RunRequest(project_dir=tmp_path, stack="lab"))
    project = _project(tmp_path)
    with pytest.raises(OperateError, match="--inventory-overlay: no such file"):
        check_request(RunRequest(project_dir=project, stack="lab", overlays=(tmp_path / "nope.yml",)))


def test_recorded_environment_keeps_no_secret_values(tmp_path):
    (tmp_path / "command").write_text(json.dumps({"command": ["ansible-playbook"], "cwd": "/", "env": {
        "PATH": "/usr/bin", "ANSIBLE_CONFIG": "/repo/ansible.cfg", "PULUMI_CONFIG_PASSPHRASE": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "abc", "ANSIBLE_VAULT_PASSWORD": "v", "MY_VAR": "x"}}))
    scrub_recorded_env(tmp_path)
    env = json.loads((tmp_path / "command").read_text())["env"]
    assert env["PATH"] == "/usr/bin" and env["ANSIBLE_CONFIG"] == "/repo/ansible.cfg"
    assert {env[k] for k in ("PULUMI_CONFIG_PASSPHRASE", "AWS_SECRET_ACCESS_KEY", "ANSIBLE_VAULT_PASSWORD", "MY_VAR")} \
        == {"<not recorded>"}


def test_node_lost_mid_run_is_unreachable_and_the_others_finish():
    """Recorded: `apply --tags hugepages` with su01-node04's container killed after its first
    role task."""
    events = load_events(RECORDED / "apply_node_lost.json")
    tallies = host_tallies(events)
    assert tallies["su01-node04"].status == "unreachable"
    assert all(tallies[h].status == "ok" and tallies[h].ok > tallies["su01-node04"].ok for h in NODES[:3])
    (problem,) = host_problems(events)
    assert (problem.host, problem.kind, problem.role) == ("su01-node04", "unreachable", "hugepages")
    assert "is not running" in problem.message


def test_fix_run_touched_only_the_drifted_hosts():
    """Recorded: the re-apply `superpod drift --fix` made for two drifted nodes."""
    tallies = host_tallies(load_events(RECORDED / "fix_two_nodes.json"))
    assert sorted(tallies) == ["su01-node02", "su01-node03"]
    assert all(t.failed == 0 and t.unreachable == 0 and t.changed > 0 for t in tallies.values())


def test_a_failure_message_is_kept_whole_so_every_named_mismatch_is_reported():
    """node_check fails with one message naming every mismatch; the drift corpus's six GPU faults
    made it 600 characters and the report cut the last one (the width of GPU 6) at 500."""
    mismatches = "; ".join(f"PCIe link width (expected >= 16, as capable (max), actual 8 of 16; "
                           f"trained below its capability on GPU {i})" for i in range(40))
    msg = f"node_check: 40 mismatch(es) on a: {mismatches}"
    events = [{"event": "runner_on_failed", "event_data": {
        "host": "a", "task": "Fail on mismatches", "role": "node_check", "res": {"msg": msg, "failed": True}}}]
    (problem,) = host_problems(events)
    assert problem.message == msg
