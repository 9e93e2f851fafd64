"""Which mlx5 counters become which metrics.

Names as the mlx5 driver exposes them on ConnectX-7 (NVIDIA "Understanding mlx5 ethtool
Counters" and "Understanding mlx5 Linux Counters and Status Parameters"):
- ethtool -S: physical-port (PPCNT) counters, per priority ``rx_prio3_pause``,
  ``tx_prio3_pause_duration`` (microseconds), ``rx_prio3_pause_transition``, the PFC stall
  watchdog ``tx_pause_storm_warning_events`` / ``_error_events``, ``rx_discards_phy``,
  ``link_down_events_phy``; the RQ counter ``rx_ecn_mark`` (CE-marked non-RDMA packets);
- /sys/class/infiniband/<hca>/ports/<n>/hw_counters: RoCE congestion and transport
  counters ``np_ecn_marked_roce_packets``, ``np_cnp_sent``, ``rp_cnp_handled``,
  ``out_of_sequence``, ``out_of_buffer``, ...;
- /sys/class/infiniband/<hca>/ports/<n>/counters: IB port counters (data in 4-octet words);
- /sys/class/net/<netdev>: ``carrier_changes``.
Named groups of a pattern become metric labels.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

PREFIX = "superpod_fabric_"


@dataclass(frozen=True)
class Counter:
    metric: str  # without PREFIX; ends in _total
    help: str
    source: str  # ethtool | hw_counters | counters | net
    pattern: re.Pattern
    labels: tuple[str, ...] = ()  # the pattern's groups, then the fixed labels' names
    fixed: dict[str, str] = field(default_factory=dict)
    scale: float = 1.0

    @property
    def label_names(self) -> tuple[str, ...]:
        return (*self.pattern.groupindex, *self.fixed)


def _c(metric, help_, source, regex, scale=1.0, **fixed) -> Counter:
    return Counter(metric, help_, source, re.compile(regex), fixed=fixed, scale=scale)


PRIO = r"(?P<direction>rx|tx)_prio(?P<priority>[0-7])"
COUNTERS: tuple[Counter, ...] = (
    _c("pause_frames_total", "PFC pause frames per priority (rx: received from the leaf, tx: sent to it).",
       "ethtool", PRIO + "_pause"),
    _c("pause_duration_seconds_total", "Time the port was paused per priority (rx) or pausing its peer (tx).",
       "ethtool", PRIO + "_pause_duration", scale=1e-6),  # microseconds
    _c("pause_transitions_total", "Pause on/off transitions per priority.", "ethtool", PRIO + "_pause_transition"),
    _c("priority_bytes_total", "Bytes per priority.", "ethtool", PRIO + "_bytes"),
    _c("priority_packets_total", "Packets per priority.", "ethtool", PRIO + "_packets"),
    _c("pause_storm_events_total", "PFC stall watchdog: the NIC was stalled past the warning watermark "
       "(warning) or the timeout that disables pause transmission (error).",
       "ethtool", r"tx_pause_storm_(?P<level>warning|error)_events"),
    _c("discards_total", "Packets discarded at the physical port (no buffer, or dropped before the NIC).",
       "ethtool", r"(?P<direction>rx|tx)_discards_phy"),
    _c("link_down_events_total", "Physical link down events (flaps).", "ethtool", r"link_down_events_phy"),
    _c("crc_errors_total", "Received frames with CRC errors.", "ethtool", r"rx_crc_errors_phy"),
    _c("symbol_errors_total", "Physical symbol errors.", "ethtool", r"rx_symbol_err_phy"),
    _c("ecn_marked_packets_total", "Packets received with ECN CE marks (roce: RoCE packets, as the "
       "notification point; ip: other IP traffic).", "ethtool", r"rx_ecn_mark", traffic="ip"),
    _c("ecn_marked_packets_total", "", "hw_counters", r"np_ecn_marked_roce_packets", traffic="roce"),
    _c("cnp_sent_total", "Congestion notification packets sent (notification point).", "hw_counters",
       r"np_cnp_sent"),
    _c("cnp_handled_total", "CNPs handled by the reaction point (rate reduced).", "hw_counters", r"rp_cnp_handled"),
    _c("cnp_ignored_total", "CNPs received and ignored by the reaction point.", "hw_counters", r"rp_cnp_ignored"),
    _c("out_of_sequence_total", "RoCE packets received out of sequence (a loss upstream: not lossless).",
       "hw_counters", r"out_of_sequence"),
    _c("out_of_buffer_total", "RoCE packets dropped for lack of a receive WQE.", "hw_counters", r"out_of_buffer"),
    _c("packet_sequence_errors_total", "NAK sequence errors received.", "hw_counters", r"packet_seq_err"),
    _c("local_ack_timeouts_total", "Requester ACK timeouts (retransmissions).", "hw_counters",
       r"local_ack_timeout_err"),
    _c("port_bytes_total", "Bytes through the RDMA port.", "counters", r"port_(?P<direction>xmit|rcv)_data",
       scale=4.0),
    _c("port_receive_errors_total", "Malformed packets received by the RDMA port.", "counters", r"port_rcv_errors"),
    _c("carrier_changes_total", "Carrier up/down changes of the netdev.", "net", r"carrier_changes"),
)
DIRECTION = {"xmit": "tx", "rcv": "rx"}


def by_metric() -> dict[str, list[Counter]]:
    out: dict[str, list[Counter]] = {}
    for c in COUNTERS:
        out.setdefault(c.metric, []).append(c)
    return out


def metric_labels(metric: str) -> tuple[str, ...]:
    """Label names of a counter metric beyond the NIC's (the same for every source of it)."""
    names: list[str] = []
    for c in by_metric()[metric]:
        for n in c.label_names:
            if n not in names:
                names.append(n)
    return tuple(names)


