"""`superpod plan`, `diff`, `schema` as a user runs them; bad input names field and rule."""

from __future__ import annotations

import csv
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import ROOT, stack_layout
from topology.cli import app

runner = CliRunner()


def plan(*args):
    return runner.invoke(app, ["plan", *args], catch_exceptions=False)


def test_plan_writes_artifacts_and_summary(tmp_path):
    out = tmp_path / "out"
    result = plan("--stack", "roce-1k", "-C", str(ROOT), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "128 nodes, 1024 GPUs" in result.output
    names = {p.name for p in out.iterdir()}
    assert {"devices.csv", "cabling.csv", "ipplan.csv", "asns.csv", "racks.csv", "layout.json", "inventory"} <= names
    cables = list(csv.DictReader((out / "cabling.csv").open()))
    assert len(cables) == len(stack_layout("roce-1k").links) + len(stack_layout("roce-1k").border_links)
    assert {"a_device", "a_port", "b_device", "b_port", "kind", "speed_gbps", "length_class"} <= set(cables[0])
    devices = list(csv.DictReader((out / "devices.csv").open()))
    assert {"name", "role", "model", "su", "rack"} <= set(devices[0])
    assert {d["role"] for d in devices} >= {"gpu_node", "leaf", "spine", "storage_leaf", "storage_spine",
                                            "inband_switch", "oob_switch"}
    doc = json.loads((out / "layout.json").read_text())
    assert doc["spec"]["name"] == "roce-1k"
    assert len(doc["links"]["rows"]) + len(doc["border_links"]["rows"]) == len(cables)
    # a second plan rewrites nothing
    again = plan("--stack", "roce-1k", "-C", str(ROOT), "--out", str(out))
    assert "wrote 0 of" in again.output


def test_ipplan_joins_cabling_by_port_name(tmp_path):
    out = tmp_path / "out"
    assert plan("--stack", "lab", "-C", str(ROOT), "--out", str(out)).exit_code == 0
    addresses = {(r["device"], r["interface"]): r for r in csv.DictReader((out / "ipplan.csv").open())}
    joined = 0
    for cable in csv.DictReader((out / "cabling.csv").open()):
        if cable["kind"] in ("node-leaf", "leaf-spine"):
            a = addresses[(cable["a_device"], cable["a_port"])]
            b = addresses[(cable["b_device"], cable["b_port"])]
            assert a["network"] == b["network"] and a["network"].endswith("/31")
            joined += 1
    assert joined == 64


def test_plan_spec_file_and_json_summary(tmp_path):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = plan("--spec", str(path), "--out", str(tmp_path / "o"), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["gpus"] == 32 and summary["switches"]["leaf"] == 8


BAD = [
    ({"colour": "red"}, "colour", "unknown key"),
    ({"compute_fabric": {"kind": "roce", "switch_model": "sn9999"}}, "compute_fabric.switch_model", "unknown switch"),
    ({"node_model": "dgx-z1"}, "node_model", "unknown node model"),
    ({"nodes_per_su": 40}, "nodes_per_su", "exceed the leaf's 64 ports"),
    ({"scalable_units": 3, "max_scalable_units": 2}, "max_scalable_units", "must not be below"),
    ({"scalable_units": 0}, "scalable_units", "greater than 0"),
    ({"nodes_per_su": -4}, "nodes_per_su", "greater than 0"),
    ({"nodes_per_su": 32, "compute_fabric": {"kind": "roce", "switch_model": "sn5400", "oversubscription": "3:2"}},
     "compute_fabric.oversubscription", "not a whole number of ports"),
    ({"nodes_per_su": 32, "compute_fabric": {"kind": "roce", "switch_model": "sn5400", "spine_count": 12}},
     "compute_fabric.spine_count", "cannot share each leaf's 32 uplinks evenly"),
    ({"compute_fabric": {"kind": "roce", "switch_model": "qm9700"}}, "compute_fabric.switch_model",
     "a roce fabric needs ethernet"),
    ({"compute_fabric": {"kind": "roce", "switch_model": "sn5400", "fabric_manager": True}},
     "compute_fabric.fabric_manager", "InfiniBand"),
    ({"addressing": {"rails": "100.64.0.0/28"}}, "addressing.rails", "the end state"),
    ({"addressing": {"oob": "10.16.0.0/16"}}, "addressing.inband", "overlaps addressing.oob"),
    ({"racks": {"power_budget_kw": 8}}, "racks.power_budget_kw", "cannot hold one"),
]


@pytest.mark.parametrize("change,field,rule", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_input_names_field_and_rule_and_writes_nothing(tmp_path, change, field, rule):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    for k, v in change.items():
        spec[k] = {**spec[k], **v} if isinstance(v, dict) and isinstance(spec.get(k), dict) else v
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    result = plan("--spec", str(path), "--out", str(out))
    assert result.exit_code == 2
    assert f"{field}:" in result.output and rule in result.output, result.output
    assert not out.exists()


def test_malformed_yaml(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("name: lab\nnode_model: [unclosed\n")
    result = plan("--spec", str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "malformed YAML at line" in result.output
    assert not (tmp_path / "out").exists()


def test_failed_plan_leaves_previous_artifacts_untouched(tmp_path):
    out = tmp_path / "out"
    assert plan("--stack", "lab", "-C", str(ROOT), "--out", str(out)).exit_code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"] | {"nodes_per_su": 99}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    assert plan("--spec", str(tmp_path / "bad.yaml"), "--out", str(out)).exit_code == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_diff_lists_growth(tmp_path):
    for name, sus in (("small", 1), ("big", 2)):
        spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
        spec.update(scalable_units=sus, max_scalable_units=2)
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["diff", str(tmp_path / "small.yaml"), str(tmp_path / "big.yaml"), "--limit", "0"])
    assert result.exit_code == 1
    assert "devices: +" in result.output and "-0 ~0" in result.output  # growth only adds
    assert "+ su02-node01 (gpu_node)" in result.output
    same = runner.invoke(app, ["diff", "lab", "lab", "-C", str(ROOT)])
    assert same.exit_code == 0


def test_schema_is_json_schema():
    result = runner.invoke(app, ["schema"])
    schema = json.loads(result.output)
    assert schema["additionalProperties"] is False
    assert {"name", "node_model", "scalable_units", "nodes_per_su", "compute_fabric"} <= set(schema["required"])


def test_stack_dir_copy_plans_into_inventories(tmp_path):
    shutil.copy(ROOT / "Pulumi.lab.yaml", tmp_path)
    result = plan("--stack", "lab", "-C", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "inventories" / "lab" / "hosts.yml").is_file()
    assert (tmp_path / "build" / "lab" / "cabling.csv").is_file()


def test_spec_naming_a_folder_or_fifo_says_what_it_is(tmp_path):
    fifo = tmp_path / "pod.fifo"
    os.mkfifo(fifo)  # opening it would block: the CLI must refuse it before reading
    for path, rule in ((tmp_path, "is a directory, not a spec file"),
                       (fifo, "is not a regular file"),
                       (tmp_path / "missing.yaml", "no such file")):
        result = plan("--spec", str(path), "--out", str(tmp_path / "o"))
        assert result.exit_code == 2 and "--spec" in result.output and rule in result.output, result.output
    assert not (tmp_path / "o").exists()


def test_thousands_of_errors_print_the_first_fifty_and_a_count(tmp_path):
    spec = yaml.safe_load((ROOT / "Pulumi.lab.yaml").read_text())["config"]["superpod:pod"]
    spec.update({f"stray{i}": 1 for i in range(5000)})
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = plan("--spec", str(path), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert result.output.count("unknown key") == 50 and "... and 4950 more errors" in result.output


def test_version_short_help_and_unwrapped_output_when_not_a_terminal(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "topology.cli", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"superpod {importlib.metadata.version('superpod')}"
    assert run("-h").returncode == 0 and "Usage" in run("plan", "-h").stdout
    out = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-once-the-line-prefix-is-added" * 2)
    result = run("plan", "--stack", "lab", "--out", str(out))  # stdout is a pipe, not a terminal
    assert result.returncode == 0, result.stderr
    assert f"{out}/ and {out}/inventory/" in result.stdout  # one line, never cut at 80 columns


def test_an_error_under_json_is_json_on_stdout(tmp_path):
    result = plan("--spec", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o"), "--json")
    assert result.exit_code == 2
    first = result.output[:result.output.index("\nerror:")] if "\nerror:" in result.output else result.output
    assert json.loads(first) == {"ok": False, "errors": [
        {"field": "--spec", "rule": f"no such file {tmp_path / 'missing.yaml'}"}]}
