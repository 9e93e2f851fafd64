"""The acceptance report: a table per scope (node, rail, SU/pod) with measured vs expected and
PASS/FAIL, then the work list; or all of it as JSON."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from topology.operate.accept.judge import FAIL, PASS, Check

SCOPES = (("node", "Nodes"), ("rail", "Rails (ib_write_bw between nodes under one rail leaf)"),
          ("su", "Scalable units (all_reduce over MPI)"), ("pod", "Pod (all_reduce over MPI, all SUs)"))
STYLE = {PASS: "green", FAIL: "bold red"}


def work_lines(checks: list[Check]) -> list[str]:
    seen: dict[str, None] = {}
    for c in checks:
        for w in c.work:
            seen.setdefault(w.line())
    return sorted(seen)


def summary(checks: list[Check]) -> dict[str, int]:
    out = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for c in checks:
        out[c.verdict] += 1
    return out


def to_json(stack: str, run_dir: str, checks: list[Check]) -> dict:
    return {"stack": stack, "run": run_dir, "summary": summary(checks),
            "checks": [c.as_json() for c in checks], "work_list": work_lines(checks)}


def print_report(console: Console, stack: str, run_dir: str, checks: list[Check]) -> None:
    for scope, title in SCOPES:
        rows = [c for c in checks if c.scope == scope]
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        for col in ("subject", "check", "measured", "expected", "verdict", "detail"):
            t.add_column(col, overflow="fold")
        for c in rows:
            t.add_row(c.subject, c.check, c.measured, c.expected, Text(c.verdict, STYLE.get(c.verdict, "yellow")),
                      c.detail)
        console.print(t)
    s = summary(checks)
    lines = work_lines(checks)
    if lines:
        console.print(Text("Work list", style="bold"))
        for line in lines:
            console.print(Text(f"  {line}"))
    console.print(Text(f"{stack}: {s['PASS']} pass, {s['FAIL']} fail, {s['SKIP']} skipped; results in {run_dir}"))
