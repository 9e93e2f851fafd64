"""Fabric telemetry from the layout: Prometheus scrape targets for the node exporters
(agents/fabric_telemetry) and the switches' gNMI servers, recording and alert rules, and a
Grafana dashboard per SU, rail and leaf.

The rules stay the same size whatever the pod (they aggregate by the labels the exporter
carries: node, su, rail, leaf, leaf_port); what the layout decides is the planned link speed
per kind of NIC and the lists the dashboard offers.
"""

from __future__ import annotations

import functools
import json
import re
from json.encoder import encode_basestring_ascii
from pathlib import Path

import yaml

from topology import catalog
from topology.layout.model import Layout
from topology.render.files import GENERATED

EXPORTER_PORT = 9735  # agents/fabric_telemetry's default listen port
GNMI_PORT = 9339  # Cumulus Linux / NVOS gNMI dial-in default
SWITCH_ROLES = ("leaf", "spine", "core", "storage_leaf", "storage_spine")

# Thresholds (fractions of time, per second rates); change here, re-plan, reload Prometheus.
STORM_PAUSE_RATIO = 0.5  # a port paused (or pausing) more than half the time ...
STORM_FOR = "2m"  # ... for this long is a PFC storm
PAUSED_PORT_RATIO = 0.05  # a port counts as 'paused' above 5 % of the time
LEAF_PROPAGATION_SHARE = 0.5  # more than half a leaf's node ports paused at once
LEAF_PROPAGATION_FOR = "5m"
RAIL_IMBALANCE_FACTOR = 4  # a rail marking/notifying 4x its SU's median rail ...
RAIL_IMBALANCE_MIN_RATE = 1000  # ... and above this many packets per second
RAIL_IMBALANCE_FOR = "10m"

NIC_BY = "su, node, kind, rail, gpu, netdev, leaf, leaf_port"

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: same bytes, several times faster


def _su(n: int | None) -> str:
    return f"su{n:02d}" if n is not None else ""


def _ip(address: str) -> str:
    return address.split("/")[0]


def _addresses(layout: Layout, pool: str) -> dict[str, str]:
    """Each device's first address in `pool`, without its prefix length."""
    return {device: _ip(a.address) for (device, in_pool), a in layout.first_address.items() if in_pool == pool}


def node_targets(layout: Layout) -> str:
    """Prometheus file_sd: every GPU node's exporter on its in-band address."""
    inband = _addresses(layout, "inband")
    return file_sd_json([(f"{inband[d.name]}:{EXPORTER_PORT}", d.name, _su(d.su), d.rack)
                         for d in layout.devices if d.role == "gpu_node" and d.name in inband])


def file_sd_json(targets: list[tuple]) -> str:
    """`json.dumps(groups, indent=1) + "\n"` of a group per (target, node, su, rack), each value
    written by the json module's C string encoder into the groups' one fixed shape: an indented
    dump runs the module's Python encoder (7 ms for the 8k plan's 1,024 nodes)."""
    if not targets:
        return "[]\n"
    return "[\n" + ",\n".join(_FILE_SD_GROUP % tuple(map(_json_value, group)) for group in targets) + "\n]\n"


_FILE_SD_GROUP = ' {\n  "targets": [\n   %s\n  ],\n  "labels": {\n   "node": %s,\n   "su": %s,\n   "rack": %s\n  }\n }'


def _json_value(value) -> str:
    return encode_basestring_ascii(value) if type(value) is str else json.dumps(value)


