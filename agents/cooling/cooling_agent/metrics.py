"""Prometheus exposition: a custom collector over per-target snapshots plus health and
layout (budget / limit) series, all in the agent's own CollectorRegistry."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from . import __version__
from .catalog import METRICS, PREFIX
from .config import ASHRAE_W_CLASSES, AgentConfig
from .model import Sample

HEALTH_LABELS = ("target", "kind", "protocol", "rack", "row", "su")


@dataclass
class TargetHealth:
    labels: dict[str, str]
    up: float = 0.0
    degraded: float = 0.0  # up, but some readings were unusable (NaN, Inf, wrong type)
    last_success: float = 0.0
    last_duration: float = 0.0
    consecutive_failures: int = 0
    last_reason: str = ""  # why the last poll failed ("" after a success): logs follow its changes
    next_delay: float = 0.0
    polls: int = 0
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[Sample] = field(default_factory=list)  # readings with full labels


class Store:
    """Thread-safe holder: the asyncio loop writes, the HTTP exposition thread reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.targets: dict[str, TargetHealth] = {}

    def register(self, name: str, labels: dict[str, str]) -> TargetHealth:
        with self._lock:
            return self.targets.setdefault(name, TargetHealth(labels=labels))

    def snapshot(self) -> list[TargetHealth]:
        with self._lock:
            return [TargetHealth(labels=t.labels, up=t.up, degraded=t.degraded, last_success=t.last_success,
                                 last_duration=t.last_duration, consecutive_failures=t.consecutive_failures,
                                 last_reason=t.last_reason, next_delay=t.next_delay, polls=t.polls,
                                 errors=dict(t.errors), samples=t.samples) for t in self.targets.values()]

    def update(self, name: str, **changes) -> None:
        with self._lock:
            t = self.targets[name]
            for k, v in changes.items():
                setattr(t, k, v)

    def count_error(self, name: str, reason: str, n: int = 1) -> None:
        with self._lock:
            self.targets[name].errors[reason] += n


def combine(samples: list[Sample], base_labels: dict[str, str] | None = None) -> list[Sample]:
    """Merge samples with identical metric+labels per the catalogue's aggregation; each
    merged sample carries ``base_labels`` (the target's) under its own."""
    base = base_labels or {}
    out: dict[tuple, Sample] = {}
    for s in samples:
        key = (s.metric, tuple(sorted(s.labels.items())))
        prev = out.get(key)
        if prev is None:
            out[key] = Sample(s.metric, {**base, **s.labels}, s.value)
        elif METRICS[s.metric].agg == "sum":
            prev.value += s.value
    return list(out.values())


def bound_series(samples: list[Sample], max_label_length: int, max_series: int,
                 base_labels: dict[str, str] | None = None) -> tuple[list[Sample], int]:
    """What one target may put into a scrape: device-given label values (member Ids) cut to
    ``max_label_length`` characters, then merged, then at most ``max_series`` series, each
    labelled with ``base_labels`` too. Returns the kept samples and how many series were
    dropped. A cycle of 5,000 targets passes 150,000 samples here: a sample whose labels
    need no cut is not copied (one new Sample per series, made by combine)."""
    cut = [s if all(len(v) <= max_label_length for v in s.labels.values())
           else Sample(s.metric, {k: v[:max_label_length] for k, v in s.labels.items()}, s.value)
           for s in samples]
    merged = combine(cut, base_labels)
    return merged[:max_series], max(0, len(merged) - max_series)


