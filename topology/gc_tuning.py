"""Garbage-collector thresholds for planning a pod.

A plan makes millions of small objects that live until the command exits (devices, links,
addresses, rendered rows) and leaves almost no reference cycles for the collector to find. At
CPython's default thresholds (a young collection every 700 allocations, a full one as the heap
grows by a quarter) the collector walks the growing heap over and over: a quarter of the CPU time
of a 100k-GPU plan (bench/bench_plan.py). Fewer, larger young collections keep cycles collected
while cutting that to a few percent; mypy raises its thresholds to the same values for the same
reason.
"""

from __future__ import annotations

import gc

PLANNING_THRESHOLDS = (200_000, 30, 30)  # allocations before a young collection; young, middle runs before older


def collect_less_while_planning() -> None:
    """Process-wide: for a command that builds and renders a layout (`superpod plan`, the bench)."""
    gc.set_threshold(*PLANNING_THRESHOLDS)