def switch_targets(layout: Layout) -> str:
    """A gnmic configuration: every fabric switch's gNMI server on its OOB address, the
    interface and QoS counters the switch configuration enables (PFC, ECN, the PFC
    watchdog), exported for Prometheus to scrape with the layout's labels."""
    oob = _addresses(layout, "oob")
    targets = {
        f"{oob[d.name]}:{GNMI_PORT}": {"name": d.name, "event-tags": {"switch": d.name, "role": d.role,
                                                                     "su": _su(d.su), "model": d.model}}
        for d in layout.devices if d.role in SWITCH_ROLES and d.name in oob
    }
    head = {
        "username": "{{ env \"GNMIC_USERNAME\" }}",  # credentials from the collector's environment
        "password": "{{ env \"GNMIC_PASSWORD\" }}",
        "skip-verify": False,
        "encoding": "json_ietf",
    }
    tail = {
        "subscriptions": {
            "interface-counters": {"paths": ["/interfaces/interface/state/counters",
                                             "/interfaces/interface/ethernet/state/counters"],
                                   "mode": "stream", "stream-mode": "sample", "sample-interval": "15s"},
            "interface-state": {"paths": ["/interfaces/interface/state/oper-status",
                                          "/interfaces/interface/ethernet/state/port-speed"],
                                "mode": "stream", "stream-mode": "on-change"},
            "qos-counters": {"paths": ["/qos/interfaces/interface"],
                             "mode": "stream", "stream-mode": "sample", "sample-interval": "15s"},
        },
        "outputs": {"prometheus": {"type": "prometheus", "listen": ":9804", "metric-prefix": "superpod_switch",
                                   "event-processors": ["trim-prefixes"]}},
        "processors": {"trim-prefixes": {"event-strings": {"value-names": [".*"],
                                                           "transforms": [{"path-base": {"apply-on": "name"}}]}}},
    }
    header = f"# gnmic collector for pod {layout.spec.name}: {GENERATED}\n"
    return (header + yaml.dump(head, Dumper=DUMPER, sort_keys=False) + gnmic_targets_yaml(targets)
            + yaml.dump(tail, Dumper=DUMPER, sort_keys=False))


def gnmic_targets_yaml(targets: dict[str, dict]) -> str:
    """`targets:` and its mapping as yaml.dump writes it (block style, keys in order). A target of
    switch_targets' shape is one fixed text, written by a format per target where every scalar is
    one yaml.dump writes plain (or the empty string, quoted ''): PyYAML's representer, Python even
    with libyaml's emitter, was 28 ms of the 8k plan's 1,190 switches. Any other target or scalar:
    yaml.dump writes the whole mapping."""
    if targets:
        try:
            return "targets:\n" + "".join(_target_text(address, t) for address, t in targets.items())
        except _NotPlain:
            pass
    return yaml.dump({"targets": targets}, Dumper=DUMPER, sort_keys=False)


_TARGET = ("  %s:\n    name: %s\n    event-tags:\n      switch: %s\n      role: %s\n      su: %s\n"
           "      model: %s\n")
_TARGET_KEYS = ["name", "event-tags"]
_TAG_KEYS = ["switch", "role", "su", "model"]
# a scalar PyYAML's emitter writes plain as a block key and value: no indicator first, no ": " or
# " #", no space, not "---" or "...", shorter than a simple key's limit; and read back as a str
_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*")
_RESOLVER = yaml.resolver.Resolver()


class _NotPlain(Exception):
    pass


def _target_text(address: str, target: dict) -> str:
    tags = target.get("event-tags")
    if list(target) != _TARGET_KEYS or not isinstance(tags, dict) or list(tags) != _TAG_KEYS:
        raise _NotPlain(address)
    return _TARGET % (_plain(address), _plain(target["name"]), _plain(tags["switch"]), _plain(tags["role"]),
                      "''" if tags["su"] == "" else _plain(tags["su"]), _plain(tags["model"]))


def _plain(text) -> str:
    if type(text) is str and _plain_str(text):
        return text
    raise _NotPlain(text)