class CoolingCollector(Collector):
    def __init__(self, store: Store, config: AgentConfig):
        self.store = store
        self.config = config

    def _layout(self):
        cfg = self.config
        budget = GaugeMetricFamily(PREFIX + "rack_budget_watts", "Rack power budget from the layout (W)",
                                   labels=["rack", "row", "su"])
        planned = GaugeMetricFamily(PREFIX + "rack_planned_watts", "Rack planned power from the layout (W)",
                                    labels=["rack", "row", "su"])
        for r in cfg.racks:
            if r.budget_kw is not None:
                budget.add_metric([r.name, r.row, r.su], r.budget_kw * 1000.0)
            if r.planned_kw is not None:
                planned.add_metric([r.name, r.row, r.su], r.planned_kw * 1000.0)
        yield budget
        yield planned
        imb = GaugeMetricFamily(PREFIX + "feed_imbalance_ratio_limit",
                                "Allowed |A-B|/(A+B) power imbalance between a rack's feeds")
        imb.add_metric([], cfg.feed_imbalance_ratio)
        yield imb
        cdu_l = ["cdu", "rack", "row", "su"]
        limit = GaugeMetricFamily(PREFIX + "cdu_supply_temperature_limit_celsius",
                                  "Maximum facility (primary) coolant supply temperature of the ASHRAE W class",
                                  labels=cdu_l + ["ashrae_class"])
        ranges = {
            (k, b): GaugeMetricFamily(PREFIX + f"cdu_{k}_{b}", f"Configured {b}imum coolant {k.replace('_', ' ')}",
                                      labels=cdu_l + ["loop"])
            for k in ("flow_liters_per_minute", "delta_pressure_kpa") for b in ("min", "max")
        }
        for c in cfg.cdus:
            base = [c.name, c.rack, c.row, c.su]
            cls = cfg.cdu_class(c)
            limit.add_metric(base + [cls], ASHRAE_W_CLASSES[cls])
            lim = cfg.cdu_limits_for(c)
            for loop in ("primary", "secondary"):
                ll = getattr(lim, loop)
                if ll is None:
                    continue
                pairs = (("flow_liters_per_minute", ll.flow_lpm), ("delta_pressure_kpa", ll.delta_pressure_kpa))
                for key, rng in pairs:
                    if rng is None:
                        continue
                    for bound in ("min", "max"):
                        v = getattr(rng, bound)
                        if v is not None:
                            ranges[(key, bound)].add_metric(base + [loop], v)
        yield limit
        yield from ranges.values()

    def collect(self):
        info = GaugeMetricFamily(PREFIX + "cooling_agent_info", "Agent build information", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info
        yield from self._layout()
        snap = self.store.snapshot()
        hl = list(HEALTH_LABELS)
        fams = {
            "up": GaugeMetricFamily(PREFIX + "target_up", "1 when the last poll of the target succeeded", labels=hl),
            "degraded": GaugeMetricFamily(PREFIX + "target_degraded",
                                          "1 when the last poll succeeded but some readings were unusable "
                                          "(NaN, infinite, wrong type) and were not exported", labels=hl),
            "last": GaugeMetricFamily(PREFIX + "target_last_success_timestamp_seconds",
                                      "Unix time of the last successful poll (0: never)", labels=hl),
            "dur": GaugeMetricFamily(PREFIX + "target_poll_duration_seconds", "Duration of the last poll",
                                     labels=hl),
            "fail": GaugeMetricFamily(PREFIX + "target_consecutive_failures", "Failed polls in a row", labels=hl),
            "delay": GaugeMetricFamily(PREFIX + "target_next_poll_delay_seconds",
                                       "Delay before the next poll (grows with back-off)", labels=hl),
        }
        polls = CounterMetricFamily(PREFIX + "target_polls", "Polls attempted", labels=hl)
        errors = CounterMetricFamily(PREFIX + "target_poll_errors", "Poll errors by reason", labels=hl + ["reason"])
        readings: dict[str, GaugeMetricFamily] = {}
        for t in snap:
            lv = [t.labels.get(k, "") for k in HEALTH_LABELS]
            fams["up"].add_metric(lv, t.up)
            fams["degraded"].add_metric(lv, t.degraded)
            fams["last"].add_metric(lv, t.last_success)
            fams["dur"].add_metric(lv, t.last_duration)
            fams["fail"].add_metric(lv, t.consecutive_failures)
            fams["delay"].add_metric(lv, t.next_delay)
            polls.add_metric(lv, t.polls)
            for reason, n in sorted(t.errors.items()):
                errors.add_metric(lv + [reason], n)
            for s in t.samples:
                d = METRICS[s.metric]
                fam = readings.get(s.metric)
                if fam is None:
                    fam = readings[s.metric] = GaugeMetricFamily(PREFIX + s.metric, d.help, labels=list(d.labels))
                fam.add_metric([s.labels.get(k, "") for k in d.labels], s.value)
        yield from fams.values()
        yield polls
        yield errors
        yield from readings.values()


def make_registry(store: Store, config: AgentConfig) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(CoolingCollector(store, config))
    return reg
