"""kill -9 during a re-plan of the 8k-GPU stack, 50 times: how often the artifact folder shows
the old set, the new set, or a mix (must be 0), and what killed plans leave behind.

Run: .venv/bin/python bench/bench_plan_kill.py [trials] [stack]   (default 50 roce-8k)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.plan_kill import run_trials  # noqa: E402


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    stack = sys.argv[2] if len(sys.argv) > 2 else "roce-8k"
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        result = run_trials(stack, Path(folder), trials, report=lambda so_far: print(so_far, flush=True))
    result["stack"], result["wall_seconds"] = stack, round(time.monotonic() - start)
    print(json.dumps(result, indent=1))
    sys.exit(1 if result["mixed"] else 0)


if __name__ == "__main__":
    main()
