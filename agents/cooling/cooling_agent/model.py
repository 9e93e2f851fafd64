"""Shared poller types."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
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

    def add(self, metric: str, value: object, **labels: str) -> None:
        """One reading as the device sent it: None (absent) and booleans are skipped; a
        string, a number no float holds (10**400) or NaN/Inf costs this sample only."""
        if value is None or isinstance(value, bool):
            return
        try:
            value = float(value) if isinstance(value, (int, float)) else math.nan
        except OverflowError:
            value = math.nan
        if not math.isfinite(value):  # exporting NaN/Inf would pass for a healthy reading
            self.bad_values += 1
            return
        self.samples.append(Sample(metric, labels, value))

    @contextmanager
    def member(self) -> Iterator[None]:
        """One collection member whose shape is not what Redfish says (a list where an
        object goes): its remaining readings are lost, counted once, the others stay."""
        try:
            yield
        except (AttributeError, TypeError, ValueError, KeyError):
            self.bad_values += 1
