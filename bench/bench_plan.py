"""Plan CPU time and peak memory for 1k, 8k, 32k and 100k GPUs (build + streamed render, no disk).

Each case runs in a child process of its own, so its peak RSS is its own: the layout is built,
then every artifact is rendered one at a time, in pieces, as `superpod plan` streams them into the
new generation (topology/render/artifacts.py iter_artifact_pieces), each piece dropped once counted.
Run: .venv/bin/python bench/bench_plan.py [--repeat N] [label ...]
--repeat N runs each case N times, each in a fresh process, and prints the run with the least CPU
(a shared VM's CPU speed swings by a fifth between runs; the least is the code's own cost).
Targets on a 2-core machine (issue 39): 8k GPUs under 1 s CPU, 100k under 10 s and 600 MiB peak,
cost linear in cables. tests/test_artifact_identity.py holds every artifact's bytes fixed while they are chased.
CPU seconds (user + sys) are the figure to compare on a shared machine; wall time is printed beside.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fresh_runs import least_cpu, load_line, repeat_and_names  # noqa: E402
from topology.errors import SpecError  # noqa: E402
from topology.gc_tuning import collector_paused  # noqa: E402
from topology.layout.build import build  # noqa: E402
from topology.render.artifacts import iter_artifact_pieces  # noqa: E402
from topology.render.pieces import pieces_of  # noqa: E402
from topology.spec import parse  # noqa: E402


def pod(gpus: int, switch: str, nodes_per_su: int, max_su: int | None = None,
        racks_per_row: int = 20, aggregation_uplinks: int = 2) -> dict:
    sus = -(-gpus // (8 * nodes_per_su))
    return {
        "name": f"bench-{gpus}", "node_model": "hgx-h100-8x400g", "scalable_units": sus, "nodes_per_su": nodes_per_su,
        "max_scalable_units": max_su or sus,
        "compute_fabric": {"kind": "roce", "switch_model": switch},
        "storage_fabric": {"switch_model": "sn5600", "storage_servers": 64},
        # past one in-band core pair the in-band fabric takes three tiers (MLAG pairs two cores)
        "management": {"inband": {"switch_model": "sn5400", "core_switch_model": "sn5600", "mgmt_nodes": 5},
                       "oob": {"aggregation_uplinks": aggregation_uplinks}},
        "racks": {"racks_per_row": racks_per_row},
        "addressing": {"rails": "100.64.0.0/11", "fabric_p2p": "100.96.0.0/12", "oob": "10.20.0.0/14"},
    }


# past one in-band core pair (8k GPUs and up) the in-band fabric has three tiers. At 100k, rows
# of 20 racks put leaf-spine runs past every medium's reach (500 m): 64 racks a row, and one uplink per
# OOB aggregation switch (206 of them) leaves the three-tier services pair room for the storage servers'
# and UFMs' in-band bonds (topology/layout/inband_services.py).
CASES = [("1k", pod(1024, "sn5400", 32)), ("8k", pod(8192, "sn5400", 32)),
         ("32k", pod(32768, "sn5400", 32)),
         ("100k", pod(100352, "sn5600", 64, racks_per_row=64, aggregation_uplinks=1))]


def artifact(path: Path) -> str:
    """The artifact a file belongs to: a top-level file, or its folder (switches/, inventory/, ...)."""
    parts = path.relative_to("/nonexistent").parts
    if parts[0] == "inv":
        return "inventory/"
    return parts[1] if len(parts) == 2 else parts[1] + "/"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one(label: str) -> dict:
    """One case in this process: build, then the streamed render; figures as a dict."""
    spec = parse(dict(CASES)[label])
    with collector_paused():  # as `superpod plan` does (topology/cli.py)
        c0, t0 = _cpu(), time.perf_counter()
        try:
            layout = build(spec)
        except SpecError as e:  # e.g. a run no medium reaches
            return {"label": label, "refused": str(e)}
        c1 = _cpu()
        sizes: dict[str, int] = {}
        for path, pieces in iter_artifact_pieces(layout, Path("/nonexistent/out"), Path("/nonexistent/inv")):
            size = sum(len(piece.encode()) for piece in pieces_of(pieces))  # encoded as publish writes it
            sizes[artifact(path)] = sizes.get(artifact(path), 0) + size
        c2, t2 = _cpu(), time.perf_counter()
    return {"label": label, "gpus": layout.facts["gpus"], "tiers": layout.facts["tiers"],
            "devices": len(layout.devices), "cables": len(layout.links), "build_cpu": c1 - c0,
            "render_cpu": c2 - c1, "cpu": c2 - c0, "wall": t2 - t0,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "sizes": sizes}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2])))
        return
    repeat, labels = repeat_and_names(sys.argv[1:], [label for label, _ in CASES], __doc__.splitlines()[0])
    print(load_line())
    print(f"{'pod':>5} {'gpus':>7} {'tiers':>5} {'devices':>8} {'cables':>8} {'build cpu':>9} {'render cpu':>10} "
          f"{'cpu s':>6} {'wall s':>6} {'us/cable':>9} {'peak MiB':>9}")
    sizes: dict[str, dict[str, int]] = {}
    for label in labels:
        r = least_cpu(__file__, label, repeat)
        if "refused" in r:
            print(f"{label:>5} refused: {r['refused']}")
            continue
        for name, n in r["sizes"].items():
            sizes.setdefault(name, {})[label] = n
        print(f"{label:>5} {r['gpus']:>7} {r['tiers']:>5} {r['devices']:>8} {r['cables']:>8} {r['build_cpu']:>9.2f} "
              f"{r['render_cpu']:>10.2f} {r['cpu']:>6.2f} {r['wall']:>6.2f} {r['cpu'] / r['cables'] * 1e6:>9.1f} "
              f"{r['peak_mib']:>9.0f}")
    print(load_line())
    shown = [label for label in labels if any(label in per for per in sizes.values())]
    print(f"\n{'MB per artifact':<16}" + "".join(f"{label:>9}" for label in shown))
    for name, per in sorted(sizes.items(), key=lambda kv: -max(kv[1].values())):
        print(f"{name:<16}" + "".join(f"{per.get(label, 0) / 1e6:>9.2f}" for label in shown))


if __name__ == "__main__":
    main()
