"""Saves a run's ansible-runner events, trimmed to what the reports read, as a JSON fixture
for the fast unit tests: python -m tests.e2e.record RUN_DIR NAME"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from topology.operate.events import load_events

KEEP_DATA = ("host", "task", "role", "play", "task_action", "resolved_action", "task_path", "task_uuid",
             "ignore_errors", "res", "changed", "dark", "failures", "ok", "processed", "skipped", "rescued", "ignored")
KEEP_RES = ("changed", "diff", "msg", "censored", "stderr", "unreachable", "skip_reason")


def trim(event: dict) -> dict:
    data = {k: v for k, v in (event.get("event_data") or {}).items() if k in KEEP_DATA}
    if isinstance(data.get("res"), dict):
        res = data["res"]
        data["res"] = {k: v for k, v in res.items() if k in KEEP_RES}
        if isinstance(res.get("results"), list):
            data["res"]["results"] = [{k: v for k, v in r.items() if k in KEEP_RES}
                                      for r in res["results"] if isinstance(r, dict)]
    data["task_path"] = str(data.get("task_path", "")).replace(str(Path.cwd()) + "/", "")
    return {"event": event.get("event"), "counter": event.get("counter"), "event_data": data}


def main(run_dir: str, name: str) -> None:
    events = [trim(e) for e in load_events(Path(run_dir) / "artifacts/run/job_events")
              if e.get("event") != "verbose"]
    out = Path(__file__).parent / "recorded" / f"{name}.json"
    out.write_text(json.dumps(events, separators=(",", ":")) + "\n")
    print(out, len(events), "events", out.stat().st_size, "bytes")


if __name__ == "__main__":
    main(*sys.argv[1:])
