"""UDP transport for every SNMPv1/v2c target of the agent: one connected socket per peer.

A connected UDP socket only receives datagrams from its peer (the kernel filters the rest),
so a device flooding the agent fills its own socket's buffer and costs the loop only its own
reads: a shared socket let one flooding PDU push healthy PDUs' answers out of the buffer.
Datagrams arriving while nothing is pending for that peer are dropped without decoding.
Requests are matched to responses by (peer, request-id); a datagram that does not decode
or matches nothing is dropped (the waiting request then times out, which is what a device
answering garbage looks like from the outside)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import socket

from . import snmp_wire
from .model import PollError

log = logging.getLogger("cooling_agent.snmp")

_RCVBUF = 256 * 1024  # per peer: a GETBULK answer is at most ~64 KiB


def _int_tlv(n: int) -> bytes:
    body = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)
    return bytes([0x02, len(body)]) + body


class _PeerProtocol(asyncio.DatagramProtocol):
    def __init__(self, client: SnmpClient, peer: tuple[str, int]):
        self.client = client
        self.peer = peer

    def datagram_received(self, data: bytes, addr) -> None:
        self.client._received(data, self.peer)

    def error_received(self, exc: Exception) -> None:  # ICMP port unreachable etc.
        log.debug("snmp socket error from %s: %s", self.peer[0], exc)


class SnmpClient:
    def __init__(self) -> None:
        self._endpoints: dict[tuple[str, int], asyncio.Future] = {}
        self._pending: dict[tuple[tuple[str, int], int], asyncio.Future] = {}
        self._inflight: dict[tuple[str, int], int] = {}
        self._rid_tags: dict[tuple[str, int], dict[int, bytes]] = {}  # peer -> pending id -> its BER
        # request-ids are 31-bit and start at random so two agent runs don't collide
        self._ids = itertools.count(random.randrange(1, 1 << 30))
        self.dropped = 0

    async def _endpoint(self, addr: tuple[str, int]) -> asyncio.DatagramTransport:
        fut = self._endpoints.get(addr)
        if fut is None:  # the first request to a peer opens its socket; concurrent ones wait for it
            fut = self._endpoints[addr] = asyncio.ensure_future(self._open(addr))
        try:
            return await asyncio.shield(fut)
        except OSError as exc:
            self._endpoints.pop(addr, None)
            raise PollError("unreachable", f"cannot open a UDP socket to {addr[0]}: {exc}") from exc

    async def _open(self, addr: tuple[str, int]) -> asyncio.DatagramTransport:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            sock.setblocking(False)
            sock.connect(addr)
            transport, _ = await loop.create_datagram_endpoint(lambda: _PeerProtocol(self, addr), sock=sock)
        except BaseException:
            sock.close()
            raise
        return transport

    def next_id(self) -> int:
        return next(self._ids) & 0x7FFFFFFF or 1

    async def request(self, addr: tuple[str, int], request_id: int, message: bytes,
                      timeout_s: float) -> snmp_wire.Response:
        transport = await self._endpoint(addr)
        loop = asyncio.get_running_loop()
        key = (addr, request_id)
        fut = loop.create_future()
        self._pending[key] = fut
        self._inflight[addr] = self._inflight.get(addr, 0) + 1
        self._rid_tags.setdefault(addr, {})[request_id] = _int_tlv(request_id)
        timer = loop.call_later(timeout_s, self._expire, key)
        try:
            transport.sendto(message)
            return await fut
        finally:
            timer.cancel()
            self._pending.pop(key, None)
            self._inflight[addr] -= 1
            self._rid_tags[addr].pop(request_id, None)

    def _expire(self, key) -> None:
        fut = self._pending.pop(key, None)
        if fut is not None and not fut.done():
            fut.set_exception(PollError("timeout", "no SNMP response (request timed out)"))

    def _received(self, data: bytes, peer: tuple[str, int]) -> None:
        if not self._inflight.get(peer):  # nothing asked: a flood or a late answer, not worth decoding
            self.dropped += 1
            return
        tags = self._rid_tags[peer]
        head = data[:96]  # version, community (<= 64 bytes in practice), PDU tag, request-id
        if len(tags) <= 4 and not any(tag in head for tag in tags.values()):
            # no pending request-id (BER-encoded) in the header: a flooding peer's datagrams
            # are dropped for the price of a bytes search, not a decode
            self.dropped += 1
            return
        try:
            rsp = snmp_wire.decode_response(data)
        except snmp_wire.WireError as exc:
            self.dropped += 1
            log.debug("dropped undecodable datagram from %s: %s", peer[0], exc)
            return
        fut = self._pending.pop((peer, rsp.request_id), None)
        if fut is None or fut.done():
            self.dropped += 1
            return
        fut.set_result(rsp)

    def close(self) -> None:
        for fut in self._endpoints.values():
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                fut.result().close()
            else:
                fut.cancel()
        self._endpoints.clear()
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        self._pending.clear()
