"""`superpod publish` and `superpod diff --nautobot`: run a sync and print what it found."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

from topology.errors import plain
from topology.layout.model import Layout
from topology.publish.nautobot import Nautobot, NautobotError, read_token
from topology.publish.sync import Report, sync
from topology.render.dcim import desired_objects

SIGNS = {"create": "+", "update": "~", "delete": "-", "conflict": "!"}


def summary_table(report: Report, title: str) -> Table:
    table = Table(title=title)
    for col in ("object type", "create", "update", "delete", "conflict"):
        table.add_column(col, justify="left" if col == "object type" else "right")
    for kind, c in report.counts().items():
        table.add_row(kind, *(str(c[a]) for a in ("create", "update", "delete", "conflict")))
    return table


def print_changes(report: Report, console: Console, limit: int) -> None:
    for kind, changes in report.changes.items():
        shown = changes if limit == 0 else changes[:limit]
        for ch in shown:
            console.print(f"  {SIGNS[ch.action]} {kind} {ch.key}" + (f": {ch.detail}" if ch.detail else ""),
                          highlight=False, markup=False)
        if len(changes) > len(shown):
            console.print(f"  … {len(changes) - len(shown)} more {kind}", highlight=False)


def report_json(report: Report, site: str, url: str, **extra) -> dict:
    """The sync's findings as one JSON object (`--json`): counts and every change, none cut."""
    return {
        "site": site, "url": url, "total": report.total, "requests": report.requests, **extra,
        "counts": report.counts(),
        "changes": [{"kind": kind, "action": ch.action, "key": str(ch.key), "detail": ch.detail or None}
                    for kind, changes in report.changes.items() for ch in changes],
    }


@contextmanager
def answers_checked() -> Iterator[None]:
    """An object the server returned without a field its API documents (the sync reads them by key)
    becomes an error line naming what was missing, not a traceback."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as e:
        raise NautobotError(f"an object Nautobot returned lacks what its API documents ({type(e).__name__}: "
                            f"{plain(str(e))[:120]}): is the server Nautobot 2.x?") from None


def publish_plan(layout: Layout, url: str, token_file: Path, console: Console, dry_run: bool, prune: bool,
                 limit: int = 0, workers: int = 4, timeout: float = 300.0, as_json: bool = False) -> int:
    desired = desired_objects(layout)
    if as_json:  # progress lines to stderr, stdout holds only the JSON
        console = Console(stderr=True)
    started = time.monotonic()
    with Nautobot(url, read_token(token_file), workers=workers, timeout=timeout) as client, answers_checked():
        report = sync(client, desired, apply=not dry_run, prune=prune,
                      progress=None if dry_run else lambda line: console.print(
                          f"  {time.monotonic() - started:7.1f} s  {line}", highlight=False))
    verb = "would change" if dry_run else "changed"
    console.print(summary_table(report, f"{desired.site} -> {url}: {verb}"))
    if dry_run or limit:
        print_changes(report, console, limit)
    console.print(f"{report.total} changes ({'dry run' if dry_run else 'applied'}), {report.requests} requests, "
                  f"{time.monotonic() - started:.1f} s", highlight=False)
    conflicts = sum(c["conflict"] for c in report.counts().values())
    code = 1 if conflicts and not dry_run else 0
    if as_json:
        print(json.dumps({"ok": code == 0, "exit_code": code, "dry_run": dry_run}
                         | report_json(report, desired.site, url, seconds=round(time.monotonic() - started, 1)),
                         indent=1))
    return code


def nautobot_diff(layout: Layout, url: str, token_file: Path, console: Console, limit: int = 20,
                  as_json: bool = False) -> int:
    desired = desired_objects(layout)
    with Nautobot(url, read_token(token_file)) as client, answers_checked():
        report = sync(client, desired, apply=False, prune=False)
    if as_json:
        print(json.dumps({"ok": True, "same": not report.total} | report_json(report, desired.site, url), indent=1))
        return 1 if report.total else 0
    if not report.total:
        console.print(f"{desired.site}: Nautobot matches the plan", highlight=False)
        return 0
    console.print(summary_table(report, f"{desired.site}: plan vs {url}"))
    print_changes(report, console, limit)
    return 1
