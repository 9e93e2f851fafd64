"""The record of what `superpod apply` last left on each host, and the quick drift check on it.

Every apply (and `drift --fix`) records, per host, from its own events (no extra round trip):
each file a template, copy or file task wrote or checked (path, type, SHA-1, mode, owner,
group), each path a file task removed, each unit a systemd task enabled or disabled, and the
files a module of ours reports as `managed` (rail_network_files: one call for every rail). The
record is merged per entry into `.runs/<stack>/manifest/<host>.json`, so a run limited by
--tags or --limit keeps the rest. `superpod drift --quick` compares each host with its record
in one module call per host (playbooks/library/superpod_manifest_check.py): seconds, where the
full check (site.yml in check mode) takes minutes. It answers "has anything we manage changed
since the last apply", not "does the host match the plan": a spec changed since, packages,
running sysctls and kernel state are the full check's. Delegated tasks (the controller's build
cache) and no_log results are not recorded: a record never holds what Ansible was told to hide.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from topology.operate.events import host_problems
from topology.render.files import write_atomic

PATH_MODULES = {"ansible.builtin.template", "ansible.builtin.copy", "ansible.builtin.file",
                "template", "copy", "file"}
UNIT_MODULES = {"ansible.builtin.systemd_service", "ansible.builtin.systemd", "systemd_service", "systemd"}
SET_MODULES = {"rail_network_files"}  # ours: they report each file they keep as `managed`
PATH_STATES = ("file", "directory", "absent")
QUICK_PLAYBOOK = Path(__file__).parent / "playbooks" / "quick_drift.yml"
QUICK_TASK = "Compare files and units with the record"


def _results(res: dict) -> Iterator[dict]:
    """A task's result, or each item's for a loop."""
    items = res.get("results")
    yield from (items if isinstance(items, list) else [res])


_FILE_ATTRS = ("mode", "owner", "group")


def _entries(action: str, res: dict) -> Iterator[dict]:
    """A result's entries: one for a file or unit task; a module of ours that writes several
    files reports each as `managed` (roles/rail_network/library/rail_network_files.py)."""
    if not isinstance(res, dict) or "censored" in res or res.get("skipped") or res.get("failed") \
            or res.get("_ansible_no_log") or res.get("_ansible_delegated_vars"):
        return
    if action in SET_MODULES:
        for e in res.get("managed") or []:
            if isinstance(e, dict) and e.get("path") and e.get("state") in PATH_STATES:
                yield {k: e[k] for k in ("path", "state", "checksum", *_FILE_ATTRS) if e.get(k)}
    elif action in UNIT_MODULES:
        if isinstance(res.get("enabled"), bool) and res.get("name"):
            yield {"unit": res["name"], "enabled": res["enabled"]}
    elif action in PATH_MODULES:
        path, state = res.get("dest") or res.get("path"), res.get("state")
        if path and state in PATH_STATES:
            entry = {"path": path, "state": state}
            if state == "file" and res.get("checksum"):
                entry["checksum"] = res["checksum"]
            if state != "absent":
                entry |= {k: res[k] for k in _FILE_ATTRS if res.get(k)}
            yield entry


def _key(entry: dict) -> str:
    return f"unit:{entry['unit']}" if "unit" in entry else f"path:{entry['path']}"


def entries_from_events(events: Iterable[dict]) -> dict[str, dict[str, dict]]:
    """host -> {key: entry} from a run's events, later results over earlier ones."""
    out: dict[str, dict[str, dict]] = {}
    for event in events:
        if event.get("event") != "runner_on_ok":
            continue
        data = event.get("event_data") or {}
        action = data.get("resolved_action") or data.get("task_action") or ""
        res = data.get("res") or {}
        if res.get("_ansible_delegated_vars") or "censored" in res:  # a loop's items may not say so
            continue
        for item in _results(res):
            for entry in _entries(action, item):
                out.setdefault(data.get("host", "?"), {})[_key(entry)] = entry
    return out


def record(manifest_dir: Path, events: Iterable[dict]) -> list[str]:
    """Merges a run's entries into each host's record; returns the hosts recorded."""
    hosts = entries_from_events(events)
    for host, entries in sorted(hosts.items()):
        path = Path(manifest_dir) / f"{host}.json"
        old = {_key(e): e for e in load(path)}
        merged = old | entries
        write_atomic(path, json.dumps([merged[k] for k in sorted(merged)], indent=1) + "\n")
    return sorted(hosts)


def load(path: Path) -> list[dict]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []


def quick_results(events: list[dict]) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """(host -> drift entries, host -> problem) from a quick check's events."""
    drift = {}
    for event in events:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_ok" and data.get("task") == QUICK_TASK:
            drift[data.get("host", "?")] = list((data.get("res") or {}).get("drift") or [])
    return drift, {p.host: p.message for p in host_problems(events)}
