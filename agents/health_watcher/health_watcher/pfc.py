"""PFC storms, read from the fabric telemetry exporter on this node (agents/fabric_telemetry):
its Prometheus text at /metrics carries each planned NIC's mlx5 counters with the layout's labels.

Two signs of a storm, per NIC:
- the NIC's own PFC stall watchdog fired (``superpod_fabric_pause_storm_events_total{level="error"}``,
  ethtool's ``tx_pause_storm_error_events``): the NIC was stalled past its timeout and stopped
  sending pause; any increase is a fault at once;
- a priority paused (``direction="rx"``) or pausing its leaf (``"tx"``) more than
  ``storm_pause_ratio`` of the time (``superpod_fabric_pause_duration_seconds_total`` between two
  reads of this watcher) for ``storm_for_s``.
The watcher computes the ratio from the counters itself: the exporter's ``*_ratio`` gauges are
rates since whichever scrape came last (Prometheus's or ours).
"""

from __future__ import annotations

import base64
import logging
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from .config import Pfc
from .sources import Fault

log = logging.getLogger("health_watcher")
PREFIX = "superpod_fabric_"
WATCHDOG = PREFIX + "pause_storm_events_total"
PAUSE = PREFIX + "pause_duration_seconds_total"


def _where(labels: dict[str, str]) -> str:
    rail = f"rail {labels['rail']} " if labels.get("rail") else f"{labels.get('kind', '')} "
    leaf = f" ({labels['leaf']} {labels.get('leaf_port', '')})".rstrip() if labels.get("leaf") else ""
    return f"{rail}{labels.get('netdev', '?')}{leaf}"


class PfcStorms:
    def __init__(self, cfg: Pfc):
        self.cfg = cfg
        self.last: tuple[float, dict] | None = None  # (time, {series: value}) of the previous read
        self.storm_since: dict[tuple, float] = {}  # (netdev, direction, priority) -> first read above the ratio
        self.unreachable = False
        self.auth = None
        if cfg.basic_auth_user:
            secret = Path(cfg.basic_auth_password_file).read_bytes().strip()
            self.auth = "Basic " + base64.b64encode(cfg.basic_auth_user.encode() + b":" + secret).decode()

    def _read(self) -> dict[tuple, tuple[float, dict]]:
        req = urllib.request.Request(self.cfg.url, headers={"Authorization": self.auth} if self.auth else {})
        with urllib.request.urlopen(req, timeout=self.cfg.timeout_s) as r:
            text = r.read().decode("utf-8", "replace")
        out = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name in (WATCHDOG, PAUSE) and s.labels.get("kind") in self.cfg.kinds:
                    key = (s.name, s.labels.get("netdev"), s.labels.get("direction") or s.labels.get("level"),
                           s.labels.get("priority", ""))
                    out[key] = (s.value, s.labels)
        return out

    def faults(self, now: float) -> list[Fault]:
        if not self.cfg.url:
            return []
        try:
            series = self._read()
        except (OSError, ValueError) as e:
            # The exporter down is not a fault of the node's hardware: said in the log (once per
            # outage), never a drain; the storm check resumes when it answers again.
            if not self.unreachable:
                log.error("fabric telemetry %s unreadable, PFC storms not watched until it answers: %s",
                          self.cfg.url, e)
            self.unreachable, self.last = True, None
            return []
        if self.unreachable:
            log.info("fabric telemetry %s answers again", self.cfg.url)
            self.unreachable = False
        prev_t, prev = self.last if self.last else (None, {})
        self.last = (now, {k: v for k, (v, _) in series.items()})
        out: dict[str, Fault] = {}
        for key, (value, labels) in series.items():
            name, netdev, kind, prio = key
            if key not in prev or prev_t is None or now <= prev_t:
                continue
            delta = value - prev[key] if value >= prev[key] else value  # a counter reset counts from zero
            if name == WATCHDOG and kind == "error" and delta > 0:
                out[f"pfc-{netdev}"] = Fault(f"pfc-{netdev}", f"PFC storm on {_where(labels)}: NIC watchdog "
                                             f"stopped pause transmission ({delta:.0f} stall event(s))")
            elif name == PAUSE and kind in self.cfg.directions:
                ratio, skey = delta / (now - prev_t), (netdev, kind, prio)
                if ratio <= self.cfg.storm_pause_ratio:
                    self.storm_since.pop(skey, None)
                    continue
                since = self.storm_since.setdefault(skey, prev_t)
                if now - since >= self.cfg.storm_for_s:
                    verb = "pausing its leaf" if kind == "tx" else "paused by its leaf"
                    out.setdefault(f"pfc-{netdev}", Fault(
                        f"pfc-{netdev}", f"PFC storm on {_where(labels)}: priority {prio} {verb} "
                        f"{ratio:.0%} of the time for {now - since:.0f} s"))
        return list(out.values())
