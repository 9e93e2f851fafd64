"""A first plan and a re-plan of one bench pod into the same folder, as a user runs them: peak RSS and
CPU seconds of each `superpod plan --spec FILE --out DIR` process (issue 39: 100k GPUs under 600 MiB,
the re-plan included: its growth check reads the previous layout.json).

Run: .venv/bin/python bench/bench_replan.py [8k|100k ...]   (bench_plan.py's pods; default 8k)
Each run is its own process, measured by the kernel (os.wait4), so its figures are its own.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_plan import CASES  # noqa: E402
from bench.fresh_runs import load_line  # noqa: E402

SUPERPOD = Path(sys.executable).with_name("superpod")


def measure(spec: Path, out: Path) -> dict:
    """Run `superpod plan` as a child and read its own rusage from the kernel."""
    pid = os.posix_spawn(str(SUPERPOD), [str(SUPERPOD), "plan", "--spec", str(spec), "--out", str(out), "--json"],
                         os.environ, file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"superpod plan --spec {spec} exited {os.waitstatus_to_exitcode(status)}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024}


def main() -> None:
    labels = sys.argv[1:] or ["8k"]
    pods = dict(CASES)
    unknown = [label for label in labels if label not in pods]
    if unknown:
        raise SystemExit(f"error: pod: {unknown} not among {list(pods)}")
    print(load_line())
    print(f"{'pod':>5} {'first cpu s':>11} {'first MiB':>9} {'re-plan cpu s':>13} {'re-plan MiB':>11}")
    for label in labels:
        with tempfile.TemporaryDirectory(prefix=f"replan-{label}-") as tmp:
            spec = Path(tmp) / "spec.json"
            spec.write_text(json.dumps(pods[label]))
            out = Path(tmp) / "out"
            first = measure(spec, out)
            again = measure(spec, out)
        print(f"{label:>5} {first['cpu']:>11.2f} {first['peak_mib']:>9.0f} {again['cpu']:>13.2f} "
              f"{again['peak_mib']:>11.0f}")
    print(load_line())


if __name__ == "__main__":
    main()
