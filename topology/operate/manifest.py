"""The record of what `superpod apply` last left on each host, and the quick drift check on it.

Every apply (and `drift --fix`) records, per host, from its own events (no extra round trip):
each file a template, copy or file task wrote or checked (path, type, SHA-1, mode, owner,
group), each path a file task removed, each unit a systemd task enabled or disabled, and the
files a module of ours reports as `managed` (rail_network_files: one call for every rail). The
record is merged per entry into `.runs/<stack>/manifest/<host>.json`, so a run limited by
--tags or --limit keeps the rest. `superpod drift --quick` compares each host with its record
in one module call per host (playbooks/library/superpod_manifest_check.py): seconds, where the
full check (site.yml in check mode) takes minutes. It answers "has anything we manage changed
since the last apply", not "does the host match the plan": a spec changed since is the full
check's. Delegated tasks (the controller's build
cache) and no_log results are not recorded: a record never holds what Ansible was told to hide.

The record also holds what the run *read* (its observations), so that a host whose record checks
clean would take the same decisions in a full run (topology/operate/converged.py skips such
hosts): each command a role declares a read (check_mode: false, changed_when: false;
topology/operate/declared.py) with its exit code and output digest, replayed by the check (the
installed-packages query among them, which covers the package modules); stat and slurp as paths;
find's matches; modules loaded; units' running state; and the facts the roles use. A result the
check cannot replay (a no_log task, a module not known here, an observation of another system)
is kept as `unverifiable`: such a host is never skipped, and `drift --quick` says what it
could not check.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from topology.operate.events import host_problems
from topology.operate.observed_facts import observed_facts
from topology.operate.private_files import write_private
from topology.operate.record_entries import entries_from_events, entry_key
from topology.operate.record_key import UntrustedRecord, label, sign, verified

QUICK_PLAYBOOK = Path(__file__).parent / "playbooks" / "quick_drift.yml"
QUICK_TASK = "Compare files and units with the record"

UNTRUSTED_OLD = {"unverifiable": "record", "task": "the record this run merged into did not verify"}


def record(manifest_dir: Path, events: Iterable[dict], replace_hosts: Iterable[str] = (),
           facts_dir: Path | None = None, project_dir: Path | None = None) -> list[str]:
    """Merges a run's entries into each host's record; returns the hosts recorded. A host in
    replace_hosts (a whole site.yml ran on it without a failure, so every entry was seen) gets
    this run's entries only: what a role no longer manages leaves its record; and the facts the
    run used (from facts_dir, the stack's fact cache). Each record is written 0600 and signed
    (topology/operate/record_key.py); an old record that does not verify is not merged, and the
    new one says so (that host is not skipped until a full run replaces its record)."""
    hosts = entries_from_events(events, project_dir)
    replace = set(replace_hosts)
    for host in sorted(replace) if facts_dir else ():
        entry = facts_entry(facts_dir, host)
        if entry:
            hosts.setdefault(host, {})["facts"] = entry
    for host, entries in sorted(hosts.items()):
        path = Path(manifest_dir) / f"{host}.json"
        try:
            old = {} if host in replace else {entry_key(e): e for e in load_verified(path)}
        except (UntrustedRecord, ValueError):
            old = {entry_key(UNTRUSTED_OLD): UNTRUSTED_OLD}
        merged = old | entries
        write_private(path, json.dumps([merged[k] for k in sorted(merged)], indent=1) + "\n")
        sign(path, label(path, 3))
    return sorted(hosts)


def load(path: Path) -> list[dict]:
    """A record as it is on disk, unverified (for reading it; never for deciding on it)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []


def load_verified(path: Path) -> list[dict]:
    """A record whose signature holds ([] when there is none); UntrustedRecord otherwise."""
    try:
        data = json.loads(verified(path, label(path, 3)))
    except FileNotFoundError:
        return []
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise UntrustedRecord(f"{path}: not a list of entries")
    return data


@dataclass
class QuickResults:
    """A record check's answer: per host what differs, what the record could not check, and
    hosts that failed or could not be reached."""

    drift: dict[str, list[dict]] = field(default_factory=dict)
    unverifiable: dict[str, list[dict]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    # hosts with a failed task, a plan mismatch's too (it is drift, yet it explains ansible's exit code)
    failed: set[str] = field(default_factory=set)

    def clean(self, host: str) -> bool:
        """Nothing differs, nothing went unchecked, no error."""
        return host in self.drift and not self.drift[host] and not self.unverifiable.get(host) \
            and host not in self.problems

    def why_not_clean(self, host: str, most: int = 3) -> str:
        """The first findings that keep a host from being clean, for a line of output."""
        if host in self.problems:
            return self.problems[host]
        found = [f"{d.get('what')}: {d.get('detail')}" for d in self.drift.get(host, [])]
        found += [f"{u.get('what')}: cannot be checked by the record" for u in self.unverifiable.get(host, [])]
        if not found:
            return "the record check did not run on it"
        return "; ".join(found[:most]) + (f" (and {len(found) - most} more)" if len(found) > most else "")


def quick_results(events: list[dict]) -> QuickResults:
    """What a record check's events say. node_check runs there without --check, so a node unlike
    its plan fails its superpod_plan_mismatch task: that is drift naming the task's items (as
    `drift --full` reports it), not an error."""
    out = QuickResults()
    for event in events:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_ok" and data.get("task") == QUICK_TASK:
            res, host = data.get("res") or {}, data.get("host", "?")
            out.drift[host] = list(res.get("drift") or [])
            out.unverifiable[host] = list(res.get("unverifiable") or [])
    for p in host_problems(events):
        out.failed.add(p.host)
        if p.mismatches:
            what = f"{p.role or '(play)'} : {p.task}"
            out.drift.setdefault(p.host, []).extend({"what": what, "detail": item} for item in p.mismatches)
        else:
            out.problems[p.host] = p.message
    return out


def cached_facts(facts_dir: Path, host: str) -> dict:
    """A host's facts from the jsonfile fact cache: `<host>`, or ansible-core 2.19's
    `s<schema>_<host>` holding {"__payload__": JSON} (the newest, when several schemas)."""
    candidates = [Path(facts_dir) / host, *Path(facts_dir).glob(f"s[0-9]*_{glob.escape(host)}")]
    found = sorted((p for p in candidates if p.is_file()), key=lambda p: p.stat().st_mtime)
    try:
        data = json.loads(found[-1].read_text(encoding="utf-8")) if found else {}
        if isinstance(data, dict) and isinstance(data.get("__payload__"), str):
            data = json.loads(data["__payload__"])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def facts_entry(facts_dir: Path, host: str) -> dict | None:
    """The facts a run used for a host (its fact cache), as the record keeps them."""
    facts = cached_facts(facts_dir, host)
    return {"facts": observed_facts(facts)} if facts else None
