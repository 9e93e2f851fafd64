"""What the CPU benchmarks share: `[--repeat N] [NAME ...]` arguments, each case measured in fresh
processes of the benchmark itself (`SCRIPT --one NAME`, printing its figures as JSON on the last
line), the least CPU of N kept (a shared VM's speed swings), and the load beside the figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def repeat_and_names(args: list[str], default: list[str]) -> tuple[int, list[str]]:
    repeat = 1
    if args[:1] == ["--repeat"]:
        repeat, args = int(args[1]), args[2:]
    return repeat, args or default


def least_cpu(script: str, name: str, repeat: int) -> dict:
    """The run with the least CPU of `repeat` fresh `script --one name` processes."""
    runs = [json.loads(subprocess.run([sys.executable, script, "--one", name], capture_output=True, text=True,
                                      check=True).stdout.splitlines()[-1]) for _ in range(repeat)]
    return min(runs, key=lambda run: run.get("cpu", 0))  # a refused case has no cpu


def load_line() -> str:
    return "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
