"""PFC storms through the fabric telemetry exporter itself (agents/fabric_telemetry), serving its
/metrics over HTTP on loopback from the recorded ConnectX-7 counters (its tests/data/cx7): the
watcher reads what the agent really exports, not a copy of its format written here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from health_watcher import fakes
from health_watcher.config import WatcherConfig
from health_watcher.watcher import Watcher

ft_fakes = pytest.importorskip("fabric_telemetry.fakes")
ft_config = pytest.importorskip("fabric_telemetry.config")
ft_collector = pytest.importorskip("fabric_telemetry.collector")
ft_server = pytest.importorskip("fabric_telemetry.server")

RECORDINGS = Path(ft_fakes.__file__).resolve().parents[1] / "tests" / "data" / "cx7"
NICS = [("enp24s0np0", "mlx5_0", 0), ("enp64s0np0", "mlx5_3", 1)]  # the lab plan's su01-node03, rails 0 and 1


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def set_counter(root: Path, netdev: str, name: str, value: int) -> None:
    f = root / "ethtool" / netdev
    text, n = re.subn(rf"(?m)^(\s+{name}): \d+$", rf"\g<1>: {value}", f.read_text())
    assert n == 1, name
    f.write_text(text)


def counter(root: Path, netdev: str, name: str) -> int:
    return int(re.search(rf"(?m)^\s+{name}: (\d+)$", (root / "ethtool" / netdev).read_text())[1])


def start_exporter(fab: Path, **listen):
    """The real exporter over the stand-in sysfs and ethtool, serving on a free loopback port."""
    for netdev, hca, _ in NICS:
        ft_fakes.write_nic(fab, RECORDINGS, "t0", netdev, hca)
    ecfg = ft_config.ExporterConfig.model_validate({
        "node": "su01-node03", "su": "su01", "sysfs_root": str(fab / "sys"),
        "ethtool_command": ft_fakes.ethtool_command(fab), "listen": {"address": "127.0.0.1", "port": 0, **listen},
        "nics": [{"netdev": nd, "hca": hca, "rail": r, "gpu": r, "leaf": f"su01-leaf-rail{r}", "leaf_port": "swp3"}
                 for nd, hca, r in NICS]})
    registry, _ = ft_collector.make_registry(ecfg)
    return ft_server.serve(ecfg, registry)


@pytest.fixture
def node(tmp_path):
    """The exporter serving two rail NICs at t0 of the recordings, and a watcher pointed at it."""
    fab = tmp_path / "fab"
    server = start_exporter(fab)
    kern = tmp_path / "kern.log"
    kern.write_text("")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat {Path(__file__).parent / 'data' / 'nvidia-smi-q.xml'}\n")
    smi.chmod(0o755)
    scontrol = fakes.write_tool(tmp_path / "scontrol", fakes.FAKE_SCONTROL, tmp_path / "scontrol.log")
    cfg = WatcherConfig(node="su01-node03", kernel_log=str(kern), nvidia_smi=[str(smi)], gpu_count=1,
                        scheduler={"scontrol": str(scontrol)}, state_file=str(tmp_path / "state.json"),
                        pfc={"url": f"http://127.0.0.1:{server.server_port}/metrics"})
    yield fab, cfg, tmp_path
    server.shutdown()


def drains(tmp):
    return [c for c in fakes.calls(tmp / "scontrol.log") if "state=drain" in c]


def test_the_recorded_counters_are_no_storm(node):
    fab, cfg, tmp = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    assert w.step() is None
    for netdev, hca, _ in NICS:  # t1: rx pause +6 s (the leaf pausing the NIC), tx pause +0.05 s, in 10 s
        ft_fakes.write_nic(fab, RECORDINGS, "t1", netdev, hca)
    clock.t += 10
    assert w.step() is None and drains(tmp) == []  # tx 0.5 %: the node pauses no one


def test_rx_pause_drains_only_when_the_site_says_so(node):
    fab, cfg, tmp = node
    cfg = cfg.model_copy(update={"pfc": cfg.pfc.model_copy(update={"directions": ["rx", "tx"]})})
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    assert w.step() is None
    ft_fakes.write_nic(fab, RECORDINGS, "t1", "enp64s0np0", "mlx5_3")
    clock.t += 10  # recordings: rx_prio3_pause_duration 8123456 -> 14123456 us: 60 % of 10 s
    assert w.step() == "drain"
    assert drains(tmp)[0][3] == ("reason=superpod-health: PFC storm on rail 1 enp64s0np0 (su01-leaf-rail1 swp3): "
                                 "priority 3 paused by its leaf 60% of the time for 10 s")


def test_tx_pause_storm_drains_after_storm_for_s(node):
    fab, cfg, tmp = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    assert w.step() is None
    start = counter(fab, "enp24s0np0", "tx_prio3_pause_duration")
    for i in range(1, 6):  # 90 % of each 2 s pass spent pausing the leaf
        set_counter(fab, "enp24s0np0", "tx_prio3_pause_duration", start + i * 1_800_000)
        clock.t += 2
        acted = w.step()
        assert acted == (None if i < 5 else "drain"), i  # storm_for_s 10: the fifth pass
    assert drains(tmp)[0][3] == ("reason=superpod-health: PFC storm on rail 0 enp24s0np0 (su01-leaf-rail0 swp3): "
                                 "priority 3 pausing its leaf 90% of the time for 10 s")


def test_a_pause_that_stops_resets_the_storm_clock(node):
    fab, cfg, tmp = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    w.step()
    v = counter(fab, "enp24s0np0", "tx_prio3_pause_duration")
    for paused in (True, True, True, True, False, True, True):  # never 10 s in a row
        v += 1_800_000 if paused else 0
        set_counter(fab, "enp24s0np0", "tx_prio3_pause_duration", v)
        clock.t += 2
        assert w.step() is None
    assert drains(tmp) == []


def test_nic_pfc_watchdog_drains_at_once(node):
    fab, cfg, tmp = node
    clock = Clock()
    w = Watcher(cfg, clock=clock)
    w.step()
    set_counter(fab, "enp64s0np0", "tx_pause_storm_error_events", 1)
    clock.t += 2
    assert w.step() == "drain"
    assert drains(tmp)[0][3] == ("reason=superpod-health: PFC storm on rail 1 enp64s0np0 (su01-leaf-rail1 swp3): "
                                 "NIC watchdog stopped pause transmission (1 stall event(s))")


def test_exporter_down_is_logged_not_drained(node, caplog):
    fab, cfg, tmp = node
    cfg = cfg.model_copy(update={"pfc": cfg.pfc.model_copy(update={"url": "http://127.0.0.1:1/metrics"})})
    w = Watcher(cfg, clock=Clock())
    assert w.step() is None and w.step() is None and drains(tmp) == []
    said = [r.getMessage() for r in caplog.records if "PFC storms not watched" in r.getMessage()]
    assert len(said) == 1  # once per outage, not every pass


def test_basic_auth_to_the_exporter(node, tmp_path, caplog):
    fab, cfg, tmp = node
    pw = tmp_path / "pw"
    pw.write_text("s3cret\n")
    pw.chmod(0o600)
    server = start_exporter(tmp_path / "fab2", basic_auth_user="prom", basic_auth_password_file=str(pw))
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    try:
        for auth, works in (({}, False), ({"basic_auth_user": "prom", "basic_auth_password_file": str(pw)}, True)):
            w = Watcher(cfg.model_copy(update={"pfc": cfg.pfc.model_copy(update={"url": url, **auth})}), clock=Clock())
            w.step()
            assert (w.pfc.last is not None) == works and w.pfc.unreachable != works
        assert any("HTTP Error 401" in r.getMessage() for r in caplog.records)
    finally:
        server.shutdown()
    with pytest.raises(ValueError, match="basic_auth_user and basic_auth_password_file go together"):
        WatcherConfig(node="n", pfc={"url": url, "basic_auth_user": "prom"})
