"""`superpod validate` over the roce-8k stack's full set of neighbor records: every compute,
storage and in-band cable seen from both ends as lldpctl JSON files (one per device), with a
swap, a missing, a miswired, an unplanned and a wrong-speed cable mixed in.

Run: .venv/bin/python bench/bench_validate.py
Target on a 2-core machine: under 5 s from reading the files to the work list (8,192+ records).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import validate_records as rec  # noqa: E402
from topology.layout.build import build  # noqa: E402
from topology.operate.validate import counts, validate  # noqa: E402
from topology.spec import load_stack_file  # noqa: E402


def main(stack: str = "roce-8k") -> None:
    layout = build(load_stack_file(str(ROOT / f"Pulumi.{stack}.yaml")))
    ports = rec.ends(layout)
    rec.swap_far_ends(ports, ("su01-node01", "enp79s0np0"), ("su01-node01", "enp94s0np0"))
    rec.remove(ports, ("su02-node05", "enp24s0np0"))
    far, _ = ports.pop(("su03-node07", "enp220s0np0"))
    ports.pop(far)
    rec.add(ports, ("su03-node07", "enp220s0np0"), (far[0], "swp63"), 400)  # a spine-facing port
    far, _ = ports[("su04-node02", "enp154s0np0")]
    ports[("su04-node02", "enp154s0np0")] = (far, 200)
    ports[far] = (("su04-node02", "enp154s0np0"), 200)
    rec.add(ports, ("su05-node03", "eno9"), ("su05-node04", "eno9"), 1)  # a crossover nobody planned
    with tempfile.TemporaryDirectory() as tmp:
        plan = rec.write_plan(layout, Path(tmp) / "plan")
        folder = rec.write_docs(rec.lldpctl_docs(ports), Path(tmp) / "lldp")
        files = len(list(folder.iterdir()))
        t0, c0 = time.perf_counter(), time.process_time()
        result, tasks, _ = validate(plan, folder)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
    c = counts(result)
    print(f"stack {stack}: {len(ports)} neighbor records in {files} lldpctl files, "
          f"{sum(v for k, v in c.items() if k != 'not_heard')} planned+found cables")
    print("  " + " ".join(f"{k}={v}" for k, v in c.items()))
    print(f"  validate (read + parse + compare + work list): {took:.2f} s  "
          f"(CPU {cpu:.2f} s, {took / len(ports) * 1e6:.1f} us/record), {len(tasks)} work-list lines  target < 5 s")


if __name__ == "__main__":
    main()
