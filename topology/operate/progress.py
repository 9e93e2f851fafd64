"""Live progress of a run (rich Live), fed one ansible-runner event at a time.

Shows the current play and task, how many hosts have finished that task, and running
per-host tallies (ok/changed/failed/unreachable). Off when the console is not a terminal
(cron, CI): nothing is redrawn there, the summary at the end is what they read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

# With more hosts than this, per-host rows give way to totals only.
MAX_HOST_ROWS = 24

_RESULT = {
    "runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


@dataclass
class ProgressState:
    """What the display shows; separate from rich so it is testable on recorded events."""

    play: str = ""
    task: str = ""
    role: str = ""
    tasks_started: int = 0
    task_hosts_done: set[str] = field(default_factory=set)
    hosts: dict[str, Counter] = field(default_factory=dict)

    def feed(self, event: dict) -> None:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            self.play = data.get("play", "")
        elif kind in ("playbook_on_task_start", "playbook_on_handler_task_start"):
            self.task, self.role = data.get("task", ""), data.get("role", "") or ""
            self.tasks_started += 1
            self.task_hosts_done = set()
        elif kind in _RESULT:
            host = data.get("host", "?")
            tally = self.hosts.setdefault(host, Counter())
            result = _RESULT[kind]
            if result == "failed" and data.get("ignore_errors"):
                result = "ok"
            tally[result] += 1
            if result == "ok" and (data.get("res") or {}).get("changed"):
                tally["changed"] += 1
            self.task_hosts_done.add(host)

    def hosts_with(self, result: str) -> list[str]:
        return sorted(h for h, t in self.hosts.items() if t[result])


class LiveProgress:
    """Context manager: `with LiveProgress(console) as p: run(on_event=p.handle)`."""

    def __init__(self, console: Console, enabled: bool | None = None, title: str = "superpod"):
        self.console = console
        self.enabled = console.is_terminal if enabled is None else enabled
        self.state = ProgressState()
        self.title = title
        self._live: Live | None = None

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self._live = Live(self.render(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live:
            self._live.__exit__(*exc)

    def handle(self, event: dict) -> None:
        self.state.feed(event)
        if self._live:
            self._live.update(self.render())

    def render(self):
        s = self.state
        failed, unreachable = s.hosts_with("failed"), s.hosts_with("unreachable")
        head = Text.assemble(
            (f"{self.title} ", "bold"), f"play: {s.play or '-'}\n",
            f"task {s.tasks_started}: ", (f"{s.role + ' : ' if s.role else ''}{s.task or '-'}", "cyan"),
            f"  ({len(s.task_hosts_done)} of {len(s.hosts)} hosts done)\n",
            f"hosts: {len(s.hosts)}  ", ("failed: " + str(len(failed)), "red" if failed else ""),
            "  ", ("unreachable: " + str(len(unreachable)), "magenta" if unreachable else ""),
        )
        if not s.hosts or len(s.hosts) > MAX_HOST_ROWS:
            return head
        table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
        for col in ("host", "ok", "changed", "failed", "unreachable"):
            table.add_column(col, justify="left" if col == "host" else "right")
        for host, t in sorted(s.hosts.items()):
            table.add_row(host, str(t["ok"]), str(t["changed"]), str(t["failed"]), str(t["unreachable"]))
        return Group(head, table)
