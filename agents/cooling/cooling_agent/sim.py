"""Loopback simulators for tests, benchmarks and demos: snmpsim responders, a Redfish
mockup server (DMTF mockup directory trees), a pymodbus CDU, and misbehaving peers
(black holes, garbage).  Everything binds 127.0.0.1 on OS-chosen ports."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

LOOPBACK = "127.0.0.1"


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class PeerLoop:
    """An asyncio loop in a daemon thread hosting simulated devices."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="peers", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 15.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


# -- SNMP ----------------------------------------------------------------------------------
class SnmpSim:
    """snmpsim-command-responder serving ``*.snmprec`` (community = file stem)."""

    def __init__(self, data_dir: str | Path, port: int | None = None):
        self.tmp = Path(tempfile.mkdtemp(prefix="snmpsim-"))
        self.data = self.tmp / "data"
        shutil.copytree(data_dir, self.data)
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    def start(self, wait_s: float = 20.0) -> SnmpSim:
        env = {**os.environ, "SNMPSIM_ALLOW_ROOT": "true"}
        cmd = [sys.executable, "-c", "import sys; from snmpsim.commands.responder import main; sys.exit(main())",
               f"--data-dir={self.data}", f"--cache-dir={self.tmp / 'cache'}",
               f"--agent-udpv4-endpoint={LOOPBACK}:{self.port}", "--log-level=error",
               "--logging-method=file:" + str(self.tmp / "log")]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_ready(wait_s)
        return self

    def _wait_ready(self, wait_s: float) -> None:
        """Bounded wait until a GET of sysDescr on any community gets an answer."""
        community = next(self.data.glob("*.snmprec")).stem.encode()
        # SNMPv2c GET sysDescr.0, hand-encoded so readiness does not depend on the agent code
        oid = bytes([0x06, 0x08, 0x2B, 6, 1, 2, 1, 1, 1, 0])
        vb = bytes([0x30, len(oid) + 2]) + oid + b"\x05\x00"
        vbl = bytes([0x30, len(vb)]) + vb
        pdu_body = b"\x02\x01\x01\x02\x01\x00\x02\x01\x00" + vbl
        pdu = bytes([0xA0, len(pdu_body)]) + pdu_body
        msg_body = b"\x02\x01\x01" + bytes([0x04, len(community)]) + community + pdu
        msg = bytes([0x30, len(msg_body)]) + msg_body
        deadline = time.monotonic() + wait_s
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.2)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"snmpsim exited: {self.proc.stderr.read().decode()[-2000:]}")
                try:
                    s.sendto(msg, (LOOPBACK, self.port))
                    s.recvfrom(4096)
                    return
                except OSError:
                    continue
        raise RuntimeError(f"snmpsim on port {self.port} not ready after {wait_s}s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.tmp, ignore_errors=True)


class UdpPeer(asyncio.DatagramProtocol):
    """A UDP 'device' that never answers (reply=None) or answers with given bytes."""

    def __init__(self, reply: bytes | None = None):
        self.reply = reply
        self.transport = None
        self.received = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.received += 1
        if self.reply is not None:
            self.transport.sendto(self.reply, addr)


async def start_udp_peer(reply: bytes | None = None) -> tuple[UdpPeer, int]:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(lambda: UdpPeer(reply), local_addr=(LOOPBACK, 0))
    return proto, transport.get_extra_info("sockname")[1]


# -- Redfish -------------------------------------------------------------------------------
def mockup_app(root: str | Path, hook: Callable[[web.Request], object] | None = None) -> web.Application:
    """Serve a DMTF mockup tree: GET /redfish/v1/<p> -> <root>/<p>/index.json."""
    root = Path(root)
    cache: dict[str, bytes] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        if hook is not None:
            res = hook(request)
            if asyncio.iscoroutine(res):
                res = await res
            if res is not None:
                return res
        rel = request.path[len("/redfish/v1"):].strip("/")
        if ".." in rel.split("/"):
            raise web.HTTPNotFound()
        if rel not in cache:
            f = root / rel / "index.json"
            if not f.is_file():
                raise web.HTTPNotFound()
            cache[rel] = json.dumps(json.loads(f.read_text())).encode()
        return web.Response(body=cache[rel], content_type="application/json")

    app = web.Application()
    app.router.add_get("/redfish/v1", handler)
    app.router.add_get("/redfish/v1/{tail:.*}", handler)
    return app


async def start_app(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, LOOPBACK, 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


def garbage_app() -> web.Application:
    async def handler(request):
        return web.Response(body=b"<html>\x00\xff not json", content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    return app


async def start_tcp_blackhole() -> tuple[asyncio.AbstractServer, int]:
    """Accepts TCP connections and never says a word."""
    held: list = []

    async def on_conn(reader, writer):
        held.append(writer)
        with contextlib.suppress(Exception):
            await reader.read()

    server = await asyncio.start_server(on_conn, LOOPBACK, 0)
    return server, server.sockets[0].getsockname()[1]


# -- Modbus --------------------------------------------------------------------------------
async def start_modbus(holding: list[int], port: int | None = None):
    """A pymodbus TCP server (unit 1) whose holding registers start at 0 with ``holding``."""
    from pymodbus.datastore import ModbusDeviceContext, ModbusSequentialDataBlock, ModbusServerContext
    from pymodbus.server import ModbusTcpServer

    # pymodbus numbers data blocks from 1 (protocol address 0 is block address 1)
    block = ModbusSequentialDataBlock(1, list(holding) + [0] * 8)
    context = ModbusServerContext(devices=ModbusDeviceContext(hr=block, ir=block), single=True)
    port = port or free_port(socket.SOCK_STREAM)
    server = ModbusTcpServer(context, address=(LOOPBACK, port))
    await server.listen()
    return server, port
