"""The Prometheus collector: one read of every NIC per scrape, totals as counters, and rates
computed against the previous scrape (a counter that went backwards was reset: its rate is
taken from zero)."""

from __future__ import annotations

import threading
import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from . import __version__
from .config import ExporterConfig
from .counters import PREFIX, by_metric, metric_labels, rate_name
from .sources import NicReader, NicReading

NIC_LABELS = ("node", "su", "kind", "netdev", "hca", "rail", "gpu", "leaf", "leaf_port")
SOURCES = ("ethtool", "hw_counters", "counters", "net")


class FabricCollector(Collector):
    def __init__(self, cfg: ExporterConfig, clock=time.monotonic):
        self.cfg = cfg
        self.clock = clock
        self._lock = threading.Lock()
        self._reader = NicReader(cfg)
        self._last: list[tuple[float, dict]] | None = None
        self._nic_labels = [tuple(n.labels(cfg.node, cfg.su)[k] for k in NIC_LABELS) for n in cfg.nics]
        self._prio_index = {m: labels.index("priority") for m in by_metric()
                            if "priority" in (labels := metric_labels(m))}
        # per NIC: the priorities whose counters are exported (fixed by the config, or grown as seen)
        fixed = cfg.priorities is not None
        self._fixed_priorities = fixed
        self._priorities = [{str(p) for p in cfg.priorities} if fixed else set() for _ in cfg.nics]

    def _keep(self, i: int, counters: dict) -> dict:
        """Per-priority counters only for the NIC's active priorities (sticky once seen)."""
        idx, active = self._prio_index, self._priorities[i]
        if not self._fixed_priorities:
            active |= {extra[idx[m]] for (m, extra), v in counters.items() if v and m in idx}
        return {(m, extra): v for (m, extra), v in counters.items() if m not in idx or extra[idx[m]] in active}

    def describe(self):
        return []  # values come from the hardware at scrape time: no describe-time read

    def collect(self):
        with self._lock:
            t0 = self.clock()
            readings = self._reader.read_all()
            now = self.clock()
            families = self._families(readings, now)
            self._last = [(now, r.counters) for r in readings]
        dur = GaugeMetricFamily(PREFIX + "scrape_duration_seconds", "Time to read every NIC of the plan.")
        dur.add_metric([], now - t0)
        yield from families
        yield dur

    def _families(self, readings: list[NicReading], now: float) -> list:
        g = {name: GaugeMetricFamily(PREFIX + name, help_, labels=[*NIC_LABELS, *extra])
             for name, help_, extra in (
                 ("nic_present", "1 when the planned netdev exists on this node.", ()),
                 ("link_up", "1 when the netdev's operstate is up.", ()),
                 ("link_speed_bits_per_second", "Negotiated link speed.", ()),
                 ("link_planned_speed_bits_per_second", "Link speed the plan expects (layout).", ()),
                 ("rdma_port_active", "1 when the RDMA port state is ACTIVE.", ()),
                 ("source_up", "1 when the source could be read for this NIC.", ("source",)),
                 ("reading_stale", "1 when this NIC's sysfs did not answer within the scrape budget: "
                                   "its last good values are shown.", ()),
             )}
        counters = {m: CounterMetricFamily(PREFIX + m.removesuffix("_total"), cs[0].help,
                                           labels=[*NIC_LABELS, *metric_labels(m)])
                    for m, cs in by_metric().items()}
        rates = {m: GaugeMetricFamily(PREFIX + rate_name(m), f"Per-second rate between the last two scrapes: {m}",
                                      labels=[*NIC_LABELS, *metric_labels(m)])
                 for m in counters}
        for i, (nic, r) in enumerate(zip(self.cfg.nics, readings, strict=True)):
            lv = list(self._nic_labels[i])
            g["nic_present"].add_metric(lv, 1.0 if r.present else 0.0)
            g["reading_stale"].add_metric(lv, 1.0 if r.stale else 0.0)
            for name, v in (("link_up", r.link_up), ("link_speed_bits_per_second", r.speed_bps),
                            ("rdma_port_active", r.rdma_active)):
                if v is not None:
                    g[name].add_metric(lv, v)
            if nic.planned_speed_gbps:
                g["link_planned_speed_bits_per_second"].add_metric(lv, nic.planned_speed_gbps * 1e9)
            for src in SOURCES:
                if src in r.source_ok:
                    g["source_up"].add_metric([*lv, src], 1.0 if r.source_ok[src] else 0.0)
            prev_t, prev = self._last[i] if self._last else (None, {})
            for (metric, extra), value in sorted(self._keep(i, r.counters).items()):
                counters[metric].add_metric([*lv, *extra], value)
                if prev_t is not None and now > prev_t and (metric, extra) in prev:
                    delta = value - prev[(metric, extra)]
                    rates[metric].add_metric([*lv, *extra], (delta if delta >= 0 else value) / (now - prev_t))
        info = GaugeMetricFamily(PREFIX + "exporter_info", "Exporter version.", labels=["version", "node", "su"])
        info.add_metric([__version__, self.cfg.node, self.cfg.su], 1.0)
        return [info, *g.values(), *counters.values(), *rates.values()]


def make_registry(cfg: ExporterConfig, clock=time.monotonic) -> tuple[CollectorRegistry, FabricCollector]:
    registry = CollectorRegistry(auto_describe=False)
    collector = FabricCollector(cfg, clock)
    registry.register(collector)
    return registry, collector