@functools.lru_cache(maxsize=4096)  # roles, models and SUs repeat on every switch
def _plain_str(text: str) -> bool:
    return bool(len(text) < 128 and _PLAIN.fullmatch(text)
                and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str")


def planned_speeds(layout: Layout) -> dict[str, int]:
    """Planned link speed (Gb/s) of rail and storage NICs: the node's cabled links."""
    nodes = {d.name for d in layout.devices if d.role == "gpu_node"}
    kinds = {"compute": "rail", "storage": "storage"}
    speeds: dict[str, int] = {}
    for lk in layout.links:
        kind = kinds.get(lk.fabric)
        if kind and lk.a_device in nodes:
            speeds[kind] = min(speeds.get(kind, lk.speed_gbps), lk.speed_gbps)
    return speeds


def _rule(record: str, expr: str) -> dict:
    return {"record": record, "expr": expr}


def _alert(name: str, expr: str, for_: str | None, severity: str, summary: str, description: str) -> dict:
    a = {"alert": name, "expr": expr}
    if for_:
        a["for"] = for_
    a["labels"] = {"severity": severity}
    a["annotations"] = {"summary": summary, "description": description}
    return a


def recording_rules() -> list[dict]:
    m = "superpod_fabric_"
    nic = [
        _rule("nic:superpod_fabric_rx_pause_ratio:rate1m",
              f'sum by ({NIC_BY}) (rate({m}pause_duration_seconds_total{{direction="rx"}}[1m]))'),
        _rule("nic:superpod_fabric_tx_pause_ratio:rate1m",
              f'sum by ({NIC_BY}) (rate({m}pause_duration_seconds_total{{direction="tx"}}[1m]))'),
        _rule("nic:superpod_fabric_ecn_marked_roce:rate1m",
              f'sum by ({NIC_BY}) (rate({m}ecn_marked_packets_total{{traffic="roce"}}[1m]))'),
        _rule("nic:superpod_fabric_cnp_sent:rate1m", f"sum by ({NIC_BY}) (rate({m}cnp_sent_total[1m]))"),
        _rule("nic:superpod_fabric_cnp_handled:rate1m", f"sum by ({NIC_BY}) (rate({m}cnp_handled_total[1m]))"),
        _rule("nic:superpod_fabric_out_of_sequence:rate1m",
              f"sum by ({NIC_BY}) (rate({m}out_of_sequence_total[1m]))"),
        _rule("nic:superpod_fabric_discards:rate1m", f"sum by ({NIC_BY}) (rate({m}discards_total[1m]))"),
    ]
    rail = [
        _rule(f"su_rail:superpod_fabric_{what}:rate1m",
              f'sum by (su, rail) (nic:superpod_fabric_{what}:rate1m{{kind="rail"}})')
        for what in ("ecn_marked_roce", "cnp_sent", "cnp_handled", "out_of_sequence", "discards")
    ] + [
        _rule("su_rail:superpod_fabric_rx_pause_ratio:avg1m",
              'avg by (su, rail) (nic:superpod_fabric_rx_pause_ratio:rate1m{kind="rail"})'),
        _rule("su_rail:superpod_fabric_tx_pause_ratio:avg1m",
              'avg by (su, rail) (nic:superpod_fabric_tx_pause_ratio:rate1m{kind="rail"})'),
    ]
    leaf = [
        _rule("leaf:superpod_fabric_rx_pause_ratio:avg1m",
              'avg by (su, leaf) (nic:superpod_fabric_rx_pause_ratio:rate1m{kind="rail"})'),
        _rule("leaf:superpod_fabric_ports:count",
              'count by (su, leaf) (nic:superpod_fabric_rx_pause_ratio:rate1m{kind="rail"})'),
        _rule("leaf:superpod_fabric_paused_ports:count1m",
              f'count by (su, leaf) (nic:superpod_fabric_rx_pause_ratio:rate1m{{kind="rail"}} > {PAUSED_PORT_RATIO})'),
        _rule("leaf:superpod_fabric_ecn_marked_roce:rate1m",
              'sum by (su, leaf) (nic:superpod_fabric_ecn_marked_roce:rate1m{kind="rail"})'),
    ]
    return [{"name": "superpod-fabric-nic", "interval": "30s", "rules": nic},
            {"name": "superpod-fabric-rail-leaf", "interval": "30s", "rules": rail + leaf}]


def alert_rules(speeds: dict[str, int]) -> list[dict]:
    m = "superpod_fabric_"
    where = ("{{ $labels.node }} {{ $labels.netdev }} "
             "(rail {{ $labels.rail }}, {{ $labels.leaf }} {{ $labels.leaf_port }})")
    median = "quantile by (su) (0.5, su_rail:superpod_fabric_{w}:rate1m)"
    imbalance = (f"su_rail:superpod_fabric_{{w}}:rate1m > on (su) group_left () ({RAIL_IMBALANCE_FACTOR} * {median})"
                 f" and su_rail:superpod_fabric_{{w}}:rate1m > {RAIL_IMBALANCE_MIN_RATE}")
    slow = " or ".join(f'{m}link_speed_bits_per_second{{kind="{k}"}} < {s}e9' for k, s in sorted(speeds.items()))
    rules = [
        _alert("FabricPfcStorm",
               f"sum by ({NIC_BY}, direction, priority) (rate({m}pause_duration_seconds_total[1m]))"
               f" > {STORM_PAUSE_RATIO}",
               STORM_FOR, "critical",
               "PFC storm on " + where + ": {{ $labels.direction }} priority {{ $labels.priority }} paused "
               "{{ $value | humanizePercentage }} of the time",
               "direction rx: the leaf keeps pausing this NIC (congestion or a storm behind the leaf); tx: this NIC "
               "keeps pausing the leaf (a stuck receiver: the classic storm that spreads to the whole fabric)."),
        _alert("FabricNicPfcWatchdog",
               f'increase({m}pause_storm_events_total{{level="error"}}[5m]) > 0', None, "critical",
               "NIC PFC watchdog stopped pause transmission on " + where,
               "The NIC was stalled past its pause-storm timeout (tx_pause_storm_error_events) and disabled PFC "
               "transmission: RoCE traffic on this NIC is now lossy."),
        _alert("FabricPausePropagationAcrossLeaf",
               f"leaf:superpod_fabric_paused_ports:count1m / on (su, leaf) leaf:superpod_fabric_ports:count"
               f" > {LEAF_PROPAGATION_SHARE}",
               LEAF_PROPAGATION_FOR, "critical",
               "Pause spreading across {{ $labels.leaf }} ({{ $labels.su }}): {{ $value | humanizePercentage }} of "
               "its node ports paused",
               f"More than {LEAF_PROPAGATION_SHARE:.0%} of the leaf's node ports receive pause above "
               f"{PAUSED_PORT_RATIO:.0%} of the time: back-pressure from the spine uplinks or a storm on one port "
               "propagating through the leaf's shared buffer."),
        _alert("FabricRailEcnImbalance", imbalance.format(w="ecn_marked_roce"), RAIL_IMBALANCE_FOR, "warning",
               "Rail {{ $labels.rail }} of {{ $labels.su }} sees ECN marks at {{ $value | humanize }}/s, "
               f"over {RAIL_IMBALANCE_FACTOR}x its peer rails",
               "Rails of one SU carry the same collective traffic; one rail congesting alone usually means a "
               "miswired, degraded or slow link on that rail (check its leaf and cabling)."),
        _alert("FabricRailCnpImbalance", imbalance.format(w="cnp_sent"), RAIL_IMBALANCE_FOR, "warning",
               "Rail {{ $labels.rail }} of {{ $labels.su }} sends CNPs at {{ $value | humanize }}/s, "
               f"over {RAIL_IMBALANCE_FACTOR}x its peer rails",
               "Notification points on one rail see far more congestion than on its peers: a miswired or "
               "degraded link on that rail."),
        _alert("FabricLinkFlap", f"increase({m}link_down_events_total[10m]) > 0", None, "warning",
               "Link flap on " + where + ": {{ $value | printf \"%.0f\" }} down events in 10 minutes",
               "A flapping rail link stalls every collective of the jobs using it; check optics and cable."),
        _alert("FabricLinkBelowPlannedSpeed", slow, "5m", "warning",
               "Link " + where + " runs at {{ $value | humanize }}b/s, below the plan",
               "The layout plans " + ", ".join(f"{k} links at {s}G" for k, s in sorted(speeds.items()))
               + "; a slower link throttles the whole rail."),
        _alert("FabricRailLinkDown",
               f'{m}link_up{{kind="rail"}} == 0 or {m}nic_present{{kind="rail"}} == 0', "2m", "critical",
               "Rail link down or NIC missing: " + where, "The planned rail NIC is absent or its link is down."),
        _alert("FabricRoceOutOfSequence", f"sum by ({NIC_BY}) (rate({m}out_of_sequence_total[5m])) > 0", "10m",
               "warning", "RoCE packets out of sequence on " + where,
               "Out-of-sequence RoCE packets mean loss on a fabric meant to be lossless (PFC off or mis-set on a "
               "priority, or drops in the fabric): retransmissions slow every collective."),
        _alert("FabricTelemetrySourceDown", f"{m}source_up == 0", "10m", "info",
               "Fabric telemetry cannot read {{ $labels.source }} on {{ $labels.node }} {{ $labels.netdev }}",
               "The exporter cannot read this counter source; the alerts above are blind for this NIC."),
    ]
    return [{"name": "superpod-fabric-alerts", "rules": rules}]


def rules(layout: Layout) -> str:
    doc = {"groups": recording_rules() + alert_rules(planned_speeds(layout))}
    header = f"# Prometheus rules for the RoCE fabric of pod {layout.spec.name}: {GENERATED}\n"
    return header + yaml.dump(doc, Dumper=DUMPER, sort_keys=False, width=120)


def _panel(pid: int, title: str, exprs: list[tuple[str, str]], x: int, y: int, unit: str) -> dict:
    return {"id": pid, "type": "timeseries", "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"x": x, "y": y, "w": 12, "h": 8},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": chr(65 + i), "expr": e, "legendFormat": legend}
                        for i, (e, legend) in enumerate(exprs)]}


