"""The CPU benchmarks' shared arguments (bench/fresh_runs.py): a mistyped case or option is refused
with the usage line and exit 2, not run as a case name in a child process (which died in a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.fresh_runs import repeat_and_names

ROOT = Path(__file__).resolve().parents[1]
CASES = ["1k", "8k"]


def test_defaults_to_every_case_once():
    assert repeat_and_names([], CASES) == (1, CASES)


def test_repeat_and_chosen_cases():
    assert repeat_and_names(["--repeat", "3", "8k"], CASES) == (3, ["8k"])


def test_more_names_are_accepted_but_not_run_by_default():
    """bench_pulumi runs the example stacks by default and bench_plan's pods when named."""
    assert repeat_and_names([], CASES, more=("100k",)) == (1, CASES)
    assert repeat_and_names(["100k", "1k"], CASES, more=("100k",)) == (1, ["100k", "1k"])


@pytest.mark.parametrize("args, says", [(["9k"], "unknown case 9k"), (["--repeat", "0"], "at least 1"),
                                        (["--repeat", "x"], "invalid int"), (["--frob"], "unrecognized")])
def test_bad_arguments_are_refused(args, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        repeat_and_names(args, CASES)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_bench_plan_refuses_an_unknown_case_before_running_any():
    done = subprocess.run([sys.executable, str(ROOT / "bench/bench_plan.py"), "--help-me"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "usage: bench_plan.py" in done.stderr and "Traceback" not in done.stderr


def test_bench_pulumi_takes_bench_plans_pods_by_name():
    """The README's `bench_pulumi.py --repeat 2 100k` line: 100k is bench_plan's pod, not a stack."""
    done = subprocess.run([sys.executable, str(ROOT / "bench/bench_pulumi.py"), "--repeat", "2", "101k"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "choose from lab, roce-1k, dgx-h100-ib, roce-8k, 1k, 8k, 32k, 100k" in done.stderr
