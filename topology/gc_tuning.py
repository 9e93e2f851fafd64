"""The cycle collector, paused while a pod is planned.

A plan makes millions of small objects that live until the plan is written (devices, links,
addresses, rendered rows) and leaves almost no reference cycles. The collector still walks them
as the heap grows: at CPython's default thresholds a quarter of a 100k-GPU plan's CPU; with
larger thresholds (200,000 / 30 / 30, as mypy sets) still 6-7% (bench/bench_plan.py, 2026-11-25:
23.0-23.3 s without the collector against 24.5-25.1 s with it, the same peak memory, 868 MiB:
there is no cyclic garbage worth collecting). Paused only for the plan: the collector's state is
restored afterwards, so a process that plans in-process (tests, the Pulumi program) keeps its own.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection inside the block; the collector as it was after it (then one young
    collection happens at the next allocation threshold as usual)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
