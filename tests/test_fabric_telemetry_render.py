"""topology/render/telemetry.py: scrape targets, rules and dashboard from the layout, and a
promtool unit test for every alert (a storm series that fires, a non-storm one that does not)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import stack_layout
from topology.render.telemetry import (
    DUMPER,
    EXPORTER_PORT,
    GNMI_PORT,
    dashboard,
    file_sd_json,
    gnmic_targets_yaml,
    render_telemetry,
    rules,
)

PROMTOOL = shutil.which("promtool")
WHERE_A = "su01-node01 enp0np0 (rail 0, su01-leaf-rail0 swp1)"
NIC_KEYS = ("node", "su", "kind", "netdev", "rail", "gpu", "leaf", "leaf_port")


def nic(node: str, rail: int | None, kind: str = "rail", su: str = "su01") -> dict[str, str]:
    r = "" if rail is None else str(rail)
    return {"node": node, "su": su, "kind": kind, "netdev": f"enp{r or 's'}np0", "rail": r, "gpu": r,
            "leaf": f"{su}-leaf-rail{r}" if rail is not None else "", "leaf_port": f"swp{node[-1]}" if r else ""}


def series(metric: str, labels: dict, values: str, **extra) -> dict:
    lab = {**labels, **extra, "hca": "mlx5_0", "instance": "10.16.0.1:9735", "job": "fabric"}
    body = ",".join(f'{k}="{v}"' for k, v in lab.items())
    return {"series": f"{metric}{{{body}}}", "values": values}


def descriptions() -> dict[str, str]:
    doc = yaml.safe_load(rules(stack_layout("lab")))
    return {r["alert"]: r["annotations"]["description"] for g in doc["groups"] for r in g["rules"] if "alert" in r}


def alert(name: str, at: str, *fired: tuple[dict, str]) -> dict:
    """`fired`: (labels, summary) of each alert expected at `at`; none means it must stay silent."""
    desc = descriptions()[name]
    return {"eval_time": at, "alertname": name,
            "exp_alerts": [{"exp_labels": lab, "exp_annotations": {"summary": summ, "description": desc}}
                           for lab, summ in fired]}


def full(labels: dict, severity: str, **extra) -> dict:
    """Labels of an alert that keeps its series' labels."""
    return {**labels, **extra, "hca": "mlx5_0", "instance": "10.16.0.1:9735", "job": "fabric", "severity": severity}


def nic_only(labels: dict, severity: str, **extra) -> dict:
    """Labels of an alert aggregated `by` the NIC's layout labels."""
    return {**{k: labels[k] for k in NIC_KEYS}, **extra, "severity": severity}


