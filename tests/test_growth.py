"""Growth never moves installed gear without saying so (issue 37): adding a scalable unit within
max_scalable_units moves nothing; adding storage servers re-packs the pod-wide racks, so `plan`
refuses, names the spec field and what would move, and writes nothing, unless --allow-moves."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT, spec_with, stack_spec
from topology.cli import CATALOGS, app
from topology.layout.build import build
from topology.layout.growth import changed_fields, moves
from topology.layout.plan_reader import read_plan
from topology.render.layout_json import layout_json

runner = CliRunner()


def spec_file(tmp_path, name, **changes):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    for k, v in changes.items():
        spec[k] = {**spec[k], **v} if isinstance(v, dict) else v
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("stack", ["lab", "roce-1k"])
def test_an_su_within_max_scalable_units_moves_nothing(stack, tmp_path):
    base = stack_spec(stack)
    end = base.max_su + 1
    small = build(spec_with(stack, max_scalable_units=end))
    grown = build(spec_with(stack, scalable_units=base.scalable_units + 1, max_scalable_units=end))
    assert len(grown.devices) > len(small.devices)
    (tmp_path / "layout.json").write_text(layout_json(small))
    assert moves(read_plan(tmp_path / "layout.json"), grown) == []


def test_more_storage_servers_is_refused_naming_the_field_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    first = spec_file(tmp_path, "first")
    assert runner.invoke(app, ["plan", "--spec", str(first), "--out", str(out)]).exit_code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    n = stack_spec("lab").storage_fabric.storage_servers
    grown = spec_file(tmp_path, "grown", storage_fabric={"storage_servers": n + 8})
    refused = runner.invoke(app, ["plan", "--spec", str(grown), "--out", str(out)])
    assert refused.exit_code == 2
    assert "error: storage_fabric.storage_servers: moves gear the plan in" in refused.output
    # what moved is read from the two layouts, not from the message's own words
    expected = moves(read_plan(out / "layout.json"), build(yaml_spec(grown)))
    assert expected and f"({len(expected)}: {expected[0]}" in refused.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    allowed = runner.invoke(app, ["plan", "--spec", str(grown), "--out", str(out), "--allow-moves"])
    assert allowed.exit_code == 0, allowed.output


def test_growth_refusal_under_json_is_json(tmp_path):
    out = tmp_path / "out"
    assert runner.invoke(app, ["plan", "--spec", str(spec_file(tmp_path, "a")), "--out", str(out)]).exit_code == 0
    grown = spec_file(tmp_path, "b", storage_fabric={"storage_servers": 16})
    result = runner.invoke(app, ["plan", "--spec", str(grown), "--out", str(out), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["errors"][0]["field"] == "storage_fabric.storage_servers"


def test_changed_fields_are_dotted_paths():
    assert changed_fields({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 5, "d": 3}, "e": 0}) == ["b.c", "e"]


def yaml_spec(path):
    from topology.spec import load_spec_file

    return load_spec_file(str(path))


def test_the_same_spec_over_a_changed_catalog_that_moves_gear_is_refused(tmp_path):
    # The spec alone does not decide the layout: a catalog overlay (a taller node model) moves
    # installed gear with the spec unchanged. The guard compares the layouts, never just the specs.
    from topology import catalog

    node = stack_spec("lab").node_model
    packaged = yaml.safe_load((ROOT / "topology" / "data" / "catalog.yaml").read_text())
    taller = {**packaged["nodes"][node], "rack_units": packaged["nodes"][node]["rack_units"] + 1}
    overlay = tmp_path / "site-catalog.yaml"
    overlay.write_text(yaml.safe_dump({"nodes": {node: taller}}))
    out, spec = tmp_path / "out", spec_file(tmp_path, "pod")
    try:
        assert runner.invoke(app, ["plan", "--spec", str(spec), "--out", str(out)]).exit_code == 0
        catalog.use_overlays([overlay])
        expected = moves(read_plan(out / "layout.json"), build(yaml_spec(spec)))
        assert expected  # the overlay does move gear: the layouts say so
        refused = runner.invoke(app, ["plan", "--spec", str(spec), "--out", str(out), "--catalog", str(overlay)])
    finally:  # `plan --catalog` layers the overlay for the commands after it in this process too
        catalog.use_overlays([])
        CATALOGS.set(())
    assert refused.exit_code == 2, refused.output
    assert f"moves gear the plan in {out} placed ({len(expected)}: {expected[0]}" in refused.output
