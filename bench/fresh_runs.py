"""What the CPU benchmarks share: `[--repeat N] [NAME ...]` arguments, each case measured in fresh
processes of the benchmark itself (`SCRIPT --one NAME`, printing its figures as JSON on the last
line), the least CPU of N kept (a shared VM's speed swings), and the load beside the figures."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def repeat_and_names(args: list[str], default: list[str], description: str = "",
                     more: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    """`[--repeat N] [NAME ...]`: the names given (of `default` and `more`), else `default`; an
    unknown name or option is refused with argparse's usage line."""
    known = [*default, *more]
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=1, help="fresh runs per case; the least CPU is printed")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"cases: {' '.join(known)} (default: {' '.join(default)})")
    parsed = parser.parse_args(args)
    if parsed.repeat < 1:
        parser.error("--repeat: must be at least 1")
    unknown = [name for name in parsed.names if name not in known]
    if unknown:  # argparse's own `choices` refuses an empty list with nargs="*" on Python 3.11
        parser.error(f"NAME: unknown case {', '.join(unknown)} (choose from {', '.join(known)})")
    return parsed.repeat, parsed.names or default


def least_cpu(script: str, name: str, repeat: int) -> dict:
    """The run with the least CPU of `repeat` fresh `script --one name` processes."""
    runs = [json.loads(subprocess.run([sys.executable, script, "--one", name], capture_output=True, text=True,
                                      check=True).stdout.splitlines()[-1]) for _ in range(repeat)]
    return min(runs, key=lambda run: run.get("cpu", 0))  # a refused case has no cpu


def load_line() -> str:
    return "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
