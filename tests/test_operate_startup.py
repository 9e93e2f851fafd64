"""`superpod apply` and `drift` start without the planner: a plain run of a converged pod is a
record check of a few seconds (issue 33's "keep the speed honest", issue 39), and importing the
layout, the spec's pydantic models and the catalog cost about half a second of CPU on each run
(and on each record check's filter plugin, which imports topology.operate). Checked in a fresh
interpreter, so what the other tests imported does not count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLANNER = ("topology.layout.build", "topology.spec", "topology.catalog", "topology.render.inventory", "pydantic")


def _imported_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return json.loads(out.stdout.splitlines()[-1])


def test_apply_and_drift_start_without_the_planner():
    loaded = _imported_after("import topology.cli, topology.operate.commands, topology.operate.trusted_record")
    assert [m for m in PLANNER if m in loaded] == []


def test_the_record_checks_filter_plugin_imports_no_planner():
    loaded = _imported_after("sys.path.insert(0, 'topology/operate/playbooks/filter_plugins')\n"
                             "import superpod_observed")
    assert [m for m in PLANNER if m in loaded] == []


def test_the_planner_is_still_there_when_asked_for():
    loaded = _imported_after("from topology import build\nassert callable(build)")
    assert "topology.layout.build" in loaded