def unit_tests() -> list[dict]:
    a, b, c, d = (nic(f"su01-node0{i}", 0) for i in range(1, 5))
    m = "superpod_fabric_"
    tests = []
    # PFC storm: a paused 60 % of the time (0.6 s/s), b 30 %
    tests.append({"interval": "15s", "input_series": [
        series(m + "pause_duration_seconds_total", a, "0+9x40", direction="rx", priority="3"),
        series(m + "pause_duration_seconds_total", b, "0+4.5x40", direction="rx", priority="3")],
        "alert_rule_test": [alert("FabricPfcStorm", "1m"),  # not yet: `for` 2m
                            alert("FabricPfcStorm", "5m", (nic_only(a, "critical", direction="rx", priority="3"),
                                   f"PFC storm on {WHERE_A}: rx priority 3 paused 60% of the time"))]})
    # NIC watchdog: a's tx_pause_storm_error_events steps, b's stays
    tests.append({"interval": "1m", "input_series": [
        series(m + "pause_storm_events_total", a, "0 0 1 1 1", level="error"),
        series(m + "pause_storm_events_total", b, "0x5", level="error"),
        series(m + "pause_storm_events_total", b, "0 1 2 3 4", level="warning")],
        "alert_rule_test": [alert("FabricNicPfcWatchdog", "3m", (
            full(a, "critical", level="error"), f"NIC PFC watchdog stopped pause transmission on {WHERE_A}"))]})
    # pause across a leaf: 3 of rail 0's 4 ports paused 10 %; on rail 1 only 1 of 4
    rail1 = [nic(f"su01-node0{i}", 1) for i in range(1, 5)]
    tests.append({"interval": "15s", "input_series": [
        *(series(m + "pause_duration_seconds_total", x, "0+1.5x60", direction="rx", priority="3") for x in (a, b, c)),
        series(m + "pause_duration_seconds_total", d, "0x60", direction="rx", priority="3"),
        series(m + "pause_duration_seconds_total", rail1[0], "0+1.5x60", direction="rx", priority="3"),
        *(series(m + "pause_duration_seconds_total", x, "0x60", direction="rx", priority="3") for x in rail1[1:])],
        "alert_rule_test": [alert("FabricPausePropagationAcrossLeaf", "10m", (
            {"su": "su01", "leaf": "su01-leaf-rail0", "severity": "critical"},
            "Pause spreading across su01-leaf-rail0 (su01): 75% of its node ports paused"))]})
    # one rail marking/notifying 10x its peers (5000/s vs 500/s); a quiet SU su02 with all rails equal
    rails = [nic("su01-node01", r) for r in range(4)]
    quiet = [nic("su02-node01", r, su="su02") for r in range(4)]
    imb = []
    for metric, extra in (("ecn_marked_packets_total", {"traffic": "roce"}), ("cnp_sent_total", {})):
        imb += [series(m + metric, x, "0+7500x60", **extra) for x in rails[:3] + quiet]
        imb.append(series(m + metric, rails[3], "0+75000x60", **extra))
    tests.append({"interval": "15s", "input_series": imb, "alert_rule_test": [
        alert("FabricRailEcnImbalance", "13m", ({"su": "su01", "rail": "3", "severity": "warning"},
                                                "Rail 3 of su01 sees ECN marks at 5k/s, over 4x its peer rails")),
        alert("FabricRailCnpImbalance", "13m", ({"su": "su01", "rail": "3", "severity": "warning"},
                                                "Rail 3 of su01 sends CNPs at 5k/s, over 4x its peer rails"))]})
    # link flap on a, none on b; a rail at 200G of 400G planned, b at 400G, a storage NIC at its 200G
    st = nic("su01-node01", None, kind="storage")
    tests.append({"interval": "1m", "input_series": [
        series(m + "link_down_events_total", a, "2 2 3 3 3"), series(m + "link_down_events_total", b, "2x5"),
        series(m + "link_speed_bits_per_second", a, "200e9x10"),
        series(m + "link_speed_bits_per_second", b, "400e9x10"),
        series(m + "link_speed_bits_per_second", st, "200e9x10")],
        "alert_rule_test": [
            alert("FabricLinkFlap", "3m", (full(a, "warning"), f"Link flap on {WHERE_A}: 1 down events in 10 minutes")),
            alert("FabricLinkBelowPlannedSpeed", "7m",
                  (full(a, "warning"), f"Link {WHERE_A} runs at 200Gb/s, below the plan"))]})
    # rail link down (a), NIC missing (c), healthy (b, d)
    tests.append({"interval": "1m", "input_series": [
        series(m + "link_up", a, "0x5"), series(m + "link_up", b, "1x5"),
        series(m + "nic_present", c, "0x5"), series(m + "nic_present", d, "1x5")],
        "alert_rule_test": [alert("FabricRailLinkDown", "3m",
                                  (full(a, "critical"), f"Rail link down or NIC missing: {WHERE_A}"),
                                  (full(c, "critical"), "Rail link down or NIC missing: su01-node03 enp0np0 (rail 0, "
                                                        "su01-leaf-rail0 swp3)"))]})
    # out-of-sequence climbing on a, steady on b; a source unreadable on a, readable on b
    tests.append({"interval": "1m", "input_series": [
        series(m + "out_of_sequence_total", a, "0+40x20"), series(m + "out_of_sequence_total", b, "5x20"),
        series(m + "source_up", a, "0x20", source="hw_counters"), series(m + "source_up", b, "1x20", source="ethtool")],
        "alert_rule_test": [alert("FabricRoceOutOfSequence", "16m",
                                  (nic_only(a, "warning"), f"RoCE packets out of sequence on {WHERE_A}")),
                            alert("FabricTelemetrySourceDown", "12m", (
                                full(a, "info", source="hw_counters"),
                                "Fabric telemetry cannot read hw_counters on su01-node01 enp0np0"))]})
    # recording rules: per-rail sums and the leaf's paused share
    tests.append({"interval": "15s", "input_series": [
        series(m + "cnp_sent_total", a, "0+1500x20"), series(m + "cnp_sent_total", b, "0+3000x20"),
        series(m + "pause_duration_seconds_total", a, "0+3x20", direction="rx", priority="3"),
        series(m + "pause_duration_seconds_total", b, "0x20", direction="rx", priority="3")],
        "promql_expr_test": [
            {"expr": "su_rail:superpod_fabric_cnp_sent:rate1m", "eval_time": "4m",
             "exp_samples": [{"labels": 'su_rail:superpod_fabric_cnp_sent:rate1m{rail="0",su="su01"}', "value": 300}]},
            {"expr": "leaf:superpod_fabric_paused_ports:count1m", "eval_time": "4m",
             "exp_samples": [{"labels": 'leaf:superpod_fabric_paused_ports:count1m{leaf="su01-leaf-rail0",su="su01"}',
                              "value": 1}]},
            {"expr": "leaf:superpod_fabric_rx_pause_ratio:avg1m", "eval_time": "4m",
             "exp_samples": [{"labels": 'leaf:superpod_fabric_rx_pause_ratio:avg1m{leaf="su01-leaf-rail0",su="su01"}',
                              "value": 0.1}]}]})
    return tests


