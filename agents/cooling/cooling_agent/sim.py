"""Loopback simulators for tests, benchmarks and demos: snmpsim responders, a Redfish
mockup server (DMTF mockup directory trees), a pymodbus CDU, and misbehaving peers
(black holes, garbage).  Everything binds 127.0.0.1 on OS-chosen ports."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from . import snmp_wire

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


# snmprec value tags -> BER tag; integer-valued ones are listed in _SNMPREC_INT
_SNMPREC_TAGS = {"2": 0x02, "4": 0x04, "5": 0x05, "6": 0x06, "64": 0x40, "65": 0x41, "66": 0x42, "67": 0x43,
                 "68": 0x44, "70": 0x46}
_SNMPREC_INT = {"2", "65", "66", "67", "70"}


def _snmprec_value(tag: str, text: str) -> tuple[int, bytes]:
    hexed = tag.endswith("x")
    tag = tag.rstrip("x")
    if tag not in _SNMPREC_TAGS:
        raise ValueError(f"snmprec type {tag!r} not supported by the recording responder")
    ber = _SNMPREC_TAGS[tag]
    if tag in _SNMPREC_INT:
        n = int(text)
        return ber, n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)
    if tag == "5":
        return ber, b""
    if tag == "6":
        return ber, snmp_wire.encode_oid(tuple(int(x) for x in text.split(".")))[2:]
    if tag == "64" and not hexed:
        return ber, bytes(int(x) for x in text.split("."))
    return ber, bytes.fromhex(text) if hexed else text.encode()


class RecordingResponder(asyncio.DatagramProtocol):
    """A fast SNMPv1/v2c command responder serving ``*.snmprec`` recordings (community =
    file stem), for benchmarks: snmpsim spends ~9 ms of CPU per 30-varbind GET, which on a
    2-core machine costs more than the agent under test.  GET, GETNEXT and GETBULK follow
    RFC 3416 (v2c exceptions; v1 noSuchName); tests/test_sim.py checks it answers exactly
    what snmpsim answers for the same recordings and requests."""

    def __init__(self, data_dir: str | Path):
        self.tables: dict[bytes, tuple[list[tuple[int, ...]], list[tuple[int, bytes]]]] = {}
        for f in sorted(Path(data_dir).glob("*.snmprec")):
            rows = []
            for line in f.read_text().splitlines():
                if line.strip() and not line.startswith("#"):
                    oid, tag, value = line.split("|", 2)
                    rows.append((tuple(int(x) for x in oid.strip(".").split(".")), _snmprec_value(tag, value)))
            rows.sort()
            self.tables[f.stem.encode()] = ([o for o, _ in rows], [v for _, v in rows])
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        try:
            pdu_type, req = snmp_wire.decode_message(data, (snmp_wire.GET, snmp_wire.GETNEXT, snmp_wire.GETBULK))
        except snmp_wire.WireError:
            return
        table = self.tables.get(req.community)
        if table is None or (pdu_type == snmp_wire.GETBULK and req.version == 0):
            return  # unknown community: silence, like a real agent
        self.transport.sendto(self.answer(pdu_type, req, table), addr)

    @staticmethod
    def answer(pdu_type: int, req: snmp_wire.Response, table) -> bytes:
        import bisect

        oids, values = table
        v1 = req.version == 0
        out: list[tuple[tuple[int, ...], int, bytes]] = []

        def next_of(oid):
            i = bisect.bisect_right(oids, oid)
            return (oids[i], *values[i]) if i < len(oids) else (oid, 0x82, b"")

        if pdu_type == snmp_wire.GET:
            for oid, _ in req.varbinds:
                i = bisect.bisect_left(oids, oid)
                out.append((oid, *values[i]) if i < len(oids) and oids[i] == oid else (oid, 0x81, b""))
        elif pdu_type == snmp_wire.GETNEXT:
            out = [next_of(oid) for oid, _ in req.varbinds]
        else:
            non_rep = max(0, min(req.error_status, len(req.varbinds)))
            out = [next_of(oid) for oid, _ in req.varbinds[:non_rep]]
            cursor = [oid for oid, _ in req.varbinds[non_rep:]]
            for _ in range(max(0, req.error_index) if cursor else 0):
                row = [next_of(oid) for oid in cursor]
                out.extend(row)
                cursor = [r[0] for r in row]
                if all(r[1] == 0x82 for r in row):
                    break
        if v1:  # SNMPv1 has no exception values: the first one becomes noSuchName(2)
            for i, (_oid, tag, _) in enumerate(out):
                if tag in (0x80, 0x81, 0x82):
                    return snmp_wire.encode_response(0, req.community, req.request_id, 2, i + 1,
                                                     [(o, 0x05, b"") for o, _ in req.varbinds])
        return snmp_wire.encode_response(req.version, req.community, req.request_id, 0, 0, out)


def serve_recordings(data_dir: str, port_queue, host: str = LOOPBACK) -> None:
    """Process entry point: serve recordings on an OS-chosen UDP port, put the port on the queue."""
    async def main():
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: RecordingResponder(data_dir), local_addr=(host, 0))
        port_queue.put(transport.get_extra_info("sockname")[1])
        await asyncio.Event().wait()

    asyncio.run(main())


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


@functools.lru_cache(maxsize=4)
def gzip_bomb(inflated_mib: int = 128) -> bytes:
    """A gzip body of ~600 KiB that inflates to ``inflated_mib`` MiB of a
    CoolingUnit-shaped JSON document (valid, so only its size is wrong)."""
    c = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # level 1: built in a fraction of the time
    mib = b"A" * (1 << 20)
    parts = [c.compress(b'{"PrimaryCoolantConnectors": {}, "Pad": "')]
    parts += [c.compress(mib) for _ in range(inflated_mib)]
    parts += [c.compress(b'"}'), c.flush()]
    return b"".join(parts)


def hostile_app(mode: str, members: int = 20_000, member_bytes: int = 1_000_000) -> web.Application:
    """A Redfish CDU that attacks its poller: ``gzip_bomb``, ``many_members`` (a Pumps
    collection of ``members`` links, each one served), ``deep`` (JSON nested 200,000 deep),
    ``big_members`` (``members`` pumps of ``member_bytes`` each: every body within the body
    limit, all of them together far over any sane poll), ``long_ids`` (``members`` pumps
    whose Id is ``member_bytes`` characters: label values)."""
    cdu_path = "/redfish/v1/ThermalEquipment/CDUs/1"
    # built now, not on the first request: the peers share the test's process and its CPU
    collection = json.dumps({"Members": [{"@odata.id": f"{cdu_path}/Pumps/{i}"} for i in range(members)]}).encode() \
        if mode in ("many_members", "big_members", "long_ids") else b""
    pad = "x" * member_bytes if mode in ("big_members", "long_ids") else ""

    async def handler(request: web.Request) -> web.Response:
        if mode == "gzip_bomb":
            return web.Response(body=gzip_bomb(), content_type="application/json",
                                headers={"Content-Encoding": "gzip"})
        if mode == "deep":
            return web.Response(body=b"[" * 200_000 + b"]" * 200_000, content_type="application/json")
        if request.path == cdu_path:
            doc = {"Id": "1", "PrimaryCoolantConnectors": {}, "Pumps": {"@odata.id": cdu_path + "/Pumps"}}
        elif request.path == cdu_path + "/Pumps":
            return web.Response(body=collection, content_type="application/json")
        else:
            index = request.path.rsplit("/", 1)[-1]
            doc = {"Id": f"{index}-{pad}" if mode == "long_ids" else index, "PumpSpeedPercent": {"Reading": 50},
                   "Status": {"Health": "OK", "State": "Enabled"}}
            if mode == "big_members":
                doc["Oem"] = {"Padding": pad}
        return web.json_response(doc)

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


async def start_tcp_dropper() -> tuple[asyncio.AbstractServer, int]:
    """Accepts TCP connections and drops them at once (a device rebooting under us)."""

    async def on_conn(reader, writer):
        writer.transport.abort()

    server = await asyncio.start_server(on_conn, LOOPBACK, 0)
    return server, server.sockets[0].getsockname()[1]


def _flood(port_file: str, seconds: float, rate: int) -> None:
    """Process body of flooding_pdu: wait for a request, then flood its sender."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOOPBACK, 0))
        Path(port_file).write_text(str(s.getsockname()[1]))
        _, addr = s.recvfrom(65535)
        junk = [snmp_wire.encode_response(1, b"public", rid, 0, 0, [((1, 3, 6, 1, 2, 1, 1, 1, 0), 0x04, b"x" * 1200)])
                for rid in range(1, 101)]
        s.setblocking(False)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for msg in junk * (rate // 2000 or 1):  # rate/20 datagrams every 50 ms
                with contextlib.suppress(OSError):
                    s.sendto(msg, addr)
            time.sleep(0.05)


def flooding_pdu(tmp_dir: str | Path, seconds: float = 5.0, rate: int = 40_000) -> tuple[subprocess.Popen, int]:
    """A separate process posing as an SNMP PDU: its first request makes it flood the sender
    with ~``rate`` well-formed, unmatched responses per second for ``seconds``."""
    port_file = Path(tmp_dir) / f"flood-{os.getpid()}-{time.monotonic_ns()}.port"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from cooling_agent.sim import _flood; "
                             f"_flood({str(port_file)!r}, {seconds}, {rate})"])
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("flooding peer did not start")
        time.sleep(0.05)
    return proc, int(port_file.read_text())


def busy_loop() -> subprocess.Popen:
    """A CPU-burning helper process, for tests that must hold under load."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


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
