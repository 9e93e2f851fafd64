"""Every artifact a plan writes, byte for byte: a SHA-256 per file for the example stacks and the
bench pods at small size, so a speed change to a builder or a writer cannot alter an output unseen
(issue 39). The digests were taken from the plan before the change; regenerate them with
UPDATE_GOLDEN=1 only when an output changes on purpose, and say so in the commit."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from bench.bench_plan import pod
from tests.conftest import STACKS, spec_with, stack_layout
from topology.layout.build import build
from topology.render.artifacts import iter_artifacts
from topology.spec import parse

GOLDEN = Path(__file__).parent / "golden" / "plan_digests"
OUT, INV = Path("/plan/out"), Path("/plan/inv")

# the bench pods' shapes (bench/bench_plan.py) at one SU-sized step each: the 100k pod's SN5600
# leaves, 64 racks a row and one OOB aggregation uplink; the 8k pod's SN5400 leaves
BENCH = {"bench-sn5400": pod(1024, "sn5400", 32),
         "bench-sn5600": pod(1024, "sn5600", 64, racks_per_row=64, aggregation_uplinks=1)}
SONIC = {"management": {"inband": {"switch_os": "sonic", "core_switch_model": "sn5400"}}}
CASES = [s for s in STACKS if s != "roce-8k"] + ["lab-sonic", *BENCH]


def _layout(case: str):
    if case in BENCH:
        return build(parse(BENCH[case]))
    if case == "lab-sonic":
        return build(spec_with("lab", **SONIC))
    return stack_layout(case)


def digests(layout) -> dict[str, str]:
    out = {}
    for path, text in iter_artifacts(layout, OUT, INV):
        where = f"out/{path.relative_to(OUT)}" if path.is_relative_to(OUT) else f"inv/{path.relative_to(INV)}"
        out[where] = hashlib.sha256(text.encode()).hexdigest()
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_artifact_is_byte_identical(case):
    got = digests(_layout(case))
    golden = GOLDEN / f"{case}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want), "the set of files changed"
    changed = sorted(name for name in want if got[name] != want[name])
    assert not changed, f"{len(changed)} files differ, first: {changed[:5]} (UPDATE_GOLDEN=1 if intended)"
