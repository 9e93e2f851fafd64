"""The console script as a service: starts, polls, serves /metrics over HTTP, stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request

import yaml
from cooling_agent import sim

from .conftest import layout, snmp_pdu


def test_agent_serves_metrics(tmp_path, snmpsim, redfish_cdu):
    port = sim.free_port(sim.socket.SOCK_STREAM)
    creds = tmp_path / "credentials.yml"
    creds.write_text("apc: {community: apc}\n")
    creds.chmod(0o600)
    cfg = layout(listen={"address": "127.0.0.1", "port": port}, interval_s=0.5, timeout_s=1,
                 credentials_file=str(creds),
                 pdus=[snmp_pdu("pdu-a", snmpsim.port, "apc")],
                 cdus=[{"name": "cdu-a01", "rack": "rack-a01", "address": "127.0.0.1", "port": redfish_cdu,
                        "scheme": "http"}])
    path = tmp_path / "agent.yml"
    path.write_text(yaml.safe_dump(cfg))
    assert subprocess.run([sys.executable, "-m", "cooling_agent", "check-config", "-c", str(path)],
                          capture_output=True, timeout=60).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "cooling_agent", "run", "-c", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        body = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                if "superpod_cdu_supply_temperature_celsius{" in body and "superpod_pdu_power_watts{" in body:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert 'superpod_pdu_power_watts{feed="A",pdu="pdu-a",rack="rack-a01",row="a",su="su01"} 6420.0' in body
        assert 'superpod_cdu_supply_temperature_celsius{cdu="cdu-a01"' in body
        assert 'superpod_rack_budget_watts{rack="rack-a01",row="a",su="su01"} 45000.0' in body
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=15)[0].decode()
    assert proc.returncode == 0, out
    assert "apc:" not in out and "community: apc" not in out
