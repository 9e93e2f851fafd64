"""`superpod apply` and `superpod drift`: a run, its live progress, its report, its exit code.
The typer layer in topology/cli.py only parses options and calls these."""

from __future__ import annotations

import json
from dataclasses import replace

from rich.console import Console
from rich.markup import escape

from topology.operate import manifest
from topology.operate.drift import EXIT_ERROR, DriftReport
from topology.operate.events import host_problems, host_tallies
from topology.operate.progress import LiveProgress
from topology.operate.report import print_drift, print_problems, summary_table, totals_line, write_retry
from topology.operate.runs import RunOutcome, RunRequest, run_playbook

EXIT_OK, EXIT_FAILED = 0, 1


def _run(req: RunRequest, console: Console, progress: bool | None, title: str) -> RunOutcome:
    with LiveProgress(console, enabled=progress, title=title) as live:
        return run_playbook(req, on_event=live.handle)


def apply(req: RunRequest, console: Console, progress: bool | None = None) -> int:
    """Runs site.yml; prints the per-host summary; 0 when every host is ok, 1 when a host
    failed or was unreachable (the others still ran), 2 when ansible itself failed."""
    outcome = _run(req, console, progress, f"apply {req.stack}")
    manifest.record(req.runs_root / "manifest", outcome.events)  # what `drift --quick` compares with
    tallies, problems = host_tallies(outcome.events), host_problems(outcome.events)
    if tallies:
        console.print(summary_table(tallies, title=f"{req.kind} {req.stack}: per-host summary"))
    print_problems(console, problems)
    bad = sorted({p.host for p in problems} | {t.host for t in tallies.values() if t.failed or t.unreachable})
    retry = write_retry(outcome.run_dir, bad)
    console.print(totals_line(tallies), highlight=False)
    console.print(f"run: {outcome.run_dir} (events: artifacts/run/job_events, stdout: artifacts/run/stdout)",
                  highlight=False)
    if retry:
        console.print(f"re-run only these hosts: superpod apply --stack {req.stack} --limit @{retry}",
                      highlight=False)
        return EXIT_FAILED
    if not tallies or outcome.rc != 0:
        console.print(f"[bold red]error:[/] ansible-playbook exited rc={outcome.rc} ({outcome.status}); "
                      f"see {outcome.stdout_path}", highlight=False)
        return EXIT_ERROR
    return EXIT_OK


def drift(req: RunRequest, console: Console, as_json: bool = False, fix: bool = False,
          progress: bool | None = None) -> int:
    """Check + diff run; reports each task that would change, per host. Exit 0 clean, 1 drift,
    2 errors. With fix: re-applies to the drifted hosts only (and only their drifted roles when
    every drifted task belongs to a role); the exit code is then the fix run's."""
    check_req = replace(req, kind="drift", check=True, fresh_facts=True)  # drift is about now: no cached facts
    outcome = _run(check_req, console if not as_json else Console(stderr=True), progress, f"drift {req.stack}")
    report = DriftReport.from_events(outcome.events, rc=outcome.rc, run_dir=str(outcome.run_dir))
    write_retry(outcome.run_dir, report.problem_hosts)
    if as_json and not fix:
        print(json.dumps(report.as_json(), indent=1))
        return report.exit_code
    out = Console(stderr=True) if as_json else console
    print_drift(out, report)
    out.print(f"run: {outcome.run_dir}", highlight=False)
    if not fix:
        return report.exit_code
    hosts, roles = report.fix_targets()
    if not hosts:
        out.print("nothing to fix", highlight=False)
        return EXIT_ERROR if report.exit_code == EXIT_ERROR else EXIT_OK
    out.print(f"fixing {', '.join(hosts)}" + (f" (roles: {', '.join(roles)})" if roles else " (whole site.yml)"),
              highlight=False)
    fix_req = replace(req, kind="fix", check=False, limit=",".join(hosts), tags=",".join(roles) if roles else None)
    code = apply(fix_req, out, progress)
    if as_json:
        print(json.dumps(report.as_json() | {"fix_exit_code": code}, indent=1))
    return max(code, EXIT_ERROR if report.exit_code == EXIT_ERROR else EXIT_OK)


def quick_drift(req: RunRequest, console: Console, as_json: bool = False, progress: bool | None = None) -> int:
    """Each host against the record of its last apply (topology/operate/manifest.py): one module
    call per host. Exit 0 clean, 1 drift, 2 a host failed, was unreachable or has no record."""
    from topology.operate.runs import OperateError

    manifest_dir = req.runs_root / "manifest"
    if not any(manifest_dir.glob("*.json")):
        raise OperateError(f"--quick: no record of an apply in {manifest_dir}; run `superpod apply --stack "
                           f"{req.stack}` first (or `superpod drift` without --quick: the full check)")
    quick_req = replace(req, kind="quick-drift", playbook=manifest.QUICK_PLAYBOOK, tags=None,
                        env=(*req.env, ("SUPERPOD_MANIFEST_DIR", str(manifest_dir))))
    out = Console(stderr=True) if as_json else console
    outcome = _run(quick_req, out, progress, f"drift --quick {req.stack}")
    drift, problems = manifest.quick_results(outcome.events)
    hosts = sorted(set(drift) | set(problems))
    drifted = sorted(h for h in drift if drift[h] and h not in problems)
    code = EXIT_ERROR if problems or not hosts or outcome.rc != 0 else (EXIT_FAILED if drifted else EXIT_OK)
    if as_json:
        print(json.dumps({
            "hosts": {h: {"status": "error" if h in problems else ("drift" if drift[h] else "clean"),
                          "drift": drift.get(h, []), "problem": problems.get(h, "")} for h in hosts},
            "drifted_hosts": drifted, "problem_hosts": sorted(problems), "exit_code": code,
            "run": str(outcome.run_dir)}, indent=1))
        return code
    for h in hosts:
        if h in problems:
            out.print(f"[red]error[/] [bold]{h}[/]: {escape(problems[h])}", highlight=False)
        for d in drift.get(h, []):
            out.print(f"[yellow]drift[/] [bold]{h}[/] {escape(d['what'])}: {escape(d['detail'])}", highlight=False)
    clean = len(hosts) - len(drifted) - len(problems)
    out.print(f"{len(hosts)} hosts: {clean} clean, {len(drifted)} drifted, {len(problems)} errors "
              "(since the last apply; files and units only: `superpod drift` is the full check)", highlight=False)
    out.print(f"run: {outcome.run_dir}", highlight=False)
    return code