def test_rules_shape_and_every_alert_tested():
    doc = yaml.safe_load(rules(stack_layout("lab")))
    alerts = {r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r}
    tested = {t["alertname"] for u in unit_tests() for t in u.get("alert_rule_test", [])}
    assert alerts == tested
    for g in doc["groups"]:
        for r in g["rules"]:
            if "alert" in r:
                assert r["labels"]["severity"] in {"info", "warning", "critical"} and r["annotations"]["summary"]


@pytest.mark.skipif(not PROMTOOL, reason="promtool not installed")
def test_rules_promtool_unit_tests(tmp_path):
    (tmp_path / "fabric_rules.yml").write_text(rules(stack_layout("lab")))
    check = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "fabric_rules.yml")], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["fabric_rules.yml"], "evaluation_interval": "15s",
                                                       "tests": unit_tests()}, sort_keys=False))
    out = subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "test.yml")], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]


def test_targets_and_gnmic_from_the_layout(tmp_path):
    layout = stack_layout("lab")
    files = render_telemetry(layout, tmp_path)
    targets = json.loads(files[tmp_path / "telemetry" / "fabric_targets.json"])
    nodes = {d.name: d for d in layout.devices if d.role == "gpu_node"}
    inband = {a.device: a.address.split("/")[0] for a in layout.addresses if a.pool == "inband"}
    assert {t["labels"]["node"] for t in targets} == set(nodes)
    for t in targets:
        n = nodes[t["labels"]["node"]]
        assert t["targets"] == [f"{inband[n.name]}:{EXPORTER_PORT}"]
        assert t["labels"]["su"] == f"su{n.su:02d}" and t["labels"]["rack"] == n.rack
    gnmic = yaml.safe_load(files[tmp_path / "telemetry" / "gnmic.yml"])
    leaves = [d.name for d in layout.devices if d.role == "leaf"]
    names = {v["name"] for v in gnmic["targets"].values()}
    assert set(leaves) <= names
    assert all(k.endswith(f":{GNMI_PORT}") for k in gnmic["targets"])
    assert "password" not in json.dumps(gnmic).replace('"password": "{{ env \\"GNMIC_PASSWORD\\" }}"', "")


def test_infiniband_pod_gets_no_roce_telemetry(tmp_path):
    assert render_telemetry(stack_layout("dgx-h100-ib"), tmp_path) == {}


def test_roce_8k_rules_and_dashboard_stay_small(tmp_path):
    layout = stack_layout("roce-8k")
    text = rules(layout)
    assert len(text) < 16_000  # aggregated by labels: the same size as the lab's
    board = json.loads(dashboard(layout))
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert len(variables["leaf"]["options"]) == sum(1 for d in layout.devices if d.role == "leaf")
    assert [o["value"] for o in variables["rail"]["options"]] == [str(r) for r in range(8)]
    assert len(json.dumps(board)) < 100_000
    if PROMTOOL:
        (tmp_path / "r.yml").write_text(text)
        out = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "r.yml")], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name", ["su01-leaf-rail0", "yes", "null", "10:20", "1.5", "2026-01-01", "0x1f", "-x",
                                  "---x", ".inf", "a b", "x:", "x: y", "#x", "é", "a" * 130, "~"])
@pytest.mark.parametrize("su", ["", "su01", "no"])
def test_gnmic_targets_written_as_yaml_dump_writes_them(name: str, su: str) -> None:
    """The targets' fixed-shape text is yaml.dump's, whatever the scalars: those it would quote
    (booleans, numbers, times, indicators, long keys) send the whole mapping to yaml.dump."""
    targets = {f"10.20.0.{i}:{GNMI_PORT}": {"name": f"{name}{i}" if i else name,
                                            "event-tags": {"switch": name, "role": "leaf", "su": su, "model": name}}
               for i in range(3)}
    for t in ({}, targets, {name: targets[f"10.20.0.0:{GNMI_PORT}"]}):
        assert gnmic_targets_yaml(t) == yaml.dump({"targets": t}, Dumper=DUMPER, sort_keys=False)


@pytest.mark.parametrize("targets", [[], [("10.0.0.1:9735", "su01-node01", "su01", "rack-a01")],
                                     [("a:1", 'n"\\é\n', "", None), ("b:2", "x", "su02", "rack-b07")]])
def test_file_sd_written_as_an_indented_dump(targets: list[tuple]) -> None:
    """The scrape targets' fixed-shape text is json.dumps(indent=1)'s, escapes and nulls included."""
    groups = [{"targets": [t], "labels": {"node": n, "su": su, "rack": r}} for t, n, su, r in targets]
    assert file_sd_json(targets) == json.dumps(groups, indent=1) + "\n"