def rate_name(metric: str) -> str:
    """pause_frames_total -> pause_frames_per_second; pause_duration_seconds_total -> pause_duration_ratio."""
    base = metric.removesuffix("_total")
    return base.removesuffix("_seconds") + "_ratio" if base.endswith("_seconds") else base + "_per_second"


def parse_ethtool(text: str) -> dict[str, int]:
    """`ethtool -S` output: a 'NIC statistics:' header, then `     name: value` lines."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().rpartition(":")
        if sep and name:
            try:
                out[name.strip()] = int(value)
            except ValueError:
                continue
    return out


@functools.lru_cache(maxsize=8192)
def resolve(source: str, name: str) -> tuple[tuple[str, tuple[str, ...], float], ...]:
    """What one raw counter name of a source becomes: (metric, extra label values, scale) for
    each counter that reads it. Names are stable between scrapes, so this runs once per name."""
    out = []
    for c in COUNTERS:
        if c.source == source:
            m = c.pattern.fullmatch(name)
            if m:
                out.append((c.metric, _values(c, m.groupdict()), c.scale))
    return tuple(out)


def wanted(source: str, names) -> list[str]:
    """The names among `names` (a sysfs directory's files) that some counter of `source` reads."""
    return [n for n in names if resolve(source, n)]


def match(source: str, raw: dict[str, int]) -> dict[tuple[str, tuple[str, ...]], float]:
    """Raw counters of one source -> {(metric, extra label values): value}."""
    out: dict[tuple[str, tuple[str, ...]], float] = {}
    for name, value in raw.items():
        for metric, labels, scale in resolve(source, name):
            out[(metric, labels)] = value * scale if scale != 1.0 else float(value)
    return out


def _values(c: Counter, groups: dict[str, str]) -> tuple[str, ...]:
    vals = {**{k: DIRECTION.get(v, v) for k, v in groups.items()}, **c.fixed}
    return tuple(vals.get(n, "") for n in metric_labels(c.metric))
