"""Event to drain: seconds from a GPU XID written to the kernel log, a rail going down in sysfs,
and a PFC storm on a rail NIC (the NIC's PFC watchdog firing; a priority pausing its leaf 90 % of
the time, which drains after storm_for_s, 10 s by default) to the drain call the watcher makes,
with its default pass interval (2 s), the real H100's nvidia-smi -q -x behind a stand-in
nvidia-smi, the fabric telemetry exporter itself serving the recorded ConnectX-7 counters over
HTTP on loopback, and a stand-in scontrol that checks its arguments as the real one does
(agents/health_watcher/health_watcher/fakes.py).
Goal (issue #36): under 30 s. Prints one line per trial and the worst.

    python bench/bench_health_watcher.py [--trials 5]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "agents" / "health_watcher"))
sys.path.insert(0, str(ROOT / "agents" / "fabric_telemetry"))

from fabric_telemetry import fakes as ft_fakes  # noqa: E402
from fabric_telemetry.collector import make_registry  # noqa: E402
from fabric_telemetry.config import ExporterConfig  # noqa: E402
from fabric_telemetry.server import serve  # noqa: E402
from health_watcher import fakes  # noqa: E402 (after the path: the agent is its own package)
from health_watcher.config import WatcherConfig  # noqa: E402
from health_watcher.watcher import Watcher  # noqa: E402

RECORDINGS = ROOT / "agents" / "fabric_telemetry" / "tests" / "data" / "cx7"
EVENTS = ("xid", "rail-down", "pfc-watchdog", "pfc-pause")

XID = "NVRM: Xid (PCI:0000:18:00): 79, pid=2214, name=python3, GPU has fallen off the bus.\n"


def trial(tmp: Path, event: str) -> float:
    kern = tmp / "kern.log"
    kern.write_text("")
    smi = tmp / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat {ROOT / 'testdata/h100-node/nvidia-smi-q.xml'}\n")
    smi.chmod(0o755)
    net = tmp / "net" / "enp24s0np0"
    net.mkdir(parents=True, exist_ok=True)
    (net / "operstate").write_text("up\n")
    (net / "carrier_changes").write_text("2\n")
    log = tmp / "scontrol.log"
    log.unlink(missing_ok=True)
    (tmp / "state.json").unlink(missing_ok=True)
    scontrol = fakes.write_tool(tmp / "scontrol", fakes.FAKE_SCONTROL, log)
    fab = tmp / "fab"
    ft_fakes.write_nic(fab, RECORDINGS, "t0", "enp24s0np0", "mlx5_0")
    ecfg = ExporterConfig.model_validate({
        "node": "su01-node01", "su": "su01", "sysfs_root": str(fab / "sys"),
        "ethtool_command": ft_fakes.ethtool_command(fab), "listen": {"address": "127.0.0.1", "port": 0},
        "nics": [{"netdev": "enp24s0np0", "hca": "mlx5_0", "rail": 0, "gpu": 0}]})
    server = serve(ecfg, make_registry(ecfg)[0])
    cfg = WatcherConfig(node="su01-node01", kernel_log=str(kern), nvidia_smi=[str(smi)], gpu_count=1,
                        sysfs_net=str(tmp / "net"), rails=[{"netdev": "enp24s0np0", "rail": 0}],
                        scheduler={"scontrol": str(scontrol)}, state_file=str(tmp / "state.json"),
                        pfc={"url": f"http://127.0.0.1:{server.server_port}/metrics"})
    w = Watcher(cfg)
    stop = threading.Event()
    t = threading.Thread(target=w.run_forever, args=(stop,), daemon=True)
    t.start()
    time.sleep(random.uniform(0.5, cfg.interval_s + 0.5))  # the event lands anywhere in a pass
    pausing = threading.Event()
    start = time.monotonic()
    if event == "xid":
        with kern.open("a") as f:
            f.write(XID)
    elif event == "rail-down":
        (net / "operstate").write_text("down\n")
    elif event == "pfc-watchdog":
        edit_counter(fab, "tx_pause_storm_error_events", lambda v: v + 1)
    else:  # the NIC starts pausing its leaf 90 % of the time: the counter grows as time passes
        threading.Thread(target=pause, args=(fab, start, pausing), daemon=True).start()
    while not log.is_file() or not log.read_text():
        time.sleep(0.01)
        if time.monotonic() - start > 60:
            break
    took = time.monotonic() - start
    stop.set()
    pausing.set()
    t.join()
    server.shutdown()
    return took


def edit_counter(fab: Path, name: str, change) -> None:
    f = fab / "ethtool" / "enp24s0np0"
    lines = f.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        key, _, value = line.strip().partition(": ")
        if key == name:
            lines[i] = line.replace(f": {value}", f": {change(int(value))}")
    tmp = f.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(f)  # the exporter never reads half a file


def pause(fab: Path, start: float, stop: threading.Event) -> None:
    f = fab / "ethtool" / "enp24s0np0"
    base = int(next(x for x in f.read_text().splitlines() if "tx_prio3_pause_duration" in x).split(":")[1])
    while not stop.wait(0.1):
        paused_us = int((time.monotonic() - start) * 0.9e6)
        edit_counter(fab, "tx_prio3_pause_duration", lambda v, p=paused_us: base + p)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    worst = 0.0
    for event in EVENTS:
        for i in range(args.trials):
            with tempfile.TemporaryDirectory() as d:
                took = trial(Path(d), event)
            worst = max(worst, took)
            print(f"{event} trial {i + 1}: event to drain {took:.2f} s")
    print(f"worst event to drain: {worst:.2f} s (goal < 30 s)")


if __name__ == "__main__":
    main()
