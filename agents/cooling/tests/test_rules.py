"""The shipped alert rules: structure always, promtool (check + unit tests) when present."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cooling_agent.catalog import METRICS, PREFIX
from cooling_agent.cli import rules_text

HERE = Path(__file__).resolve().parent
REQUIRED = {"RackPowerOverBudget", "RackFeedImbalance", "CoolantSupplyAboveAshraeLimit", "CoolantFlowOutOfRange",
            "CoolantPressureOutOfRange", "CoolantLeakDetected", "CoolingTargetUnreachable"}
EXPORTED = {PREFIX + n for n in METRICS} | {PREFIX + n for n in (
    "rack_budget_watts", "rack_planned_watts", "feed_imbalance_ratio_limit", "cdu_supply_temperature_limit_celsius",
    "cdu_flow_liters_per_minute_min", "cdu_flow_liters_per_minute_max", "cdu_delta_pressure_kpa_min",
    "cdu_delta_pressure_kpa_max", "target_up", "target_degraded", "target_last_success_timestamp_seconds")}


def test_rules_structure():
    doc = yaml.safe_load(rules_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    names = {r["alert"] for r in rules}
    assert REQUIRED <= names
    for r in rules:
        assert set(r) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, r["alert"]
        assert r["labels"]["severity"] in {"info", "warning", "critical"}
        assert r["annotations"]["summary"]
        # every superpod_* series a rule uses is one the agent exports
        import re
        for metric in re.findall(r"\bsuperpod_[a-z_]+", r["expr"]):
            assert metric in EXPORTED, (r["alert"], metric)
    leak = next(r for r in rules if r["alert"] == "CoolantLeakDetected")
    assert "for" not in leak  # leaks page immediately


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed (Debian package prometheus)")
def test_rules_promtool(tmp_path):
    rules = tmp_path / "cooling.yml"
    rules.write_text(rules_text())
    out = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    test = tmp_path / "rules_test.yml"
    test.write_text((HERE / "data" / "rules_test.yml").read_text().replace("RULES_FILE", str(rules)))
    out = subprocess.run(["promtool", "test", "rules", str(test)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
