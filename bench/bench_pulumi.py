"""Run time of the Pulumi program under Pulumi's mocks (no engine), per example stack, with
the resource count and the size of the inputs the state would hold.

Run: .venv/bin/python bench/bench_pulumi.py [STACK ...]
Target on a 2-core machine: the 8192-GPU stack (roce-8k) under 10 s, at most 300 resources.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pulumi
import yaml
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import set_root_resource

from topology.pulumi import artifacts
from topology.pulumi.program import deploy
from topology.pulumi.settings import read_settings

ROOT = Path(__file__).resolve().parents[1]


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [f"{args.name}-id", args.inputs]

    def call(self, args):
        return {}


class Counting(MockMonitor):
    def __init__(self, mocks):
        super().__init__(mocks)
        self.count, self.state_bytes = 0, 0

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        self.count += 1
        reg = self.resources.get(response.urn)
        if reg is not None:
            self.state_bytes += len(json.dumps({k: v for k, v in reg.state.items() if k != "__provider"}, default=str))
        return response


def run(stack: str) -> tuple[float, int, int]:
    pod = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]["superpod:pod"]
    mocks = Mocks()
    monitor = Counting(mocks)
    set_root_resource(None)
    pulumi.runtime.set_mocks(mocks, project="superpod", stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({"superpod:pod": json.dumps(pod)})
    artifacts._rendered.clear()  # no render cached from an earlier stack

    @pulumi.runtime.test
    def program():
        deploy(read_settings(pulumi.Config("superpod"), stack, ROOT))

    t0 = time.perf_counter()
    program()
    return time.perf_counter() - t0, monitor.count, monitor.state_bytes


def main() -> None:
    stacks = sys.argv[1:] or ["lab", "roce-1k", "dgx-h100-ib", "roce-8k"]
    print(f"{'stack':>12} {'run s':>7} {'resources':>9} {'state inputs MiB':>17}")
    for stack in stacks:
        seconds, count, size = run(stack)
        print(f"{stack:>12} {seconds:>7.2f} {count:>9} {size / 2**20:>17.2f}")


if __name__ == "__main__":
    main()
