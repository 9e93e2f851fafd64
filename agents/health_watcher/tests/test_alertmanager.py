"""The watcher's alert against a real Alertmanager on loopback (Debian's prometheus-alertmanager
binary, which scripts/bootstrap.sh puts in .venv/bin): Alertmanager validates the POST against its
own API and shows the alert firing after the drain, and resolved after the return."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from health_watcher import fakes
from health_watcher.config import WatcherConfig
from health_watcher.watcher import Watcher

BINARY = shutil.which("alertmanager") or shutil.which("prometheus-alertmanager")
pytestmark = pytest.mark.skipif(BINARY is None, reason="no alertmanager binary (scripts/bootstrap.sh installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def alertmanager(tmp_path):
    conf = tmp_path / "alertmanager.yml"
    conf.write_text("route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n")
    port = free_port()
    proc = subprocess.Popen([BINARY, f"--config.file={conf}", f"--storage.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                get(url + "/api/v2/status")
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"alertmanager exited: {proc.stderr.read()}")
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_alert_fires_on_drain_and_resolves_on_return(alertmanager, tmp_path):
    kern = tmp_path / "kern.log"
    kern.write_text("")
    net = tmp_path / "net" / "enp24s0np0"
    net.mkdir(parents=True)
    (net / "operstate").write_text("down\n")
    (net / "carrier_changes").write_text("2\n")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat {Path(__file__).parent / 'data' / 'nvidia-smi-q.xml'}\n")
    smi.chmod(0o755)
    scontrol = fakes.write_tool(tmp_path / "scontrol", fakes.FAKE_SCONTROL, tmp_path / "scontrol.log")
    cfg = WatcherConfig(node="su01-node03", kernel_log=str(kern), nvidia_smi=[str(smi)], gpu_count=1,
                        sysfs_net=str(tmp_path / "net"), rails=[{"netdev": "enp24s0np0", "rail": 0}],
                        return_after_s=0, scheduler={"scontrol": str(scontrol)},
                        state_file=str(tmp_path / "state.json"), alert={"url": alertmanager})
    w = Watcher(cfg)
    assert w.step() == "drain"
    (firing,) = get(alertmanager + "/api/v2/alerts")
    assert firing["labels"] == {"alertname": "SuperpodNodeUnhealthy", "node": "su01-node03", "severity": "critical"}
    assert firing["annotations"]["summary"] == "superpod-health: rail 0 enp24s0np0 is down"
    assert firing["status"]["state"] == "active"
    (net / "operstate").write_text("up\n")
    assert w.step() == "resume"
    # resolved: endsAt now; Alertmanager lists it no more among the active ones
    assert get(alertmanager + "/api/v2/alerts?active=true") == []
