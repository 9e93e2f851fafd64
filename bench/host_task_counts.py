"""How many host-task results a recorded run has per node, by module and by role (issue 39: each
one costs the controller a worker fork, argument templating and a callback, whatever it does).

    .venv/bin/python bench/host_task_counts.py RUN_DIR [--by module|role|task]

RUN_DIR is a run of `superpod apply|drift` (as bench/task_times.py takes it). A result is a
host's ok, changed, failed or skipped answer to a task (a loop counts once, as in the play recap);
the figures are per node: the total over the hosts divided by their number."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from bench.task_times import events_dir

RESULTS = {"runner_on_ok": "ok", "runner_on_skipped": "skipped", "runner_on_failed": "failed"}


def host_task_results(run_dir: Path) -> list[dict]:
    """One entry per host-task result: host, role, module, task, status (ok, changed, skipped...)."""
    out = []
    for path in events_dir(run_dir).glob("*.json"):
        try:
            event = json.loads(path.read_text())
        except ValueError:
            continue  # a run killed mid-write leaves partial files
        status = RESULTS.get(event.get("event"))
        if status is None:
            continue
        data = event.get("event_data") or {}
        if status == "ok" and (data.get("res") or {}).get("changed"):
            status = "changed"
        module = (data.get("resolved_action") or data.get("task_action") or "").removeprefix("ansible.builtin.")
        out.append({"host": data.get("host", "?"), "role": data.get("role") or "(play)", "module": module,
                    "task": data.get("task", ""), "status": status})
    return out


def per_node(results: list[dict], key: str) -> list[tuple[str, float, float, float]]:
    """(name, results per node, of them ok or changed, skipped), largest first."""
    hosts = len({r["host"] for r in results}) or 1
    done, skipped = Counter(), Counter()
    for r in results:
        (skipped if r["status"] == "skipped" else done)[r[key]] += 1
    names = set(done) | set(skipped)
    rows = [(n, (done[n] + skipped[n]) / hosts, done[n] / hosts, skipped[n] / hosts) for n in names]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--by", choices=("module", "role", "task"), default="module")
    opts = parser.parse_args()
    results = host_task_results(opts.run_dir)
    hosts = sorted({r["host"] for r in results})
    total = per_node(results, "status")
    print(f"{len(results)} host-task results on {len(hosts)} hosts: {len(results) / max(len(hosts), 1):.1f} per node "
          f"({', '.join(f'{n} {c:.1f}' for n, c, _, _ in total)})")
    print(f"per {opts.by}, per node: results (ok or changed / skipped)")
    for name, count, done, skipped in per_node(results, opts.by):
        print(f"  {name[:60]:60s} {count:6.1f} ({done:.1f} / {skipped:.1f})")


if __name__ == "__main__":
    main()
