"""CPU time of the Pulumi program under Pulumi's mocks (no engine), per example stack or bench
pod (bench/bench_plan.py's 8k and 100k pods), with the resource count, the size of the inputs
the state would hold and the process's peak RSS.

Run: .venv/bin/python bench/bench_pulumi.py [--repeat N] [STACK|8k|100k ...]
Each case runs in a fresh process; --repeat N prints the run with the least CPU of N (a shared
VM's speed swings; the least is the code's own cost). CPU seconds (user + sys, every thread of
the process: the mocks answer on threads) are the figure; wall time is printed beside, and the
CPU split: the plan (the layout's build, and each file rendered and hashed; in brackets the
sha256 updates alone), the cycle collector, the mocks (Pulumi's MockMonitor, the engine's
stand-in: a real engine does that work in Go) and the rest (resources made, serialized and read
back through the SDK's RPC layer). A collection run on a mocks' thread counts in both columns.
Targets on a 2-core machine (issue 39): the 100k-GPU pod under 20 s, at most 300 resources at 8k.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import resource
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulumi  # noqa: E402
import yaml  # noqa: E402
from pulumi.runtime.mocks import MockMonitor  # noqa: E402
from pulumi.runtime.settings import set_root_resource  # noqa: E402

from bench.fresh_runs import least_cpu, load_line, repeat_and_names  # noqa: E402
from topology.pulumi import artifacts  # noqa: E402
from topology.pulumi import program as program_module  # noqa: E402
from topology.pulumi.settings import read_settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH_PODS = ("1k", "8k", "32k", "100k")  # bench/bench_plan.py's CASES


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [f"{args.name}-id", args.inputs]

    def call(self, args):
        return {}


class Counting(MockMonitor):
    """Counts registrations and the CPU the mocks spend answering them (on their own threads).
    A running sum of the state's size raced on those threads (lost updates: 2.07 MB read at 8k
    where the state holds 2.54 MB), so the size is summed once, after the program and outside
    the CPU measured."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.count, self.cpu = 0, 0.0
        self._lock = threading.Lock()

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        t0 = time.thread_time()
        response = super().RegisterResource(request)
        spent = time.thread_time() - t0
        with self._lock:
            self.count += 1
            self.cpu += spent
        return response

    def state_bytes(self) -> int:
        return sum(len(json.dumps({k: v for k, v in reg.state.items() if k != "__provider"}, default=str))
                   for reg in self.resources.values())


class TimedSha256:
    """hashlib's sha256 for the program's file hashes, timing its updates (12k at 100k GPUs)."""

    def __init__(self, split: Split):
        self._sha, self._split = hashlib.sha256(), split

    def update(self, data: bytes) -> None:
        t0 = time.process_time()
        self._sha.update(data)
        self._split.hash += time.process_time() - t0

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


class Split:
    """CPU of the program's plan (build, render and hash), of its hashing alone and of the cycle
    collector's runs."""

    def __init__(self):
        self.plan, self.hash, self.gc, self._gc_start = 0.0, 0.0, 0.0, 0.0

    def _timed(self, fn):
        def timed(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.plan += time.process_time() - t0
        return timed

    def _collector(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
        else:
            self.gc += time.process_time() - self._gc_start

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        real = program_module.layout_of, program_module.file_digests
        program_module.layout_of, program_module.file_digests = (self._timed(f) for f in real)
        artifacts.hashlib = types.SimpleNamespace(sha256=lambda: TimedSha256(self))
        gc.callbacks.append(self._collector)
        try:
            yield
        finally:
            gc.callbacks.remove(self._collector)
            artifacts.hashlib = hashlib
            program_module.layout_of, program_module.file_digests = real


def pod_of(case: str) -> dict:
    if case in BENCH_PODS:
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_plan import CASES

        return dict(CASES)[case]
    return yaml.safe_load((ROOT / f"Pulumi.{case}.yaml").read_text())["config"]["superpod:pod"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(stack: str, split: Split) -> tuple[float, Counting]:
    pod = pod_of(stack)
    mocks = Mocks()
    monitor = Counting(mocks)
    set_root_resource(None)
    pulumi.runtime.set_mocks(mocks, project="superpod", stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({"superpod:pod": json.dumps(pod)})
    artifacts._rendered.clear()  # no render cached from an earlier stack

    @pulumi.runtime.test
    def program():
        program_module.deploy(read_settings(pulumi.Config("superpod"), stack, ROOT))

    t0 = time.perf_counter()
    with split.watching():
        program()
    return time.perf_counter() - t0, monitor


def one(stack: str) -> dict:
    split = Split()
    c0 = _cpu()
    seconds, monitor = run(stack, split)
    cpu, peak_mib = _cpu() - c0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"cpu": cpu, "wall": seconds, "plan": split.plan, "hash": split.hash, "gc": split.gc, "mocks": monitor.cpu,
            "resources": monitor.count, "state_bytes": monitor.state_bytes(), "peak_mib": peak_mib}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2])))
        return
    stacks_known = ["lab", "roce-1k", "dgx-h100-ib", "roce-8k"]
    repeat, stacks = repeat_and_names(sys.argv[1:], stacks_known, __doc__.splitlines()[0], more=BENCH_PODS)
    print(load_line())
    print(f"{'stack':>12} {'cpu s':>7} {'wall s':>7} {'plan s':>7} {'(hash s)':>8} {'gc s':>6} {'mocks s':>7} "
          f"{'rest s':>7} {'resources':>9} {'state inputs MiB':>17} {'peak MiB':>9}")
    for stack in stacks:
        r = least_cpu(__file__, stack, repeat)
        rest = r["cpu"] - r["plan"] - r["gc"] - r["mocks"]
        print(f"{stack:>12} {r['cpu']:>7.2f} {r['wall']:>7.2f} {r['plan']:>7.2f} {r['hash']:>8.2f} {r['gc']:>6.2f} "
              f"{r['mocks']:>7.2f} {rest:>7.2f} {r['resources']:>9} {r['state_bytes'] / 2**20:>17.2f} "
              f"{r['peak_mib']:>9.0f}")
    print(load_line())


if __name__ == "__main__":
    main()
