"""/metrics (issue 20): loopback unless told, bounded connections without a thread each,
idle connections closed, optional TLS and basic auth."""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
import subprocess
import threading

import aiohttp
import pytest
from cooling_agent.config import AgentConfig, Listen
from cooling_agent.credentials import Credential
from cooling_agent.exposition import MetricsServer
from cooling_agent.metrics import Store, make_registry

from .conftest import layout


def registry():
    return make_registry(Store(), AgentConfig.model_validate(layout()))


def test_listens_on_loopback_unless_told():
    assert AgentConfig().listen.address == "127.0.0.1"
    with pytest.raises(ValueError):
        Listen(tls_cert_file="/x.pem")  # a certificate without its key


def test_400_idle_connections_cost_no_threads_and_do_not_lock_out_scrapes():
    listen = Listen(address="127.0.0.1", port=0, max_connections=50, idle_timeout_s=0.5)

    async def go():
        server = await MetricsServer(registry(), listen).start()
        threads_before = threading.active_count()
        conns = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(400)]
        await asyncio.sleep(0.2)
        peak, refused, threads = server.peak, server.refused, threading.active_count()
        # the idle ones are closed after idle_timeout_s; a scraper then gets in
        status = None
        async with aiohttp.ClientSession() as session:
            for _ in range(40):
                try:
                    async with session.get(f"http://127.0.0.1:{server.port}/metrics") as resp:
                        status, body = resp.status, await resp.text()
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
        for _, writer in conns:
            writer.close()
        await server.stop()
        return threads_before, threads, peak, refused, status, body

    before, during, peak, refused, status, body = asyncio.run(go())
    assert during <= before + 1, f"{during - before} threads for 400 connections"
    assert peak == 50 and refused >= 100  # (some idle ones expire while the 400 are opened)
    assert status == 200 and "superpod_cooling_agent_info" in body


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")], check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


def test_tls_and_basic_auth(cert):
    cert_file, key_file = cert
    listen = Listen(address="127.0.0.1", port=0, tls_cert_file=str(cert_file), tls_key_file=str(key_file))
    auth = Credential(username="prometheus", password="scrape-pw")
    client_tls = ssl.create_default_context(cafile=str(cert_file))

    def basic(user, pw):
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}

    async def go():
        server = await MetricsServer(registry(), listen, auth).start()
        url = f"https://127.0.0.1:{server.port}/metrics"
        out = []
        try:
            async with aiohttp.ClientSession() as s:
                for headers in ({}, basic("prometheus", "wrong"), basic("other", "scrape-pw"),
                                basic("prometheus", "scrape-pw")):
                    async with s.get(url, ssl=client_tls, headers=headers) as resp:
                        out.append((resp.status, await resp.text()))
                with pytest.raises(aiohttp.ClientError):  # plain HTTP on the TLS port
                    async with s.get(f"http://127.0.0.1:{server.port}/metrics",
                                     timeout=aiohttp.ClientTimeout(total=3)) as resp:
                        await resp.read()
        finally:
            await server.stop()
        return out

    results = asyncio.run(go())
    assert [status for status, _ in results] == [401, 401, 401, 200]
    assert "superpod_cooling_agent_info" in results[-1][1]


def test_64_slow_clients_do_not_lock_out_scrapes():
    """64 clients that trickle a request header a byte at a time hold every connection slot
    (15 of the first 30 scrapes were refused): a new connection now pushes out the oldest one
    that is not being served, so every scrape gets in."""
    listen = Listen(address="127.0.0.1", port=0)  # the defaults: 64 connections, 15 s idle

    async def go():
        server = await MetricsServer(registry(), listen).start()
        slow = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(listen.max_connections)]

        async def trickle():
            while True:
                for _, writer in slow:
                    if not writer.is_closing():
                        writer.write(b"X")  # never a whole header line: the idle timer never fires
                await asyncio.sleep(0.05)

        for _, writer in slow:
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
        trickler = asyncio.ensure_future(trickle())
        ok = 0
        try:
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(connector=connector) as session:
                for _ in range(30):
                    try:
                        async with session.get(f"http://127.0.0.1:{server.port}/metrics",
                                               timeout=aiohttp.ClientTimeout(total=5)) as resp:
                            ok += resp.status == 200 and "superpod_cooling_agent_info" in await resp.text()
                    except (aiohttp.ClientError, asyncio.TimeoutError):
                        pass
        finally:
            trickler.cancel()
            for _, writer in slow:
                writer.close()
            await server.stop()
        return ok, server.peak

    ok, peak = asyncio.run(go())
    assert ok == 30, f"{30 - ok} of 30 scrapes refused"
    assert peak <= listen.max_connections
