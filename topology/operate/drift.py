"""A drift report from a check-mode (--check --diff) run: per host, each task that would
change and its diff; the exit code a cron job relies on; and what `--fix` re-applies."""

from __future__ import annotations

from dataclasses import dataclass, field

from topology.operate.events import HostProblem, HostTally, TaskChange, changed_tasks, host_problems, host_tallies

EXIT_CLEAN, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2


@dataclass
class DriftReport:
    changes: list[TaskChange]
    tallies: dict[str, HostTally]
    problems: list[HostProblem]
    rc: int = 0
    run_dir: str = ""
    errors: list[str] = field(default_factory=list)
    # hosts not in the check run: a full apply converged them with the same inputs and their
    # record checked clean now (topology/operate/converged.py)
    record_clean: list[str] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: list[dict], rc: int = 0, run_dir: str = "") -> DriftReport:
        report = cls(changed_tasks(events), host_tallies(events), host_problems(events), rc, run_dir)
        if not report.tallies:
            report.errors.append(f"ansible-playbook ended without a play recap (rc={rc}); see {run_dir} stdout")
        elif rc not in (0, 2, 4) and not report.problems:
            # 2: a host failed, 4: a host unreachable; anything else is ansible's own error
            report.errors.append(f"ansible-playbook exited rc={rc}; see {run_dir} stdout")
        return report

    @property
    def drifted_hosts(self) -> list[str]:
        return sorted({c.host for c in self.changes})

    def mismatches(self, host: str) -> list[str]:
        """The named items in which the host differs from its plan (node_check's, a planned link
        missing): drift that no apply fixes, reported as such."""
        return [item for c in self.changes if c.host == host for item in c.mismatches]

    @property
    def problem_hosts(self) -> list[str]:
        return sorted({p.host for p in self.problems})

    def by_host(self) -> dict[str, list[TaskChange]]:
        out: dict[str, list[TaskChange]] = {}
        for change in self.changes:
            out.setdefault(change.host, []).append(change)
        return dict(sorted(out.items()))

    @property
    def exit_code(self) -> int:
        """0 clean, 1 drift, 2 errors (a host failed or was unreachable, or ansible itself failed):
        an error wins, since an unreachable host's drift is unknown. A node that differs from its
        plan (superpod_plan_mismatch: a GPU lost, a planned link missing) is drift, not an error:
        under --check the roles report it as a change and go on checking the host."""
        if self.errors or self.problems:
            return EXIT_ERROR
        return EXIT_DRIFT if self.changes else EXIT_CLEAN

    def fix_targets(self) -> tuple[list[str], list[str] | None]:
        """Hosts to re-apply and the role tags to limit it to (None: whole site.yml).
        Only drifted roles are re-run when every drifted task belongs to a role (site.yml tags
        each role with its name); a task outside any role cannot be targeted by a tag, so then
        the drifted hosts get the whole playbook."""
        fixable = [c for c in self.changes if not c.mismatches]  # apply cannot add a GPU or a NIC
        hosts = sorted({c.host for c in fixable})
        roles = {c.role for c in fixable}
        if None in roles:
            return hosts, None
        return hosts, sorted(roles)  # type: ignore[arg-type]

    def as_json(self) -> dict:
        hosts = {}
        for host in self.record_clean:
            hosts[host] = {"status": "clean", "checked": "record", "changes": [], "plan_mismatches": [], "problems": [],
                           "recap": None}
        for host in sorted(set(self.tallies) | {c.host for c in self.changes} | set(self.problem_hosts)):
            tally = self.tallies.get(host)
            hosts[host] = {
                "checked": "full",
                "status": ("unreachable" if any(p.kind == "unreachable" for p in self.problems if p.host == host)
                           else "failed" if host in self.problem_hosts
                           else "drift" if any(c.host == host for c in self.changes) else "clean"),
                "changes": [
                    {k: v for k, v in c.as_dict().items() if k != "host"} for c in self.changes if c.host == host
                ],
                "plan_mismatches": self.mismatches(host),
                "problems": [{"kind": p.kind, "task": p.task, "role": p.role, "message": p.message}
                             for p in self.problems if p.host == host],
                "recap": None if tally is None else {
                    "ok": tally.ok, "changed": tally.changed, "failed": tally.failed,
                    "unreachable": tally.unreachable, "skipped": tally.skipped,
                },
            }
        fix_hosts, fix_roles = self.fix_targets()
        return {
            "exit_code": self.exit_code,
            "drifted_hosts": self.drifted_hosts,
            "problem_hosts": self.problem_hosts,
            "fix": {"limit": fix_hosts, "tags": fix_roles} if fix_hosts else None,
            "errors": self.errors,
            "run_dir": self.run_dir,
            "record_clean_hosts": self.record_clean,
            "hosts": dict(sorted(hosts.items())),
        }
