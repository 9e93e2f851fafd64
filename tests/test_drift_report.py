"""`superpod drift` on events recorded from a real check-mode run of site.yml on the lab pod's
containers (tests/e2e/recorded/drift_two_nodes.json), after drift made by hand on two nodes:
su01-node02 (a sysctl file edited, a limits file deleted), su01-node03 (the CPU governor unit
disabled, a kernel command line drop-in edited). No Ansible run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from topology.operate import commands
from topology.operate.drift import EXIT_CLEAN, EXIT_DRIFT, EXIT_ERROR, DriftReport
from topology.operate.events import load_events
from topology.operate.runs import RunOutcome, RunRequest

RECORDED = Path(__file__).parent / "e2e" / "recorded"


@pytest.fixture(scope="module")
def events():
    return load_events(RECORDED / "drift_two_nodes.json")


@pytest.fixture(scope="module")
def report(events):
    return DriftReport.from_events(events, rc=0, run_dir="/runs/x")


def test_exactly_the_drifted_hosts_and_tasks(report):
    assert report.exit_code == EXIT_DRIFT
    assert report.drifted_hosts == ["su01-node02", "su01-node03"]
    got = {h: sorted((c.role, c.task) for c in cs) for h, cs in report.by_host().items()}
    assert got == {
        "su01-node02": [("host_tuning", "Persist the tuning sysctls"),
                        ("hugepages", "Set the PAM locked-memory limits")],
        "su01-node03": sorted([
            ("host_tuning", "Enable the governor unit at boot"),
            ("host_tuning", "Write the kernel command line drop-in"),
            ("host_tuning", "Regenerate the bootloader config when the effective command line changed"),
            ("hugepages", "Regenerate the bootloader config when the effective command line changed"),
        ]),
    }


def test_diffs_show_what_changed(report):
    diffs = {(c.host, c.task): c.diff for c in report.changes}
    sysctl = diffs[("su01-node02", "Persist the tuning sysctls")]
    assert "-kernel.numa_balancing = 1" in sysctl and "+kernel.numa_balancing = 0" in sysctl
    assert "--- /etc/sysctl.d/60-superpod-host-tuning.conf" in sysctl
    limits = diffs[("su01-node02", "Set the PAM locked-memory limits")]
    assert "@@ -0,0 +1," in limits  # the deleted file would be written whole
    assert "iommu=pt debug" in diffs[("su01-node03", "Write the kernel command line drop-in")]
    # a debug task that says what would change carries its message instead of a diff
    (note,) = [c.note for c in report.changes if c.host == "su01-node03" and c.role == "host_tuning"
               and c.task.startswith("Regenerate the bootloader config")]
    assert note.startswith("kernel command line changes from") and "iommu=pt debug" in note


def test_fix_targets_only_drifted_hosts_and_roles(report):
    assert report.fix_targets() == (["su01-node02", "su01-node03"], ["host_tuning", "hugepages"])


def test_a_drifted_task_outside_any_role_means_the_whole_playbook(events):
    extra = {"event": "runner_on_ok", "event_data": {"host": "su01-node01", "task": "play-level task",
                                                     "res": {"changed": True}}}
    report = DriftReport.from_events([*events[:-1], extra, events[-1]])
    assert report.fix_targets() == (["su01-node01", "su01-node02", "su01-node03"], None)


def test_clean_run_exits_0_and_errors_win_over_drift(events):
    clean = [e for e in events
             if not (e.get("event") == "runner_on_ok" and e["event_data"].get("res", {}).get("changed"))]
    assert DriftReport.from_events(clean).exit_code == EXIT_CLEAN
    lost = {"event": "runner_on_unreachable", "event_data": {"host": "su01-node04", "task": "Gathering Facts",
                                                             "res": {"msg": "container is not running"}}}
    report = DriftReport.from_events([*events[:-1], lost, events[-1]], rc=4)
    assert report.exit_code == EXIT_ERROR and report.problem_hosts == ["su01-node04"]
    assert DriftReport.from_events(events[:10], rc=1).exit_code == EXIT_ERROR  # no recap: ansible died


def test_json_report_for_machines(report):
    data = json.loads(json.dumps(report.as_json()))
    assert data["exit_code"] == 1 and data["drifted_hosts"] == ["su01-node02", "su01-node03"]
    assert {h: v["status"] for h, v in data["hosts"].items()} == {
        "su01-node01": "clean", "su01-node02": "drift", "su01-node03": "drift", "su01-node04": "clean"}
    assert data["hosts"]["su01-node02"]["recap"]["changed"] == 2
    change = data["hosts"]["su01-node02"]["changes"][0]
    assert set(change) == {"role", "task", "action", "handler", "path", "diff", "hidden", "note", "mismatches", "files"}
    assert change["mismatches"] == [] and data["hosts"]["su01-node02"]["plan_mismatches"] == []
    assert data["fix"] == {"limit": ["su01-node02", "su01-node03"], "tags": ["host_tuning", "hugepages"]}


def test_no_log_task_is_listed_without_its_diff():
    events = [{"event": "runner_on_ok", "event_data": {
        "host": "n1", "task": "Set BMC password", "role": "host_tuning",
        "res": {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified",
                "changed": True}}},
              {"event": "playbook_on_stats", "event_data": {"ok": {"n1": 1}, "changed": {"n1": 1}}}]
    (change,) = DriftReport.from_events(events).changes
    assert change.hidden and change.diff == ""


def test_drift_command_prints_report_and_fixes_only_drifted(events, tmp_path, monkeypatch):
    calls = []

    def fake_run(req, on_event=None):
        calls.append(req)
        if req.check:
            return RunOutcome(tmp_path, rc=2, status="successful", events=events)
        return RunOutcome(tmp_path, rc=0, status="successful", events=events[-1:])

    monkeypatch.setattr(commands, "run_playbook", fake_run)
    console = Console(record=True, width=200)
    code = commands.drift(RunRequest(project_dir=tmp_path, stack="lab"), console, fix=True, progress=False)
    text = console.export_text()
    assert "drift su01-node02: 2 task(s) would change" in text
    assert "+kernel.numa_balancing = 0" in text
    assert [(r.kind, r.check, r.fresh_facts) for r in calls] == [("drift", True, True), ("fix", False, False)]
    assert (calls[1].limit, calls[1].tags) == ("su01-node02,su01-node03", "host_tuning,hugepages")
    assert code == EXIT_CLEAN
