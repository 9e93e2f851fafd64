"""A site's own catalog file layered over the packaged one (issue 37): `--catalog FILE` or a
stack's `superpod:catalog` adds or overrides models, held to the same models and sources as the
packaged catalog; `superpod schema` lists the models."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT, stack_spec
from topology import catalog
from topology.cli import app

runner = CliRunner()
PACKAGED = yaml.safe_load((ROOT / "topology" / "data" / "catalog.yaml").read_text())


@pytest.fixture(autouse=True)
def packaged_catalog_after():
    yield
    catalog.use_overlays([])  # the CLI leaves its overlays active in this process: later tests see the package's


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def lab_spec(**changes):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    for k, v in changes.items():
        spec[k] = {**spec[k], **v} if isinstance(v, dict) and isinstance(spec.get(k), dict) else v
    return spec


def site_overlay(tmp_path):
    """A leaf model of the site's own (the packaged SN5400's facts under another name and source)
    and a node model drawing more power than the packaged one."""
    compute = lab_spec()["compute_fabric"]["switch_model"]
    node = lab_spec()["node_model"]
    switch = {**PACKAGED["switches"][compute], "source": "site: our SN5400 build, data sheet rev B"}
    hot = {**PACKAGED["nodes"][node], "power_kw": PACKAGED["nodes"][node]["power_kw"] + 1.0}
    return write(tmp_path / "site-catalog.yaml", {"switches": {"site-leaf": switch}, "nodes": {"site-node": hot}}), \
        compute, node


def test_an_overlay_adds_models_a_spec_can_use(tmp_path):
    overlay, compute, node = site_overlay(tmp_path)
    spec = write(tmp_path / "pod.yaml", lab_spec(node_model="site-node",
                                                 compute_fabric={"switch_model": "site-leaf"}))
    out = tmp_path / "out"
    without = runner.invoke(app, ["plan", "--spec", str(spec), "--out", str(out)])
    assert without.exit_code == 2 and "unknown node model 'site-node'" in without.output
    result = runner.invoke(app, ["plan", "--spec", str(spec), "--out", str(out), "--catalog", str(overlay)])
    assert result.exit_code == 0, result.output
    devices = list(csv.DictReader((out / "devices.csv").open()))
    assert {d["model"] for d in devices if d["role"] == "leaf"} == {"site-leaf"}
    nodes = [d for d in devices if d["role"] == "gpu_node"]
    assert nodes and {d["model"] for d in nodes} == {"site-node"}
    assert {float(d["power_kw"]) for d in nodes} == {PACKAGED["nodes"][node]["power_kw"] + 1.0}


def test_a_stack_names_its_catalog(tmp_path):
    overlay, _, _ = site_overlay(tmp_path)
    stack = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())
    stack["config"]["superpod:catalog"] = overlay.name  # relative to the stack file
    stack["config"]["superpod:pod"]["compute_fabric"]["switch_model"] = "site-leaf"
    write(tmp_path / "Pulumi.lab.yaml", stack)
    result = runner.invoke(app, ["plan", "--stack", "lab", "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "site-leaf" in (tmp_path / "build" / "lab" / "devices.csv").read_text()


@pytest.mark.parametrize("overlay,field,rule", [
    ({"switches": {"bad": {**PACKAGED["switches"]["sn2201"], "source": None}}}, "switches.bad.source",
     "valid string"),
    ({"switches": {"bad": {k: v for k, v in PACKAGED["switches"]["sn2201"].items() if k != "source"}}},
     "switches.bad.source", "Field required"),
    ({"switches": {"bad": {**PACKAGED["switches"]["sn2201"], "colour": "red"}}}, "switches.bad.colour",
     "Extra inputs are not permitted"),
    ({"switchs": {}}, "switchs", "did you mean 'switches'?"),
    ({"nodes": ["not", "a", "mapping"]}, "nodes", "must be a mapping"),
])
def test_a_bad_overlay_names_file_field_and_rule_and_writes_nothing(tmp_path, overlay, field, rule):
    path = write(tmp_path / "bad-catalog.yaml", overlay)
    out = tmp_path / "out"
    result = runner.invoke(app, ["plan", "--stack", "lab", "-C", str(ROOT), "--out", str(out), "--catalog", str(path)])
    assert result.exit_code == 2
    assert f"{path}: {field}:" in result.output and rule in result.output, result.output
    assert not out.exists()


def test_a_missing_catalog_file_is_named():
    result = runner.invoke(app, ["plan", "--stack", "lab", "-C", str(ROOT), "--catalog", "/nonexistent/cat.yaml",
                                 "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["errors"][0]
    assert error == {"field": "--catalog", "rule": "no such file /nonexistent/cat.yaml"}


def test_schema_lists_the_models_with_the_overlay(tmp_path):
    plain = json.loads(runner.invoke(app, ["schema"]).stdout)
    assert plain["properties"]["node_model"]["enum"] == sorted(PACKAGED["nodes"])
    assert plain["$defs"]["ComputeFabric"]["properties"]["switch_model"]["enum"] == sorted(PACKAGED["switches"])
    overlay, _, _ = site_overlay(tmp_path)
    layered = json.loads(runner.invoke(app, ["schema", "--catalog", str(overlay)]).stdout)
    assert layered["properties"]["node_model"]["enum"] == sorted([*PACKAGED["nodes"], "site-node"])
    assert "site-leaf" in layered["$defs"]["Oob"]["properties"]["switch_model"]["enum"]


def test_an_overlay_overrides_a_packaged_model(tmp_path):
    oob = stack_spec("lab").management.oob.switch_model
    heavier = {**PACKAGED["switches"][oob], "power_kw": 0.5, "source": "site: measured at the PDU outlet"}
    overlay = write(tmp_path / "o.yaml", {"switches": {oob: heavier}})
    shutil.copy(ROOT / "Pulumi.lab.yaml", tmp_path)
    result = runner.invoke(app, ["plan", "--stack", "lab", "-C", str(tmp_path), "--catalog", str(overlay)])
    assert result.exit_code == 0, result.output
    rows = [d for d in csv.DictReader((tmp_path / "build" / "lab" / "devices.csv").open()) if d["role"] == "oob_switch"]
    assert rows and {float(d["power_kw"]) for d in rows} == {0.5}