def _var(name: str, label: str, values: list[str]) -> dict:
    return {"name": name, "label": label, "type": "custom", "query": ",".join(values), "multi": True,
            "includeAll": True, "current": {"text": "All", "value": "$__all"},
            "options": [{"text": v, "value": v, "selected": False} for v in values]}


def dashboard(layout: Layout) -> str:
    """Grafana dashboard: SU overview (rails side by side), a rail's nodes, a leaf's ports."""
    sus = sorted({_su(d.su) for d in layout.devices if d.role == "gpu_node"})
    leaves = sorted(d.name for d in layout.devices if d.role == "leaf")
    rails_s = [str(n.gpu) for n in sorted(catalog.load().nodes[layout.spec.node_model].compute_nics,
                                          key=lambda n: n.gpu)]
    su, rail, leaf = 'su=~"$su"', 'rail=~"$rail"', 'leaf=~"$leaf"'
    rows = [
        ("Per SU: rails side by side", [
            ("ECN-marked RoCE packets per rail", [(f"su_rail:superpod_fabric_ecn_marked_roce:rate1m{{{su}}}",
                                                 "{{su}} rail {{rail}}")], "pps"),
            ("CNPs sent per rail", [(f"su_rail:superpod_fabric_cnp_sent:rate1m{{{su}}}",
                                     "{{su}} rail {{rail}}")], "pps"),
            ("Paused (rx) per rail, mean over nodes", [(f"su_rail:superpod_fabric_rx_pause_ratio:avg1m{{{su}}}",
                                                       "{{su}} rail {{rail}}")], "percentunit"),
            ("Out-of-sequence and discards per rail", [
                (f"su_rail:superpod_fabric_out_of_sequence:rate1m{{{su}}}", "oos {{su}} rail {{rail}}"),
                (f"su_rail:superpod_fabric_discards:rate1m{{{su}}}", "discards {{su}} rail {{rail}}")], "pps"),
        ]),
        ("Per rail: its nodes", [
            ("Paused (rx) per node", [(f'nic:superpod_fabric_rx_pause_ratio:rate1m{{{su},{rail},kind="rail"}}',
                                      "{{node}} rail {{rail}}")], "percentunit"),
            ("Pausing the leaf (tx) per node", [
                (f'nic:superpod_fabric_tx_pause_ratio:rate1m{{{su},{rail},kind="rail"}}', "{{node}} rail {{rail}}")],
             "percentunit"),
            ("CNPs handled per node", [(f'nic:superpod_fabric_cnp_handled:rate1m{{{su},{rail},kind="rail"}}',
                                       "{{node}} rail {{rail}}")], "pps"),
            ("Link speed", [(f'superpod_fabric_link_speed_bits_per_second{{{su},{rail},kind="rail"}}',
                             "{{node}} {{netdev}}")], "bps"),
        ]),
        ("Per leaf: its ports", [
            ("Paused node ports per leaf", [(f"leaf:superpod_fabric_paused_ports:count1m{{{su},{leaf}}}", "{{leaf}}"),
                                            (f"leaf:superpod_fabric_ports:count{{{su},{leaf}}}", "{{leaf}} ports")],
             "short"),
            ("Paused (rx) per port", [(f'nic:superpod_fabric_rx_pause_ratio:rate1m{{{su},{leaf},kind="rail"}}',
                                      "{{leaf}} {{leaf_port}} ({{node}})")], "percentunit"),
            ("Link flaps per port (10m)", [(f'increase(superpod_fabric_link_down_events_total{{{su},{leaf}}}[10m])',
                                           "{{leaf}} {{leaf_port}} ({{node}})")], "short"),
            ("ECN-marked RoCE packets per leaf", [(f"leaf:superpod_fabric_ecn_marked_roce:rate1m{{{su},{leaf}}}",
                                                  "{{leaf}}")], "pps"),
        ]),
    ]
    panels, pid, y = [], 1, 0
    for title, row in rows:
        panels.append({"id": pid, "type": "row", "title": title, "collapsed": False,
                       "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []})
        pid, y = pid + 1, y + 1
        for i, (ptitle, exprs, unit) in enumerate(row):
            panels.append(_panel(pid, ptitle, exprs, 12 * (i % 2), y + 8 * (i // 2), unit))
            pid += 1
        y += 8 * ((len(row) + 1) // 2)
    doc = {
        "title": f"RoCE fabric - {layout.spec.name}",
        "uid": f"superpod-fabric-{layout.spec.name}"[:40],
        "description": f"Fabric telemetry of pod {layout.spec.name}: {GENERATED}",
        "tags": ["superpod", "roce", "fabric"],
        "schemaVersion": 39,
        "time": {"from": "now-3h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            _var("su", "SU", sus), _var("rail", "Rail", rails_s), _var("leaf", "Leaf", leaves)]},
        "panels": panels,
    }
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def render_telemetry(layout: Layout, out_dir: Path) -> dict[Path, str]:
    """build/<stack>/telemetry/: scrape targets, gnmic config, rules, dashboard."""
    if layout.spec.compute_fabric.kind != "roce":
        return {}  # InfiniBand fabrics are watched by UFM, not by PFC/ECN counters
    d = Path(out_dir) / "telemetry"
    return {
        d / "fabric_targets.json": node_targets(layout),
        d / "gnmic.yml": switch_targets(layout),
        d / "fabric_rules.yml": rules(layout),
        d / "fabric_dashboard.json": dashboard(layout),
    }
