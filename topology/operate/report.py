"""Reports for people (rich) and a retry list: the per-host summary of a run and the drift
report (per host, each task that would change and its diff)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from topology.operate.drift import DriftReport
from topology.operate.events import HostProblem, HostTally, trim_diff

_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta"}


def summary_table(tallies: dict[str, HostTally], title: str = "per-host summary") -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("host", "ok", "changed", "failed", "unreachable", "skipped", "status"):
        table.add_column(col, justify="left" if col in ("host", "status") else "right")
    for t in tallies.values():
        table.add_row(t.host, str(t.ok), str(t.changed), str(t.failed), str(t.unreachable), str(t.skipped),
                      f"[{_STYLE.get(t.status, '')}]{t.status}[/]")
    return table


def totals_line(tallies: dict[str, HostTally]) -> str:
    hosts = list(tallies.values())
    return (f"{len(hosts)} hosts: ok={sum(t.ok for t in hosts)} changed={sum(t.changed for t in hosts)} "
            f"failed={sum(t.failed for t in hosts)} unreachable={sum(t.unreachable for t in hosts)}")


def print_problems(console: Console, problems: list[HostProblem]) -> None:
    for p in problems:
        where = f"{p.role} : {p.task}" if p.role else p.task
        console.print(f"[{_STYLE[p.kind]}]{p.kind}[/] [bold]{p.host}[/] {escape(where)}: {escape(p.message)}",
                      highlight=False)


def write_retry(run_dir: Path, hosts: list[str]) -> Path | None:
    """Hosts to re-run, one a line, for `--limit @FILE` (Ansible's own retry-file format)."""
    if not hosts:
        return None
    path = run_dir / "retry.txt"
    path.write_text("".join(f"{h}\n" for h in hosts), encoding="utf-8")
    return path


def print_drift(console: Console, report: DriftReport) -> None:
    for host, changes in report.by_host().items():
        console.print(f"[bold yellow]drift[/] [bold]{host}[/]: {len(changes)} task(s) would change", highlight=False)
        for c in changes:
            kind = "handler" if c.handler else "task"
            name = escape(f"{c.role or '(play)'} : {c.task}")
            console.print(f"  {kind} [cyan]{name}[/]  [dim]{c.action} {c.path}[/]", highlight=False)
            for path in c.files:
                console.print(f"    file {escape(path)}", highlight=False)
            if c.mismatches:
                console.print(f"    the node differs from its plan ({len(c.mismatches)}; apply cannot fix this and "
                              "fails the host until it is repaired):", highlight=False)
                for item in c.mismatches:
                    console.print(f"    - {escape(item)}", highlight=False)
            elif c.hidden:
                console.print("    (diff hidden: the task is no_log)")
            elif c.diff:
                console.print(Syntax(trim_diff(c.diff), "diff", theme="ansi_dark", background_color="default"))
            elif c.note:
                console.print(f"    {escape(c.note)}", highlight=False)
    print_problems(console, report.problems)
    for e in report.errors:
        console.print(f"[bold red]error:[/] {escape(e)}", highlight=False)
    clean = sorted(h for h in report.tallies if h not in report.drifted_hosts and h not in report.problem_hosts)
    by_record = f" ({len(report.record_clean)} by their record)" if report.record_clean else ""
    console.print(f"drift: {len(report.drifted_hosts)} host(s) drifted, {len(clean) + len(report.record_clean)} "
                  f"clean{by_record}, {len(report.problem_hosts)} with errors", highlight=False)
