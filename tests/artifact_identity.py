"""Every artifact of the example stacks and a bench pod, hashed: the record that a refactor of
topology/ changed no byte of what a plan writes (tests/test_artifact_identity.py).

The record is rewritten only on purpose: `python -m tests.artifact_identity --write` (after a change
meant to alter rendered output, say so in the commit)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "tests" / "artifact_manifest" / "manifest.json"
STACKS = ("lab", "dgx-h100-ib", "roce-1k", "roce-8k")
BENCH_PODS = ("1k",)  # bench/bench_plan.py's cases that plan in seconds
OUT, INV = Path("/plan/out"), Path("/plan/inventory")  # rendered, never written: paths only name the files


def stack_spec(stack: str):
    from topology.cli import use_catalogs
    from topology.spec import load_stack_file

    path = ROOT / f"Pulumi.{stack}.yaml"
    use_catalogs(path)
    return load_stack_file(str(path))


def bench_spec(label: str):
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_plan import CASES

    from topology.cli import use_catalogs
    from topology.spec import parse

    use_catalogs(None)
    return parse(dict(CASES)[label])


def artifacts(spec) -> Iterator[tuple[str, bytes]]:
    """What `superpod plan --report --json` writes for the spec, as (relative path, bytes)."""
    from topology.layout.build import build
    from topology.render.artifacts import iter_artifacts
    from topology.render.report import render_report
    from topology.render.summary import summary

    layout = build(spec)
    for path, text in iter_artifacts(layout, OUT, INV):
        yield str(path.relative_to("/plan")), text.encode()
    for path, text in render_report(layout, OUT).items():
        yield str(path.relative_to("/plan")), text if isinstance(text, bytes) else text.encode()
    yield "summary.json", json.dumps(summary(layout), indent=1, sort_keys=True, default=str).encode()


def hashes(spec) -> dict[str, str]:
    return {path: hashlib.sha256(data).hexdigest() for path, data in sorted(artifacts(spec))}


def lab_sonic_spec():
    """The lab with SONiC in-band switches: the SONiC writers' ConfigDB and frr.conf."""
    from tests.conftest import spec_with

    return spec_with("lab", management={"inband": {"switch_os": "sonic", "core_switch_model": "sn5400"}})


def bench_100k_shape_spec():
    """The 100k bench pod's shape (SN5600 leaves, 64 racks a row, one OOB aggregation uplink) at 1k GPUs."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_plan import pod

    from topology.cli import use_catalogs
    from topology.spec import parse

    use_catalogs(None)
    return parse(pod(1024, "sn5600", 64, racks_per_row=64, aggregation_uplinks=1))


def cases() -> dict[str, object]:
    """Case name -> a function giving its spec (called late: catalogs are set per case)."""
    return {**{f"stack:{s}": (lambda s=s: stack_spec(s)) for s in STACKS},
            **{f"bench:{b}": (lambda b=b: bench_spec(b)) for b in BENCH_PODS},
            "variant:lab-sonic": lab_sonic_spec, "bench:100k-shape-1k": bench_100k_shape_spec}


def current() -> dict[str, dict[str, str]]:
    return {name: hashes(spec()) for name, spec in cases().items()}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.artifact_identity --write   (rewrites the record: only on purpose)")
    MANIFEST.write_text(json.dumps(current(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {MANIFEST}")
