"""Where a run's time went, from the events ansible-runner recorded (no re-run, no callback
plugin): each task's wall time (from its start to the next task's start, all hosts together),
summed per role and per module, and the slowest tasks.

    .venv/bin/python bench/task_times.py RUN_DIR [--top N]

RUN_DIR is a run of `superpod apply|drift` (`.runs/<stack>/<time>-<kind>/`, or its
`artifacts/run/job_events`)."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path


def events_dir(run_dir: Path) -> Path:
    for candidate in (run_dir, run_dir / "artifacts" / "run" / "job_events", run_dir / "job_events"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    raise SystemExit(f"error: RUN_DIR: {run_dir} holds no job_events/*.json")


def task_spans(run_dir: Path) -> list[dict]:
    """One entry per task start (handlers and includes too): role, task, module, seconds."""
    events = [json.loads(p.read_text()) for p in events_dir(run_dir).glob("*.json")]
    events = [e for e in events if "counter" in e and "created" in e]  # a run killed mid-write leaves partial files
    events.sort(key=lambda e: e["counter"])
    starts = [e for e in events if e["event"] in ("playbook_on_task_start", "playbook_on_handler_task_start")]
    end = max(datetime.fromisoformat(e["created"]) for e in events)
    spans = []
    for i, e in enumerate(starts):
        t0 = datetime.fromisoformat(e["created"])
        t1 = datetime.fromisoformat(starts[i + 1]["created"]) if i + 1 < len(starts) else end
        data = e["event_data"]
        spans.append({"role": data.get("role") or "(play)", "task": data.get("task", ""),
                      "module": data.get("resolved_action") or data.get("task_action", ""),
                      "path": data.get("task_path", ""), "seconds": (t1 - t0).total_seconds()})
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--top", type=int, default=15, help="slowest tasks to list")
    opts = parser.parse_args()
    spans = task_spans(opts.run_dir)
    total = sum(s["seconds"] for s in spans)
    print(f"{len(spans)} task starts, {total:.1f} s from the first task start to the last event")
    for key in ("role", "module"):
        sums: dict[str, list[float]] = defaultdict(list)
        for s in spans:
            sums[s[key]].append(s["seconds"])
        print(f"\nper {key}: seconds (tasks)")
        for name, secs in sorted(sums.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name:40s} {sum(secs):7.1f} ({len(secs)})")
    print(f"\nslowest {opts.top} tasks:")
    for s in sorted(spans, key=lambda s: -s["seconds"])[: opts.top]:
        print(f"  {s['seconds']:6.1f}  {s['role']:18s} {s['task'][:70]}  [{s['module']}]")


if __name__ == "__main__":
    main()
