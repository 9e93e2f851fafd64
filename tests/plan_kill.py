"""kill -9 during `superpod plan`: after each kill the artifact folder shows one whole set,
the old or the new, never a mix. Shared by tests/test_hardening_publish.py (a few trials)
and bench/bench_plan_kill.py (50 trials of an 8k-GPU re-plan)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def visible(out: Path) -> dict[str, bytes]:
    """What a reader of <out> sees (through the link), bookkeeping (dot names) left out."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(out, followlinks=True):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            p = Path(dirpath) / name
            if not name.startswith(".") and p.exists():  # a dangling link (a user's) has no content
                seen[str(p.relative_to(out))] = p.read_bytes()
    return seen


def two_specs(stack: str, folder: Path) -> tuple[Path, Path]:
    """The stack's spec and a variant whose in-band addresses differ (devices.csv, ipplan.csv,
    layout.json and the inventory all change)."""
    pod = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]["superpod:pod"]
    a, b = folder / "a.yaml", folder / "b.yaml"
    a.write_text(yaml.safe_dump(pod))
    b.write_text(yaml.safe_dump({**pod, "addressing": {**pod.get("addressing", {}), "inband": "10.32.0.0/14"}}))
    return a, b


def _plan(spec: Path, out: Path) -> subprocess.Popen:
    # --allow-moves: the trials re-plan a variant whose addresses differ on purpose (topology/layout/growth.py)
    return subprocess.Popen([sys.executable, "-m", "topology.cli", "plan", "--spec", str(spec), "--out", str(out),
                             "--allow-moves"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def _left_over(out: Path) -> tuple[int, int]:
    """Staging folders a killed plan left beside <out> (the next plan removes them) and their bytes."""
    current = os.readlink(out) if out.is_symlink() else None
    stale = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.") and p.name != current
             and not p.name.endswith(".lock")]
    size = sum(f.stat().st_size for p in stale for f in ([p] if not p.is_dir() else p.rglob("*")) if f.is_file())
    return len(stale), size


def _dir_times(out: Path) -> list[int]:
    """Modification times of the folders a plan writes into: any write shows here first."""
    dirs = [out.parent] + [Path(d) for d, _, _ in os.walk(out, followlinks=True)]
    return [d.stat().st_mtime_ns for d in dirs if d.exists()]


def run_trials(stack: str, folder: Path, trials: int, seed: int = 20, report=None) -> dict:
    """Plans A and B once in full (their sets are the references), then re-plans the other one
    `trials` times, each killed with SIGKILL at a random moment of its run."""
    rng = random.Random(seed)
    a, b = two_specs(stack, folder)
    out = folder / "out"
    sets, durations = {}, []
    for name, spec in (("b", b), ("a", a)):
        start = time.monotonic()
        proc = _plan(spec, out)
        _, err = proc.communicate()
        assert proc.returncode == 0, err.decode()
        durations.append(time.monotonic() - start)
        sets[name] = visible(out)
    assert sets["a"] != sets["b"]
    full = max(durations)
    outcome: Counter = Counter()
    staging_left, staging_bytes, current = 0, 0, "a"
    for _ in range(trials):
        target = "b" if current == "a" else "a"
        start = time.monotonic()
        before = _dir_times(out)
        proc = _plan(a if target == "a" else b, out)
        # a quarter of the kills anywhere in the run, the rest once writing has begun (where a mix could happen)
        if rng.random() < 0.25:
            time.sleep(rng.uniform(0.2, 1.0) * full)
        else:
            while proc.poll() is None and _dir_times(out) == before and time.monotonic() - start < 2 * full:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.15) * full)  # the writing phase is short since the renders got faster
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            outcome["killed"] += 1
            proc.communicate()
        else:
            proc.communicate()
            full = time.monotonic() - start  # re-plans link unchanged files: track how long one takes now
        seen = visible(out)
        which = next((name for name, files in sets.items() if files == seen), "mixed")
        outcome[which if which == "mixed" else ("new" if which == target else "old")] += 1
        count, size = _left_over(out)
        staging_left += count
        staging_bytes = max(staging_bytes, size)
        current = which if which != "mixed" else current
        if report:
            report(dict(outcome))
    # the next plan cleans what killed ones left
    proc = _plan(a, out)
    proc.communicate()
    return {"trials": trials, "killed": outcome["killed"], "old": outcome["old"], "new": outcome["new"],
            "mixed": outcome["mixed"], "staging_left_after_kills": staging_left,
            "largest_staging_left_bytes": staging_bytes, "left_after_next_plan": _left_over(out)[0],
            "plan_seconds": round(full, 1), "final_is_a": visible(out) == sets["a"]}
