"""Times `superpod apply` and `superpod drift` on the lab pod's GPU nodes in containers:
first apply (fresh nodes), no-op apply (converged), drift check (check+diff, fresh facts).

    .venv/bin/python bench/bench_apply.py [--repeat N]

Needs dockerd and the molecule base image (built when missing). Each figure is wall time of
the whole command, as a user sees it, with site.yml as it stands. Containers are removed at
the end."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.labpod import LabPod, ensure_image, superpod  # noqa: E402

LIMIT = "gpu_nodes"


def timed(args: list[str]) -> float:
    t0 = time.monotonic()
    proc = superpod(*args)
    elapsed = time.monotonic() - t0
    if proc.returncode not in (0,):
        raise SystemExit(f"`superpod {' '.join(args)}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="no-op apply and drift check repetitions")
    opts = parser.parse_args()
    pod = LabPod(groups=(LIMIT,), tag="bench")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pod.start(ensure_image())
            overlay = pod.write_overlay(Path(tmp) / "overlay.yml")
            common = ["--stack", pod.stack, "-i", str(overlay), "--runs-dir", str(Path(tmp) / "runs"),
                      "--limit", LIMIT, "--no-progress"]
            first = timed(["apply", *common])
            noop = [timed(["apply", *common]) for _ in range(opts.repeat)]
            drift = [timed(["drift", *common]) for _ in range(opts.repeat)]
        finally:
            pod.remove()
    print(f"lab pod: {len(pod.hosts)} GPU nodes in containers, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"first apply      {first:7.1f} s")
    print(f"no-op apply      {statistics.median(noop):7.1f} s  (median of {len(noop)})")
    print(f"drift check      {statistics.median(drift):7.1f} s  (median of {len(drift)})")


if __name__ == "__main__":
    main()
