"""One UDP socket for every SNMPv1/v2c target of the agent.

Requests are matched to responses by (peer address, request-id); a datagram that does
not decode or matches nothing is dropped (the waiting request then times out, which is
what a device answering garbage looks like from the outside)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import socket

from . import snmp_wire
from .model import PollError

log = logging.getLogger("cooling_agent.snmp")

_RCVBUF = 4 * 1024 * 1024  # bursts of hundreds of responses must not overflow the socket


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, client: SnmpClient):
        self.client = client

    def datagram_received(self, data: bytes, addr) -> None:
        self.client._received(data, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP port unreachable etc.
        log.debug("snmp socket error: %s", exc)


class SnmpClient:
    def __init__(self) -> None:
        self._transport: asyncio.DatagramTransport | None = None
        self._pending: dict[tuple[tuple[str, int], int], asyncio.Future] = {}
        # request-ids are 31-bit and start at random so two agent runs don't collide
        self._ids = itertools.count(random.randrange(1, 1 << 30))
        self.dropped = 0

    async def _ensure(self) -> asyncio.DatagramTransport:
        if self._transport is None:
            loop = asyncio.get_running_loop()
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            sock.bind(("0.0.0.0", 0))
            sock.setblocking(False)
            self._transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), sock=sock)
        return self._transport

    def next_id(self) -> int:
        return next(self._ids) & 0x7FFFFFFF or 1

    async def request(self, addr: tuple[str, int], request_id: int, message: bytes,
                      timeout_s: float) -> snmp_wire.Response:
        transport = await self._ensure()
        loop = asyncio.get_running_loop()
        key = (addr, request_id)
        fut = loop.create_future()
        self._pending[key] = fut
        timer = loop.call_later(timeout_s, self._expire, key)
        try:
            transport.sendto(message, addr)
            return await fut
        finally:
            timer.cancel()
            self._pending.pop(key, None)

    def _expire(self, key) -> None:
        fut = self._pending.pop(key, None)
        if fut is not None and not fut.done():
            fut.set_exception(PollError("timeout", "no SNMP response (request timed out)"))

    def _received(self, data: bytes, addr) -> None:
        try:
            rsp = snmp_wire.decode_response(data)
        except snmp_wire.WireError as exc:
            self.dropped += 1
            log.debug("dropped undecodable datagram from %s: %s", addr[0], exc)
            return
        fut = self._pending.pop(((addr[0], addr[1]), rsp.request_id), None)
        if fut is None or fut.done():
            self.dropped += 1
            return
        fut.set_result(rsp)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()
