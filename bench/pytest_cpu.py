"""Per-test CPU of the pytest suite: a pytest plugin that records, for every test, the CPU seconds
(user + sys) of each phase (setup, call, teardown) in the test's own worker process and in the
children it waited for (ansible-playbook, vtysh, yanglint, slurmctld, ...).

The suite's budget is CPU on two cores (scripts/test.sh), so wall time per test misleads: a test
waiting on a subprocess costs its child's CPU, not its own. Use it as the suite runs:

    pytest -q -n 2 -p no:cacheprovider -p bench.pytest_cpu -m "not e2e and not nautobot" tests
    python bench/pytest_cpu.py build/pytest-cpu.jsonl --top 40

Each worker appends one JSON line per test phase to $PYTEST_CPU_OUT (default
build/pytest-cpu.jsonl). A session- or module-scoped fixture's setup is charged to the first test
that needs it, so the report lists the setup phases apart from the calls.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
from collections import defaultdict
from pathlib import Path

import pytest

OUT_ENV = "PYTEST_CPU_OUT"
DEFAULT_OUT = "build/pytest-cpu.jsonl"


def _cpu() -> tuple[float, float]:
    """(this process, its waited-for children): user + sys seconds each."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class _Recorder:
    def __init__(self, path: Path):
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.out = self.path.open("a", buffering=1)

    def _measure(self, item, phase):
        own0, kids0 = _cpu()
        yield
        own1, kids1 = _cpu()
        self.out.write(json.dumps({"test": item.nodeid, "phase": phase,
                                   "own": round(own1 - own0, 4), "children": round(kids1 - kids0, 4),
                                   "fixtures": list(getattr(item, "fixturenames", ()))}) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._measure(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._measure(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._measure(item, "teardown")


def pytest_configure(config):
    config.pluginmanager.register(_Recorder(Path(os.environ.get(OUT_ENV, DEFAULT_OUT))), "pytest-cpu-recorder")


def _report(path: Path, top: int) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    per_test: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_file: dict[str, float] = defaultdict(float)
    for r in rows:
        cpu = r["own"] + r["children"]
        per_test[r["test"]][r["phase"]] += cpu
        per_test[r["test"]]["children"] += r["children"]
        per_file[r["test"].split("::")[0]] += cpu
    total = sum(per_file.values())
    print(f"{len(per_test)} tests, {total:.1f} CPU s in test phases (collection and start-up not included)")
    print(f"\ntop {top} tests by CPU (setup + call + teardown; children = subprocesses' part)")
    def whole(t):
        return sum(v for k, v in per_test[t].items() if k != "children")
    for t in sorted(per_test, key=whole, reverse=True)[:top]:
        p = per_test[t]
        print(f"{whole(t):8.2f}  setup {p['setup']:6.2f} call {p['call']:7.2f} teardown {p['teardown']:5.2f}"
              f"  children {p['children']:6.2f}  {t}")
    print(f"\ntop {top} setup phases (fixtures built for that test, shared ones charged to their first user)")
    for t in sorted(per_test, key=lambda t: per_test[t]["setup"], reverse=True)[:top]:
        print(f"{per_test[t]['setup']:8.2f}  {t}")
    print(f"\ntop {top} files")
    for f in sorted(per_file, key=per_file.get, reverse=True)[:top]:
        print(f"{per_file[f]:8.2f}  {f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    _report(Path(a.path), a.top)
