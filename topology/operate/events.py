"""What a run's ansible-runner events say: per-host tallies, host problems and changed tasks.

Pure functions over the event dicts ansible-runner hands to its event handler (and writes
to artifacts/<ident>/job_events/), so they are tested on recorded events without Ansible.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import yaml

# How much of one diff a person sees; the JSON report keeps diffs whole.
MAX_DIFF_LINES = 200


@dataclass(frozen=True)
class HostTally:
    """One host's counts from the play recap (ansible's playbook_on_stats)."""

    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0

    @property
    def status(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        return "changed" if self.changed else "ok"


@dataclass(frozen=True)
class HostProblem:
    """A host that failed a task (not ignored) or could not be reached."""

    host: str
    kind: str  # "failed" | "unreachable"
    task: str
    role: str | None
    message: str
    # a superpod_plan_mismatch that failed (apply, the record check): the node differs from its plan
    mismatches: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskChange:
    """A task that changed (or, in check mode, would change) a host."""

    host: str
    role: str | None
    task: str
    action: str
    handler: bool
    path: str
    diff: str
    hidden: bool  # no_log: Ansible censored the result, so no diff can be shown
    note: str = ""  # the module's message when it gives no diff (e.g. what a debug task says would change)
    # the node differs from its plan (superpod_plan_mismatch under --check): one named item each;
    # hardware or cabling, which no apply can change
    mismatches: tuple[str, ...] = ()
    # the files a task that writes several reports as changed (superpod_files' changed_files):
    # a drift report names each, also where only its owner or mode differs
    files: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)


def _data(event: dict) -> dict:
    return event.get("event_data") or {}


def host_tallies(events: Iterable[dict]) -> dict[str, HostTally]:
    """Per-host counts from the last play recap; empty when the run ended before one."""
    stats = None
    for event in events:
        if event.get("event") == "playbook_on_stats":
            stats = _data(event)
    if stats is None:
        return {}
    keys = {"ok": "ok", "changed": "changed", "failed": "failures", "unreachable": "dark",
            "skipped": "skipped", "rescued": "rescued", "ignored": "ignored"}
    hosts = sorted({h for k in keys.values() for h in (stats.get(k) or {})} | set(stats.get("processed") or {}))
    return {h: HostTally(h, **{f: int((stats.get(k) or {}).get(h, 0)) for f, k in keys.items()}) for h in hosts}


# Where a role's superpod_plan_mismatch (action_plugins/) puts the mismatches it names: a changed
# result under --check (drift), a failed one otherwise (apply, the record check).
PLAN_MISMATCH = "plan_mismatch"


def no_play_matched(events: Iterable[dict]) -> bool:
    """Every play of the run matched no host (ansible's own `playbook_on_no_hosts_matched`): a
    run for hosts the playbook does not target, not a run that failed to report."""
    events = list(events)
    plays = sum(e.get("event") == "playbook_on_play_start" for e in events)
    return plays > 0 and plays == sum(e.get("event") == "playbook_on_no_hosts_matched" for e in events)


def plan_mismatches(res: dict) -> tuple[str, ...]:
    """The named mismatches a result carries (none for any other task)."""
    items = res.get(PLAN_MISMATCH)
    return tuple(str(i) for i in items) if isinstance(items, list) else ()


# A task's own message is what names the failure (node_check lists every mismatch in it): kept
# whole up to this, and said when cut. Output streams give their last line only.
MESSAGE_LIMIT = 20000


def _message(res: dict) -> str:
    if "censored" in res:
        return str(res["censored"])
    for key in ("msg", "stderr", "reason", "module_stderr"):
        value = res.get(key)
        if value and key != "msg":
            return str(value).strip().splitlines()[-1][:500]
        if value:
            text = str(value).strip()
            cut = len(text) - MESSAGE_LIMIT
            return text if cut <= 0 else f"{text[:MESSAGE_LIMIT]} ... ({cut} more characters)"
    return ""


def host_problems(events: Iterable[dict]) -> list[HostProblem]:
    """Failed (not ignored, not rescued later is not knowable here) and unreachable results."""
    out: list[HostProblem] = []
    for event in events:
        kind = event.get("event")
        data = _data(event)
        if kind == "runner_on_unreachable" or (kind == "runner_on_failed" and not data.get("ignore_errors")):
            out.append(HostProblem(
                host=data.get("host", "?"),
                kind="unreachable" if kind == "runner_on_unreachable" else "failed",
                task=data.get("task", ""),
                role=data.get("role") or None,
                message=_message(data.get("res") or {}),
                mismatches=plan_mismatches(data.get("res") or {}),
            ))
    return out


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False)


def render_diff(diff) -> str:
    """Ansible's diff (a dict or a list of dicts: before/after[/headers], or 'prepared' text)
    as unified-diff text."""
    if not diff:
        return ""
    if isinstance(diff, list):
        return "".join(render_diff(d) for d in diff)
    if not isinstance(diff, dict):
        return str(diff)
    if diff.get("prepared"):
        text = str(diff["prepared"])
        return text if text.endswith("\n") else text + "\n"
    if "before" not in diff and "after" not in diff:
        return ""
    before, after = _as_text(diff.get("before")), _as_text(diff.get("after"))
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=str(diff.get("before_header") or "before"), tofile=str(diff.get("after_header") or "after"),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _result_diff(res: dict) -> str:
    text = render_diff(res.get("diff"))
    for item in res.get("results") or []:  # loops: each changed item carries its own diff
        if isinstance(item, dict) and item.get("changed"):
            text += render_diff(item.get("diff"))
    return text


def _note(res: dict) -> str:
    msg = res.get("msg")
    if not msg or res.get("diff"):
        return ""
    return " ".join(msg.split()) if isinstance(msg, str) else json.dumps(msg)[:500]


def _changed_files(res: dict) -> tuple[str, ...]:
    files = res.get("changed_files")
    return tuple(str(f) for f in files) if isinstance(files, list) else ()


def changed_tasks(events: Iterable[dict]) -> list[TaskChange]:
    """Tasks reporting changed=true, in run order (a loop task counts once per host)."""
    handler_tasks: set[str] = set()
    out: list[TaskChange] = []
    for event in events:
        kind = event.get("event")
        data = _data(event)
        if kind == "playbook_on_handler_task_start":
            handler_tasks.add(data.get("task_uuid", ""))
        if kind != "runner_on_ok":
            continue
        res = data.get("res") or {}
        if not res.get("changed"):
            continue
        out.append(TaskChange(
            host=data.get("host", "?"),
            role=data.get("role") or None,
            task=data.get("task", ""),
            action=data.get("resolved_action") or data.get("task_action", ""),
            handler=data.get("task_uuid", "") in handler_tasks,
            path=data.get("task_path", ""),
            diff="" if "censored" in res else _result_diff(res),
            hidden="censored" in res,
            note="" if "censored" in res else _note(res),
            mismatches=plan_mismatches(res),
            files=_changed_files(res),
        ))
    return out


def trim_diff(text: str, max_lines: int = MAX_DIFF_LINES) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) <= max_lines:
        return text
    return "".join(lines[:max_lines]) + f"… {len(lines) - max_lines} more lines (whole diff in --json)\n"


def load_events(path) -> list[dict]:
    """Events of a run: a JSON list file or ansible-runner's job_events/ folder (counter order)."""
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
        return [json.loads(p.read_text()) for p in files]
    return json.loads(path.read_text())
