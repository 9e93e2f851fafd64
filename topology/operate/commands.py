"""`superpod apply` and `superpod drift`: a run, its live progress, its report, its exit code.
The typer layer in topology/cli.py only parses options and calls these."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from topology.operate import converged, inputs, manifest
from topology.operate.drift import EXIT_ERROR, DriftReport
from topology.operate.events import host_problems, host_tallies, no_play_matched
from topology.operate.private_files import private_dir
from topology.operate.progress import LiveProgress
from topology.operate.record_key import UntrustedRecord, load_key
from topology.operate.report import print_drift, print_problems, summary_table, totals_line, write_retry
from topology.operate.runs import OperateError, RunOutcome, RunRequest, run_playbook
from topology.operate.trusted_record import write_vetted

EXIT_OK, EXIT_FAILED = 0, 1


def _run(req: RunRequest, console: Console, progress: bool | None, title: str) -> RunOutcome:
    with LiveProgress(console, enabled=progress, title=title) as live:
        return run_playbook(req, on_event=live.handle)


@dataclass(frozen=True)
class Skip:
    """Hosts left out of a run because a full apply converged them and they are unchanged."""

    hosts: list[str]
    since: str  # the oldest of their full applies
    rest: RunRequest | None  # the run for every other host, or None when none is left


def _check_record_key() -> None:
    """The key that signs the records must be usable before anything runs (a run that cannot
    sign what it records would leave hosts unrecorded): made on first use, refused when others
    can read it."""
    try:
        load_key()
    except UntrustedRecord as e:
        raise OperateError(str(e)) from None


def _print_refused(console: Console, refused: dict[str, str]) -> None:
    for host, why in sorted(refused.items()):
        console.print(f"[yellow]not checked by its record[/] [bold]{host}[/] (runs in full): {escape(why)}",
                      highlight=False)


def _print_changed(console: Console, why: dict[str, str]) -> None:
    """Why a host a full apply converged runs in full after all (its record check's findings)."""
    for host, reason in sorted(why.items()):
        console.print(f"[yellow]changed since its full apply[/] [bold]{host}[/] (runs in full): {escape(reason)}",
                      highlight=False)


def _record_check(req: RunRequest, hosts: list[str], kind: str, console: Console, progress: bool | None,
                  title: str, env: tuple[tuple[str, str], ...] = ()) -> tuple[RunOutcome, dict[str, str]]:
    """Runs the record check (quick_drift.yml) on `hosts` with their records vetted against
    today's tree (topology/operate/trusted_record.py); returns the run and the refused hosts."""
    with tempfile.TemporaryDirectory(dir=private_dir(req.runs_root), prefix=".record-check-") as vetted_dir:
        refused = write_vetted(req.runs_root / "manifest", hosts, req.project_dir, Path(vetted_dir),
                               req.playbook_path.parent)
        check_req = replace(req, kind=kind, playbook=manifest.QUICK_PLAYBOOK, tags=None, check=False,
                            env=(*req.env, ("SUPERPOD_MANIFEST_DIR", vetted_dir), *env))
        return _run(check_req, console, progress, title), refused


def _skip_converged(req: RunRequest, digest: str, console: Console, progress: bool | None,
                    full_after: timedelta, fresh_facts: bool) -> Skip | None:
    """Checks the hosts a full apply converged with these inputs against their record (one task
    per host, and node_check where the record holds it); the clean ones are skipped. A host whose
    record does not verify or holds a read today's tree does not declare runs in full, and the
    reason is printed. None when nothing can be skipped."""
    entries = converged.candidates(req.runs_root / "converged.json", digest, full_after)
    if not entries:
        return None
    outcome, refused = _record_check(
        req, sorted(entries), "converged-check", console, progress, f"converged hosts of {req.stack}: record check",
        env=(("SUPERPOD_ONLY_HOSTS", ",".join(sorted(entries))),
             ("SUPERPOD_FRESH_FACTS", "1" if fresh_facts else "0")))
    _print_refused(console, refused)
    found = manifest.quick_results(outcome.events)
    in_scope = {(e.get("event_data") or {}).get("host") for e in outcome.events
                if str(e.get("event", "")).startswith("runner_on_")} - {None}
    # ansible itself failed (no host's failure explains its exit code): decide nothing from it
    if outcome.rc != 0 and not found.failed:
        return None
    clean = sorted(h for h in entries if found.clean(h))
    _print_changed(console, {h: found.why_not_clean(h) for h in entries if h not in clean and h not in refused})
    if not clean:
        return None
    rest = sorted(in_scope - set(clean))
    rest_file = outcome.run_dir / "rest.txt"
    if rest:
        rest_file.write_text("".join(f"{h}\n" for h in rest), encoding="utf-8")
    since = min(entries[h]["at"] for h in clean)
    return Skip(clean, since, replace(req, limit=f"@{rest_file}") if rest else None)


def _print_skip(console: Console, skip: Skip, what: str) -> None:
    names = ", ".join(skip.hosts) if len(skip.hosts) <= 12 else f"{', '.join(skip.hosts[:12])}, ..."
    console.print(f"{len(skip.hosts)} hosts converged and unchanged ({what}): {names}\n"
                  f"  each by a full apply since {skip.since} with the same playbook, roles and inventory, "
                  "and its record (files, units, the roles' reads, facts) checked clean now; "
                  "`--full` runs every task", highlight=False)


def apply(req: RunRequest, console: Console, progress: bool | None = None, full: bool = False,
          full_after: timedelta = converged.FULL_AFTER, canary: str | None = None, as_json: bool = False) -> int:
    """Runs site.yml; prints the per-host summary; 0 when every host is ok, 1 when a host
    failed or was unreachable (the others still ran), 2 when ansible itself failed.
    Hosts a full apply converged with the same inputs, checked unchanged now, are skipped
    (topology/operate/converged.py) unless `full`; a run with --tags is never full.
    `canary`: that switch is pushed (and gated) alone before any other (topology/operate/rollout.py).
    With `as_json` the human lines go to stderr and stdout holds one JSON object (apply_json)."""
    if canary:
        from topology.operate import rollout  # (the plan's rollout groups: imported only when pushing)

        req = rollout.with_canary(req, canary)
    if as_json:
        code, result = _apply(req, Console(stderr=True), progress, full, full_after)
        print(json.dumps(apply_json(code, result), indent=1))
        return code
    return _apply(req, console, progress, full, full_after)[0]


@dataclass
class ApplyResult:
    """What an apply found, for its JSON form."""

    skipped: list[str]
    tallies: dict | None = None
    problems: list | None = None
    run_dir: str | None = None
    retry: str | None = None


def apply_json(code: int, r: ApplyResult) -> dict:
    return {
        "ok": code == EXIT_OK,
        "exit_code": code,
        "skipped_converged": r.skipped,
        "hosts": {h: {"status": t.status, "ok": t.ok, "changed": t.changed, "failed": t.failed,
                      "unreachable": t.unreachable, "skipped": t.skipped}
                  for h, t in sorted((r.tallies or {}).items())},
        "problems": [{"host": p.host, "kind": p.kind, "task": p.task, "role": p.role, "message": p.message}
                     for p in r.problems or []],
        "run_dir": r.run_dir,
        "retry_file": r.retry,
    }


def _only_skipped(console: Console, skip: Skip) -> int:
    console.print(f"{len(skip.hosts)} hosts: {len(skip.hosts)} skipped, changed=0 failed=0 unreachable=0",
                  highlight=False)
    return EXIT_OK


def _apply(req: RunRequest, console: Console, progress: bool | None, full: bool,
           full_after: timedelta) -> tuple[int, ApplyResult]:
    _check_record_key()
    whole = req.tags is None and not req.check
    digest = inputs.digest(req) if whole else ""
    skip = _skip_converged(req, digest, console, progress, full_after, req.fresh_facts) if whole and not full else None
    if skip:
        _print_skip(console, skip, "skipped")
        if skip.rest is None:
            return _only_skipped(console, skip), ApplyResult(skip.hosts)
        req = skip.rest
    outcome = _run(req, console, progress, f"apply {req.stack}")
    if skip and outcome.rc == 0 and no_play_matched(outcome.events):
        return _only_skipped(console, skip), ApplyResult(skip.hosts)
    tallies, problems = host_tallies(outcome.events), host_problems(outcome.events)
    ok_hosts = converged.converged_hosts(tallies, problems) if whole else []
    # what `drift --quick` compares with: a whole run saw every entry, so it replaces the host's record
    manifest.record(req.runs_root / "manifest", outcome.events, replace_hosts=ok_hosts,
                    facts_dir=req.runs_root / "facts", project_dir=req.project_dir)
    if whole:
        converged.record(req.runs_root / "converged.json", digest, outcome.run_dir.name, tallies, problems)
    if tallies:
        console.print(summary_table(tallies, title=f"{req.kind} {req.stack}: per-host summary"))
    print_problems(console, problems)
    bad = sorted({p.host for p in problems} | {t.host for t in tallies.values() if t.failed or t.unreachable})
    retry = write_retry(outcome.run_dir, bad)
    result = ApplyResult(skip.hosts if skip else [], tallies, problems, str(outcome.run_dir),
                         str(retry) if retry else None)
    from topology.operate import rollout  # (imports the plan's renderers: not on a run that skips every host)

    stop = rollout.stopped(req, set(tallies), {h for h, t in tallies.items() if t.changed}, set(bad))
    if stop:
        rollout.print_stop(console, stop)
    console.print(totals_line(tallies), highlight=False)
    console.print(f"run: {outcome.run_dir} (events: artifacts/run/job_events, stdout: artifacts/run/stdout)",
                  highlight=False)
    if retry:
        console.print(f"re-run only these hosts: superpod apply --stack {req.stack} --limit @{retry}",
                      highlight=False)
        return EXIT_FAILED, result
    if not tallies or outcome.rc != 0:
        console.print(f"[bold red]error:[/] ansible-playbook exited rc={outcome.rc} ({outcome.status}); "
                      f"see {outcome.stdout_path}", highlight=False)
        return EXIT_ERROR, result
    return EXIT_OK, result


def drift(req: RunRequest, console: Console, as_json: bool = False, fix: bool = False,
          progress: bool | None = None, full: bool = False, full_after: timedelta = converged.FULL_AFTER) -> int:
    """Check + diff run; reports each task that would change, per host. Exit 0 clean, 1 drift,
    2 errors. With fix: re-applies to the drifted hosts only (and only their drifted roles when
    every drifted task belongs to a role); the exit code is then the fix run's. Hosts a full
    apply converged with the same inputs are checked against their record first; only the
    others (and any whose record shows a change) get the check run, unless `full`."""
    _check_record_key()
    out = Console(stderr=True) if as_json else console
    skip = None
    if req.tags is None and not full:
        skip = _skip_converged(req, inputs.digest(req), out, progress, full_after, fresh_facts=True)
    if skip and skip.rest is None:
        _print_skip(out, skip, "clean by their record")
        report = DriftReport(changes=[], tallies={}, problems=[], record_clean=skip.hosts)
    else:
        if skip:
            _print_skip(out, skip, "clean by their record")
            req = skip.rest
        check_req = replace(req, kind="drift", check=True, fresh_facts=True)  # drift is about now: no cached facts
        outcome = _run(check_req, out, progress, f"drift {req.stack}")
        if skip and outcome.rc == 0 and no_play_matched(outcome.events):  # the others: no play targets them
            report = DriftReport(changes=[], tallies={}, problems=[], run_dir=str(outcome.run_dir))
        else:
            report = DriftReport.from_events(outcome.events, rc=outcome.rc, run_dir=str(outcome.run_dir))
        report.record_clean = skip.hosts if skip else []
        write_retry(outcome.run_dir, report.problem_hosts)
    if as_json and not fix:
        print(json.dumps(report.as_json(), indent=1))
        return report.exit_code
    print_drift(out, report)
    if report.run_dir:
        out.print(f"run: {report.run_dir}", highlight=False)
    if not fix:
        return report.exit_code
    hosts, roles = report.fix_targets()
    if not hosts:
        out.print("nothing to fix", highlight=False)
        return EXIT_ERROR if report.exit_code == EXIT_ERROR else EXIT_OK
    out.print(f"fixing {', '.join(hosts)}" + (f" (roles: {', '.join(roles)})" if roles else " (whole site.yml)"),
              highlight=False)
    fix_req = replace(req, kind="fix", check=False, limit=",".join(hosts), tags=",".join(roles) if roles else None)
    code = apply(fix_req, out, progress, full=True)  # the check found them drifted: no record decides here
    if as_json:
        print(json.dumps(report.as_json() | {"fix_exit_code": code}, indent=1))
    return max(code, EXIT_ERROR if report.exit_code == EXIT_ERROR else EXIT_OK)


def quick_drift(req: RunRequest, console: Console, as_json: bool = False, progress: bool | None = None) -> int:
    """Each host against the record of its last apply (topology/operate/manifest.py): one module
    call per host. Exit 0 clean, 1 drift, 2 a host failed, was unreachable or has no record."""
    _check_record_key()
    manifest_dir = req.runs_root / "manifest"
    if not any(manifest_dir.glob("*.json")):
        raise OperateError(f"--quick: no record of an apply in {manifest_dir}; run `superpod apply --stack "
                           f"{req.stack}` first (or `superpod drift` without --quick: the full check)")
    out = Console(stderr=True) if as_json else console
    hosts = sorted(p.name.removesuffix(".json") for p in manifest_dir.glob("*.json"))
    outcome, _ = _record_check(req, hosts, "quick-drift", out, progress, f"drift --quick {req.stack}")
    found = manifest.quick_results(outcome.events)
    drift, problems = found.drift, found.problems
    hosts = sorted(set(drift) | set(problems))
    drifted = sorted(h for h in drift if drift[h] and h not in problems)
    # a node_check mismatch fails its task in the record check (rc 2) and is drift, named in `drift`
    ansible_failed = outcome.rc != 0 and not found.failed
    code = EXIT_ERROR if problems or not hosts or ansible_failed else (EXIT_FAILED if drifted else EXIT_OK)
    if as_json:
        print(json.dumps({
            "hosts": {h: {"status": "error" if h in problems else ("drift" if drift[h] else "clean"),
                          "drift": drift.get(h, []), "problem": problems.get(h, ""),
                          "not_checked": found.unverifiable.get(h, [])} for h in hosts},
            "drifted_hosts": drifted, "problem_hosts": sorted(problems), "exit_code": code,
            "run": str(outcome.run_dir)}, indent=1))
        return code
    for h in hosts:
        if h in problems:
            out.print(f"[red]error[/] [bold]{h}[/]: {escape(problems[h])}", highlight=False)
        for d in drift.get(h, []):
            out.print(f"[yellow]drift[/] [bold]{h}[/] {escape(d['what'])}: {escape(d['detail'])}", highlight=False)
        if found.unverifiable.get(h):
            tasks = sorted({f"{u['what']}: {u['task']}" for u in found.unverifiable[h]})
            out.print(f"[dim]not checked[/] [bold]{h}[/]: {len(tasks)} result(s) the record cannot replay "
                      f"({escape('; '.join(tasks[:5]))}{', ...' if len(tasks) > 5 else ''})", highlight=False)
    clean = len(hosts) - len(drifted) - len(problems)
    out.print(f"{len(hosts)} hosts: {clean} clean, {len(drifted)} drifted, {len(problems)} errors "
              "(since the last apply: files, units, modules, the roles' reads and facts; "
              "`superpod drift --full` is the full check)", highlight=False)
    out.print(f"run: {outcome.run_dir}", highlight=False)
    return code
