"""The CLI behaves the same on every command (issue 37): `--json` on diff, report, publish and
apply, with errors as JSON on stdout too; apply and drift run the inventory a `plan --spec --out`
wrote; a plan shows where it is on a terminal's stderr and prints nothing there otherwise."""

from __future__ import annotations

import io
import json
from contextlib import contextmanager

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from tests.conftest import ROOT
from tests.nautobot.test_publish_offline import FakeNautobot
from topology import cli
from topology.cli import app
from topology.operate import commands
from topology.operate.events import load_events
from topology.operate.runs import RunOutcome
from topology.publish import commands as publish_commands

runner = CliRunner()
RECORDED = ROOT / "tests" / "e2e" / "recorded"


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def json_out(result) -> dict:
    """stdout is one JSON object and nothing else (error lines go to stderr)."""
    return json.loads(result.stdout)


def lab_spec(tmp_path, **changes):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"] | changes
    path = tmp_path / f"pod-{len(list(tmp_path.glob('pod-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_diff_json_lists_every_change_and_exits_like_the_text_form(tmp_path):
    small = lab_spec(tmp_path, scalable_units=1, max_scalable_units=2)
    big = lab_spec(tmp_path, scalable_units=2, max_scalable_units=2)
    result = invoke("diff", str(small), str(big), "--json")
    assert result.exit_code == 1
    doc = json_out(result)
    assert doc["ok"] is True and doc["same"] is False
    assert "su02-node01 (gpu_node)" in doc["changes"]["devices"]["added"]
    assert doc["changes"]["devices"]["removed"] == [] and doc["changes"]["cables"]["removed"] == []
    # --limit cuts the text form only: every added device is listed
    assert len(doc["changes"]["devices"]["added"]) > 20
    same = invoke("diff", "lab", "lab", "-C", str(ROOT), "--json")
    assert same.exit_code == 0 and json.loads(same.output)["same"] is True
    missing = invoke("diff", str(small), "--json")
    assert missing.exit_code == 2
    assert json_out(missing)["errors"][0]["field"] == "NEW"


def test_report_json_names_the_report_it_wrote(tmp_path):
    out = tmp_path / "out"
    result = invoke("report", "--stack", "lab", "-C", str(ROOT), "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    doc = json_out(result)
    assert doc["report"] == str(out / "report" / "index.html") and (out / "report" / "index.html").is_file()
    assert doc["pod"] == "lab"
    bad = invoke("report", "--stack", "Bad_Name", "-C", str(ROOT), "--out", str(out), "--json")
    assert bad.exit_code == 2 and json_out(bad)["errors"][0]["field"] == "--stack"


@pytest.fixture
def fake_nautobot(monkeypatch, tmp_path):
    server = FakeNautobot()

    @contextmanager
    def connect(url, token, **kw):
        yield server

    monkeypatch.setattr(publish_commands, "Nautobot", connect)
    token = tmp_path / "token"
    token.write_text("0123456789abcdef\n")
    token.chmod(0o600)
    return server, token


def test_publish_json_counts_every_change_and_progress_stays_off_stdout(fake_nautobot):
    server, token = fake_nautobot
    args = ["publish", "--stack", "lab", "-C", str(ROOT), "--nautobot", "http://nautobot.test", "--token-file",
            str(token), "--json"]
    first = runner.invoke(app, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)  # the whole of stdout is one object: progress went to stderr
    assert doc["ok"] is True and doc["dry_run"] is False and doc["total"] == len(doc["changes"]) > 0
    created = sum(c["create"] for c in doc["counts"].values())
    assert created == sum(len(objs) for ep, objs in server.db.items() if ep != "extras/statuses/")
    again = json.loads(runner.invoke(app, [*args, "--dry-run"], catch_exceptions=False).stdout)
    assert again["dry_run"] is True and again["total"] == 0 and again["changes"] == []


def test_publish_json_error_is_json(tmp_path):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef\n")
    token.chmod(0o644)  # readable by others: refused
    result = invoke("publish", "--stack", "lab", "-C", str(ROOT), "--nautobot", "http://127.0.0.1:9",
                    "--token-file", str(token), "--json")
    assert result.exit_code == 2
    doc = json_out(result)
    assert doc["ok"] is False and doc["errors"][0]["field"] == "--token-file"


@pytest.fixture
def planned_spec(tmp_path):
    spec, out = lab_spec(tmp_path), tmp_path / "plan"
    assert invoke("plan", "--spec", str(spec), "--out", str(out)).exit_code == 0
    return spec, out


def test_apply_runs_the_inventory_plan_out_wrote_and_answers_json(planned_spec, tmp_path, monkeypatch):
    spec, out = planned_spec
    seen = []

    def run_playbook(req, on_event=None):
        seen.append(req)
        return RunOutcome(tmp_path, rc=0, status="successful", events=load_events(RECORDED / "apply_second.json"))

    monkeypatch.setattr(commands, "run_playbook", run_playbook)
    result = invoke("apply", "--spec", str(spec), "--out", str(out), "-C", str(ROOT), "--runs-dir",
                    str(tmp_path / "runs"), "--json", "--full")
    assert result.exit_code == 0, result.output
    assert [r.inventory_dir for r in seen] == [(out / "inventory").resolve()]
    assert seen[0].stack == "lab"
    doc = json_out(result)
    assert doc["ok"] is True and doc["exit_code"] == 0
    assert doc["hosts"]["su01-node01"] == {"status": "changed", "ok": 60, "changed": 1, "failed": 0,
                                           "unreachable": 0, "skipped": doc["hosts"]["su01-node01"]["skipped"]}


def test_apply_and_drift_without_the_planned_inventory_name_out(tmp_path):
    spec = lab_spec(tmp_path)
    for command in ("apply", "drift"):
        result = invoke(command, "--spec", str(spec), "--out", str(tmp_path / "nowhere"), "-C", str(ROOT),
                        "--json")
        assert result.exit_code == 2
        error = json_out(result)["errors"][0]
        assert error["field"] == "--out" and f"{tmp_path / 'nowhere' / 'inventory'}/hosts.yml" in error["rule"]
        assert "superpod plan --spec" in error["rule"]
    both = invoke("apply", "--spec", str(spec), "--stack", "lab", "-C", str(ROOT))
    assert both.exit_code == 2 and "--stack/--spec" in both.output


def test_drift_runs_the_inventory_plan_out_wrote(planned_spec, tmp_path, monkeypatch):
    spec, out = planned_spec
    seen = []
    monkeypatch.setattr(commands, "drift", lambda req, console, **kw: seen.append(req) or 0)
    result = invoke("drift", "--spec", str(spec), "--out", str(out), "-C", str(ROOT))
    assert result.exit_code == 0, result.output
    assert [r.inventory_dir for r in seen] == [(out / "inventory").resolve()]


def test_plan_progress_on_a_terminal_only(tmp_path, monkeypatch):
    for terminal in (True, False):
        stderr = io.StringIO()
        monkeypatch.setattr(cli, "err", Console(file=stderr, force_terminal=terminal, soft_wrap=True))
        result = invoke("plan", "--stack", "lab", "-C", str(ROOT), "--out", str(tmp_path / str(terminal)))
        assert result.exit_code == 0, result.output
        if terminal:
            assert "lab: building the layout" in stderr.getvalue()
            assert "lab: rendering and writing files" in stderr.getvalue()
        else:
            assert stderr.getvalue() == ""
