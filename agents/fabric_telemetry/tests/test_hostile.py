"""The exporter against a node that misbehaves: undecodable bytes, a hung ethtool, a sysfs read
that never returns, hundreds of idle clients. Each costs one sample or one NIC's freshness, never
the scrape; the server's threads and the scrape's time stay bounded; basic auth when configured."""

from __future__ import annotations

import base64
import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from fabric_telemetry.collector import make_registry
from fabric_telemetry.server import serve

from .conftest import find, node_config, scrape, write_phase


def test_an_undecodable_byte_costs_one_sample_not_the_scrape(node):
    root, cfg, _, registry = node
    (root / "sys/class/net/enp3np0/operstate").write_bytes(b"up\xff\xfe\n")
    eth = root / "ethtool" / "enp2np0"
    eth.write_bytes(eth.read_bytes() + b"\n     rx_bogus_\xff: 12\n")
    s = scrape(registry)
    assert len(find(s, "superpod_fabric_nic_present")) == 10
    assert find(s, "superpod_fabric_link_up", netdev="enp3np0") == [0.0]  # not "up": the value is garbage
    assert find(s, "superpod_fabric_source_up", netdev="enp2np0", source="ethtool") == [1.0]


def hung_ethtool(root) -> list[str]:
    """An ethtool that never answers for enp5np0 and answers at once for the rest."""
    return ["/bin/sh", "-c", '[ "$1" = enp5np0 ] || [ "$1" = enp6np0 ] && exec sleep 60; exec cat "$0/$1"',
            str(root / "ethtool")]


def test_hung_ethtools_cost_one_budget_not_one_timeout_each(tmp_path):
    cfg = node_config(tmp_path, ethtool_command=hung_ethtool(tmp_path), ethtool_timeout_s=1.0)
    write_phase(tmp_path, cfg, "t0")
    registry, _ = make_registry(cfg)
    started = time.monotonic()
    s = scrape(registry)
    assert time.monotonic() - started < 1.8  # two hung NICs: one 1 s budget, not 2 s in series
    assert find(s, "superpod_fabric_source_up", netdev="enp5np0", source="ethtool") == [0.0]
    assert find(s, "superpod_fabric_source_up", netdev="enp0np0", source="ethtool") == [1.0]


def test_a_sysfs_read_that_never_returns_leaves_that_nic_stale_and_the_rest_fresh(tmp_path):
    cfg = node_config(tmp_path, ethtool_timeout_s=1.0)
    write_phase(tmp_path, cfg, "t0")
    registry, _ = make_registry(cfg)
    first = scrape(registry)
    assert find(first, "superpod_fabric_reading_stale", netdev="enp4np0") == [0.0]
    speed = tmp_path / "sys/class/net/enp4np0/speed"
    speed.unlink()
    os.mkfifo(speed)  # opening it blocks until a writer comes: a read that never returns
    try:
        for _ in range(3):
            started = time.monotonic()
            s = scrape(registry)
            assert time.monotonic() - started < 2.5
            assert find(s, "superpod_fabric_reading_stale", netdev="enp4np0") == [1.0]
            assert find(s, "superpod_fabric_reading_stale", netdev="enp3np0") == [0.0]
            # the last good reading of the stuck NIC is still served, marked stale
            assert find(s, "superpod_fabric_link_speed_bits_per_second", netdev="enp4np0") == [400e9]
    finally:
        with open(speed, "w") as f:  # release the reader thread
            f.write("400000\n")


@pytest.fixture
def server(node):
    _, cfg, _, registry = node
    srv = serve(cfg.model_copy(update={"listen": cfg.listen.model_copy(update={"address": "127.0.0.1", "port": 0,
                                                                                "max_connections": 8})}), registry)
    yield srv
    srv.shutdown()
    srv.server_close()


def test_idle_clients_are_bounded_and_dropped(server):
    port = server.server_address[1]
    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
    time.sleep(0.5)
    assert threading.active_count() - before <= 8  # never one thread per client
    for s in idle:
        s.close()
    time.sleep(0.3)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert b"superpod_fabric_nic_present" in r.read()


def test_basic_auth_when_configured(tmp_path):
    cfg = node_config(tmp_path)
    write_phase(tmp_path, cfg, "t0")
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    os.chmod(secret, 0o600)
    cfg = cfg.model_copy(update={"listen": cfg.listen.model_copy(update={
        "address": "127.0.0.1", "port": 0, "basic_auth_user": "prom", "basic_auth_password_file": str(secret)})})
    registry, _ = make_registry(cfg)
    srv = serve(cfg, registry)
    url = f"http://127.0.0.1:{srv.server_address[1]}/metrics"
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=10)
        assert e.value.code == 401
        auth = "Basic " + base64.b64encode(b"prom:s3cret").decode()
        req = urllib.request.Request(url, headers={"Authorization": auth})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_default_listen_address_is_not_every_interface():
    from fabric_telemetry.config import Listen

    assert Listen().address == "127.0.0.1"
