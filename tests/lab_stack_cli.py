"""The superpod CLI run in-process on a throwaway project of the `lab` stack (real Ansible on
localhost), as the record and plain-path tests drive it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from topology.cli import app

runner = CliRunner()


def superpod(*args: str):
    return runner.invoke(app, list(args), env={**os.environ, "COLUMNS": "250"})


def lab_args(project: Path) -> tuple[str, ...]:
    return ("--stack", "lab", "--project-dir", str(project), "--no-progress")


def drift_json(project: Path, *extra: str) -> tuple[int, dict]:
    """`drift --json`'s exit code and report; the report also carries the run's stderr (why a
    record was not trusted), for a failing assertion's message."""
    result = superpod("drift", *lab_args(project), "--json", *extra)
    report = json.loads(result.stdout)
    report["stderr"] = result.stderr
    return result.exit_code, report
