"""Shared poller types."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


class PollError(Exception):
    """A poll that produced no usable data; ``reason`` becomes a metric label."""

    def __init__(self, reason: str, message: str = ""):
        super().__init__(message or reason)
        self.reason = reason


@dataclass
class Sample:
    metric: str
    labels: dict[str, str]
    value: float


@dataclass
class PollResult:
    samples: list[Sample] = field(default_factory=list)
    bad_values: int = 0  # readings present but unusable (wrong type, NaN, infinite): target degraded

    def add(self, metric: str, value: float | None, **labels: str) -> None:
        if value is None:
            return
        value = float(value)
        if not math.isfinite(value):  # exporting NaN/Inf would pass for a healthy reading
            self.bad_values += 1
            return
        self.samples.append(Sample(metric, labels, value))
