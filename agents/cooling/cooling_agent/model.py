"""Shared poller types."""

from __future__ import annotations

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
    bad_values: int = 0  # readings present but unusable (wrong type, out of range)

    def add(self, metric: str, value: float | None, **labels: str) -> None:
        if value is not None:
            self.samples.append(Sample(metric, labels, float(value)))
