"""Which hosts a full run of site.yml left converged, with which inputs, and when.

`superpod apply` (and `drift`) run every task only on hosts that need it. A host is skipped
when all of these hold:
- a full apply (no --tags, every play) ended on it with nothing failed or unreachable;
- the inputs (topology/operate/inputs.py: playbook, roles, inventory, versions) are the same now;
- that full apply is younger than `full_after` (default 24 h): a full run at least once a day
  catches what no record sees (state only a command task reads, like firmware settings);
- and, checked on the host now, everything that apply recorded (topology/operate/manifest.py:
  files, units, live sysctls, loaded modules, packages) is still as it left it.
The record is `.runs/<stack>/converged.json`: {host: {inputs, at, run}}, 0600 and signed
(topology/operate/record_key.py): one that does not verify converges no host.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from topology.operate.events import HostProblem, HostTally
from topology.operate.private_files import write_private
from topology.operate.record_key import UntrustedRecord, label, sign, verified

FULL_AFTER = timedelta(hours=24)


def load(path: Path) -> dict[str, dict]:
    """The record if its signature holds; {} when it is missing, unreadable or does not verify
    (that only costs a full run)."""
    try:
        data = json.loads(verified(path, label(path, 2)))
    except FileNotFoundError:
        return {}
    except (ValueError, OSError, UntrustedRecord):
        return {}
    return data if isinstance(data, dict) else {}


def _at(entry: dict) -> datetime | None:
    try:
        at = datetime.fromisoformat(str(entry.get("at")))
    except ValueError:
        return None
    return at if at.tzinfo else None


def candidates(path: Path, inputs: str, full_after: timedelta = FULL_AFTER,
               now: datetime | None = None) -> dict[str, dict]:
    """host -> its entry, for hosts a full run converged with these inputs within full_after."""
    now = now or datetime.now(timezone.utc)
    out = {}
    for host, entry in load(path).items():
        at = _at(entry) if isinstance(entry, dict) else None
        if at and entry.get("inputs") == inputs and timedelta(0) <= now - at < full_after:
            out[host] = entry
    return out


def converged_hosts(tallies: dict[str, HostTally], problems: Iterable[HostProblem]) -> list[str]:
    """Hosts a run ended on with nothing failed or unreachable."""
    bad = {p.host for p in problems}
    return sorted(h for h, t in tallies.items() if not t.failed and not t.unreachable and h not in bad)


def record(path: Path, inputs: str, run: str, tallies: dict[str, HostTally], problems: Iterable[HostProblem],
           now: datetime | None = None) -> list[str]:
    """After a full run: its converged hosts get these inputs and the time; a host it failed on
    or could not reach loses its entry (it is not known to be converged any more)."""
    problems = list(problems)
    ok = converged_hosts(tallies, problems)
    at = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    data = load(path)
    for host in set(tallies) | {p.host for p in problems}:
        data.pop(host, None)
    data |= {h: {"inputs": inputs, "at": at, "run": run} for h in ok}
    write_private(path, json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    sign(path, label(path, 2))
    return ok
