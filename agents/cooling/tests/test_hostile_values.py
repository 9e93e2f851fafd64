"""Hostile values and careless configuration (issue 40, item 6): a huge integer or a string
`Status` from a device costs that one sample (the target stays up, degraded), logged once per
state change and never as a traceback; config and credentials errors are one `error:` line
naming the field, exit 2; a FIFO as the credentials file does not hang start-up; a credentials
file the config names but that is missing is an error."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys

import pytest
import yaml
from aiohttp import web
from cooling_agent import sim
from cooling_agent.agent import Agent
from cooling_agent.config import AgentConfig
from cooling_agent.credentials import CredentialsError, CredentialStore

from .conftest import layout, one, pick, scrape

CDU = "/redfish/v1/ThermalEquipment/CDUs/1"


def http_cdu(name: str, port: int) -> dict:
    return {"name": name, "rack": "rack-a01", "address": sim.LOOPBACK, "port": port, "scheme": "http"}


@pytest.fixture(scope="module")
def bad_value_cdu(peers, mockups) -> int:
    """The DMTF CoolingUnit mockup with a string Status, a 400-digit temperature and a
    string humidity; everything else as DMTF wrote it."""
    root = mockups / "public-cooling-unit"
    doc = json.loads((root / "ThermalEquipment" / "CDUs" / "1" / "index.json").read_text())
    env_link = doc["EnvironmentMetrics"]["@odata.id"].rstrip("/")
    cdu_body = json.dumps({**doc, "Status": "OK"}).encode()
    env_body = b'{"TemperatureCelsius": {"Reading": 1' + b"0" * 400 + b'}, "HumidityPercent": {"Reading": "wet"}}'

    def hook(request: web.Request):
        path = request.path.rstrip("/")
        if path == CDU:
            return web.Response(body=cdu_body, content_type="application/json")
        if path == env_link:
            return web.Response(body=env_body, content_type="application/json")
        return None

    return peers.run(sim.start_app(sim.mockup_app(root, hook=hook)))[1]


def test_bad_values_cost_one_sample_each_and_are_logged_once(bad_value_cdu, redfish_cdu, creds, caplog):
    cfg = AgentConfig.model_validate(layout(cdus=[http_cdu("bad-cdu", bad_value_cdu), http_cdu("good", redfish_cdu)]))
    agent = Agent(cfg, creds)

    async def go():
        try:
            await agent.poll_once()
            for _ in range(4):
                for t in agent.targets:
                    await agent.poll_target(t)
        finally:
            await agent.stop()

    with caplog.at_level(logging.INFO, logger="cooling_agent"):
        asyncio.run(go())
    m = scrape(agent)
    assert one(m, "superpod_target_up", target="bad-cdu") == 1.0
    assert one(m, "superpod_target_degraded", target="bad-cdu") == 1.0
    assert one(m, "superpod_target_poll_errors_total", target="bad-cdu", reason="bad_value") == 5 * 3
    assert not pick(m, "superpod_target_poll_errors_total", target="bad-cdu", reason="internal")
    # the device's other readings are all there, as the healthy copy of the mockup has them
    good = {k for k in pick(m, "superpod_cdu_supply_temperature_celsius", cdu="good")}
    bad = {k for k in pick(m, "superpod_cdu_supply_temperature_celsius", cdu="bad-cdu")}
    assert len(bad) == len(good) >= 1
    assert pick(m, "superpod_cdu_pump_speed_percent", cdu="bad-cdu")
    assert not pick(m, "superpod_cdu_health", cdu="bad-cdu") and pick(m, "superpod_cdu_health", cdu="good")
    assert not pick(m, "superpod_cdu_ambient_temperature_celsius", cdu="bad-cdu")
    mine = [r for r in caplog.records if "bad-cdu" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert len(mine) == 1 and "unusable" in mine[0].getMessage(), [r.getMessage() for r in mine]


def cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cooling_agent", *args], capture_output=True, text=True,
                          timeout=timeout)


def write_config(tmp_path, text: str | bytes):
    path = tmp_path / "agent.yml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize("body, expect", [
    ("pdus: [unclosed\n", "config: .*agent.yml: not valid YAML at line 2"),
    (b"interval_s: \xff\n", "config: .*agent.yml: not UTF-8"),
    ("- a list\n", "config: .*agent.yml: expected a mapping"),
    ("interval_s: fast\n", "config: interval_s: Input should be a valid number"),
    ("pdus: [{name: p, address: 10.0.0.1, protocol: snmp}]\n", "config: pdus.0: .*needs a profile"),
], ids=["yaml", "utf8", "list", "type", "rule"])
def test_config_errors_are_one_line_naming_the_field(tmp_path, body, expect):
    proc = cli("check-config", "-c", str(write_config(tmp_path, body)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert __import__("re").search(expect, lines[0]), lines[0]


def test_missing_or_folder_config_is_an_error_line(tmp_path):
    for path in (tmp_path / "nope.yml", tmp_path):
        proc = cli("check-config", "-c", str(path))
        assert proc.returncode == 2 and proc.stderr.startswith("error: config: ") and "Traceback" not in proc.stderr
        assert str(path) in proc.stderr


def test_a_fifo_as_credentials_file_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "credentials.yml"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(CredentialsError, match="not a regular file"):
        CredentialStore.load(fifo)
    cfg = write_config(tmp_path, yaml.safe_dump(layout(credentials_file=str(fifo))))
    proc = cli("check-config", "-c", str(cfg), timeout=15)  # hung forever before
    assert proc.returncode == 2 and "credentials_file" in proc.stderr and "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_credentials_file_named_in_the_config_is_an_error(tmp_path):
    missing = tmp_path / "credentials.yml"
    with pytest.raises(CredentialsError, match="credentials_file .*credentials.yml: no such file"):
        CredentialStore.load(missing)
    cfg = write_config(tmp_path, yaml.safe_dump(layout(credentials_file=str(missing))))
    proc = cli("check-config", "-c", str(cfg))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    assert CredentialStore.load(None).get("x").community is None  # no file named: environment only
