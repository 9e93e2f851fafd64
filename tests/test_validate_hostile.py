"""`superpod validate` on hostile discovery files: every one ends in a clear error naming the file
(exit 2) or a report (exit 0/1), never a traceback; nothing a neighbor sends reaches the terminal
raw; a huge file is refused before it is read whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import validate_records as rec
from tests.conftest import stack_layout
from topology.cli import app

runner = CliRunner()
GOOD = {"lldp": {"interface": {"swp1": {"chassis": {"su01-node01": {"id": {"type": "mac", "value": "x"}}},
                                         "port": {"id": {"type": "ifname", "value": "enp24s0np0"}}}}}}

# (file name, content): each a shape a broken collector, a disk fault or a hostile neighbor can give
HOSTILE = [
    ("su01-leaf-rail0.json", "[" * 100_000 + "]" * 100_000),  # deep nesting
    ("su01-leaf-rail0.json", '{"lldp": ' * 5000 + "1" + "}" * 5000),
    ("su01-leaf-rail0.json", '{"lldp": {"interface": {"swp1": {"port": {"id": "' + "9" * 5000 + '"}}}}}'),
    ("su01-leaf-rail0.json", '{"lldp": {"interface": {"swp1": {"chassis": [1, "x", null], "port": {"id": "x"}}}}}'),
    ("su01-leaf-rail0.json", '{"lldp": {"interface": {"swp1": {"chassis": {"n": {}}, "port": [{"id": [7]}]}}}}'),
    ("su01-leaf-rail0.json", '{"lldp": {"interface": [{"name": {"a": 1}, "chassis": {"name": []}, "port": 3}]}}'),
    ("su01-leaf-rail0.json", '{"lldp": {"interface": {"swp1": {"chassis": {"n": {"id": 1}}, '
                             '"port": {"id": {"type": "ifname", "value": {"deep": [1]}}, '
                             '"auto-negotiation": {"current": 400}}}}}}'),
    ("su01-leaf-rail0.json", '{"lldp": [[[]]], "x": NaN}'),
    ("su01-leaf-rail0.json", "\xff\xfe not utf-8"),
    ("su01-leaf-rail0.json", '"just a string"'),
    ("su01-leaf-rail0.ports.json", "[1, 2, 3]"),
    ("su01-leaf-rail0.ports.json", '{"swp1": "up"}'),
    ("su01-leaf-rail0.ports.json", '{"swp1": {"up": true, "speed_mbps": ' + "9" * 5000 + "}}"),
    ("su01-leaf-rail0.ports.json", '{"swp1": {"up": "yes", "speed_mbps": 1e400}}'),
    ("ufm.ibnetdiscover", "Switch 36 \"S-" + "f" * 16 + "\" # \"x\"\n[1] \"H-" + "9" * 5000 + "\"[1] # \"y\"\n"),
    ("ufm.ibnetdiscover", "\x00\x01\x02" * 1000),
]


@pytest.fixture(scope="module")
def lab_plan(tmp_path_factory) -> Path:
    return rec.write_plan(stack_layout("lab"), tmp_path_factory.mktemp("plan"))


def run(plan: Path, folder: Path, *extra: str):
    return runner.invoke(app, ["validate", "--stack", "lab", "--plan-dir", str(plan), "--from", str(folder), *extra])


@pytest.mark.parametrize("name,content", HOSTILE, ids=[f"{i}-{h[0]}" for i, h in enumerate(HOSTILE)])
def test_hostile_discovery_file_gives_an_error_or_a_report_never_a_traceback(lab_plan, tmp_path, name, content):
    folder = tmp_path / "from"
    folder.mkdir()
    (folder / name).write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    (folder / "su01-node01.json").write_text(json.dumps(GOOD))
    result = runner.invoke(app, ["validate", "--stack", "lab", "--plan-dir", str(lab_plan), "--from", str(folder)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        assert name in result.output, result.output  # the error names the file


def test_escape_sequences_from_a_neighbor_never_reach_the_terminal(lab_plan, tmp_path):
    folder = tmp_path / "from"
    folder.mkdir()
    evil = "\x1b]0;owned\x07\x1b[2J\x1b[31mleaf"
    doc = {"lldp": {"interface": {"enp24s0np0": {"chassis": {evil: {"id": {"type": "mac", "value": "x"}}},
                                                 "port": {"id": {"type": "ifname", "value": "swp9\x1b[0m"}}}}}}
    (folder / "su01-node01.json").write_text(json.dumps(doc))
    for extra in ((), ("--json",)):
        result = run(lab_plan, folder, *extra)
        assert result.exit_code == 1, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b" in run(lab_plan, folder).output  # shown, escaped, so the operator sees what was sent


def test_a_huge_discovery_file_is_refused_before_it_is_read(lab_plan, tmp_path):
    folder = tmp_path / "from"
    folder.mkdir()
    with (folder / "su01-leaf-rail0.json").open("wb") as f:
        f.truncate(200 * 1024 * 1024)  # sparse: 200 MB on paper, nothing on disk
    result = run(lab_plan, folder)
    assert result.exit_code == 2 and "su01-leaf-rail0.json" in result.output and "MiB" in result.output, result.output
