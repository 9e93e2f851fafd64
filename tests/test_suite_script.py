"""scripts/test.sh's own bookkeeping, run on a stub tree (stand-ins for bootstrap, ruff and pytest):
each step's `== cpu` line counts that step's processes only (a background job that ends during the
step once landed in the step's line: molecule's and e2e's whole CPU were read as pytest's), and
the watchdog stops a hung step without leaving its processes or its own sleep behind."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from tests.role_files import ROOT

# The stand-in pytest. The background job (`-m nautobot`) burns a second of CPU, then leaves a
# mark; the foreground step (`-n 2`) waits for the mark, so the job ends while the step runs.
STUB_PYTEST = """#!/usr/bin/env python3
import os, sys, time
args = " ".join(sys.argv[1:])
mark = os.path.join(os.environ["STUB_DIR"], "job-done")
if "-m nautobot" in args:
    while time.process_time() < 1.0:
        pass
    open(mark, "w").close()
elif "-n 2" in args:
    if os.environ.get("STUB_HANG"):
        os.execvp("sleep", ["sleep", os.environ["STUB_HANG"]])
    while not os.path.exists(mark):
        time.sleep(0.05)
"""


def _stub_tree(tmp: Path) -> Path:
    (tmp / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/test.sh", tmp / "scripts/test.sh")
    (tmp / "tests/nautobot").mkdir(parents=True)
    bin_dir = tmp / ".venv/bin"
    bin_dir.mkdir(parents=True)
    for path, text in ((tmp / "scripts/bootstrap.sh", "#!/bin/sh\nexit 0\n"),
                       (bin_dir / "ruff", "#!/bin/sh\nexit 0\n"), (bin_dir / "pytest", STUB_PYTEST)):
        path.write_text(text)
        path.chmod(0o755)
    return tmp


def _suite(tree: Path, timeout: int, **env: str) -> subprocess.CompletedProcess:
    """test.sh on the stub tree, its stdout and stderr (where `time` writes) as one text."""
    return subprocess.run(["bash", "scripts/test.sh"], cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=dict(os.environ, STUB_DIR=str(tree), **env))


def _cpu(output: str, name: str) -> float:
    found = re.search(rf"^== cpu {re.escape(name)}: [\d.]+ s wall, ([\d.]+) s user, ([\d.]+) s sys$", output, re.M)
    assert found, output
    return float(found.group(1)) + float(found.group(2))


def test_a_steps_cpu_line_leaves_out_a_background_job_that_ends_during_it(tmp_path):
    tree = _stub_tree(tmp_path)
    limit = "4211"  # the watchdog's sleep, found by its argument afterwards (the real suite's is 5200)
    proc = _suite(tree, timeout=120, SUPERPOD_SUITE_LIMIT=limit)
    assert proc.returncode == 0, proc.stdout
    assert "== nautobot: ok" in proc.stdout
    assert _cpu(proc.stdout, "nautobot") >= 0.9   # the job's own second of CPU is the job's
    assert _cpu(proc.stdout, "pytest") < 0.5, proc.stdout  # and not the step's it ended during
    assert _running(f"sleep {limit}") == []  # the watchdog went with the suite


def test_the_watchdog_stops_a_hung_step_and_leaves_nothing_running(tmp_path):
    tree = _stub_tree(tmp_path)
    hang = "97.25"  # a sleep no one else runs: found by its argument afterwards
    t0 = time.monotonic()
    proc = _suite(tree, timeout=90, STUB_HANG=hang, SUPERPOD_SUITE_LIMIT="6")
    assert proc.returncode != 0
    assert "== watchdog: the suite ran past 6s; still running: step 'pytest'" in proc.stdout, proc.stdout
    assert time.monotonic() - t0 < 60
    time.sleep(0.5)
    assert _running(f"sleep {hang}") == []  # the hung step's command was stopped with it


def _running(command: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"^{command}$"], capture_output=True, text=True).stdout.split()
