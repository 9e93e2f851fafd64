"""Where the controller's samples went in a py-spy raw profile (bench/fullcheck_cpu.py --profile DIR
writes DIR/NAME.txt): the share of ansible-playbook's forked workers, of ansible-playbook itself and
of the rest (superpod with ansible-runner's events, mitogen's multiplexer), then the share of every
sample whose stack passes through each named frame (a function name, or `file.py` for a module).

    .venv/bin/python bench/profile_shares.py PROFILE.txt [FRAME ...]"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

FRAMES = ("_compile_template", "_compile_expression", "template (ansible/_internal/_templating/_engine.py",
          "get_vars", "_queue_task", "deepcopy", "awx_display", "event_context", "_ensure_non_collection_wrappers",
          "_execute (ansible/executor/task_executor.py", "post_validate", "evaluate_conditional",
          "template.py", "from_code", "marshal", "jinja_code_cache")


def part(stack: str) -> str:
    """Which process a stack belongs to. py-spy names each process in the chain (superpod, then
    ansible-playbook, then its children); a forked worker's stack goes on through WorkerProcess."""
    depth = sum(1 for frame in stack.split(";") if frame.startswith("process "))
    if "WorkerProcess" in stack:
        return "ansible-playbook's forked workers"
    if depth == 2 and "ansible-playbook" in stack:
        return "ansible-playbook"
    if depth == 1:
        return "superpod (ansible-runner, its events)"
    return "other (mitogen's multiplexer, ...)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("frames", nargs="*", default=FRAMES, help="frames to count (substrings of a frame)")
    opts = parser.parse_args()
    parts, frames, total = Counter(), Counter(), 0
    for line in opts.profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        parts[part(stack)] += n
        for frame in opts.frames:
            if any(frame in f for f in stack.split(";")):
                frames[frame] += n
    print(f"{opts.profile}: {total} samples")
    for name, n in parts.most_common():
        print(f"  {100 * n / total:5.1f} %  {name}")
    for frame in opts.frames:
        print(f"  {100 * frames[frame] / total:5.1f} %  through {frame}")


if __name__ == "__main__":
    main()
