"""The /metrics endpoint, served from the agent's event loop by aiohttp.

prometheus_client's own server spawns a thread per connection (400 idle connections, 402
threads) and has no authentication.  Here a connection is a protocol object, not a thread;
at most ``max_connections`` are open at once: when all are taken, a new one pushes out the
oldest connection not being served (slow clients cannot lock scrapes out; a new one is reset
only while every slot serves a scrape); one that sends nothing for ``idle_timeout_s`` is
closed (TLS handshakes too); optional TLS and HTTP basic auth (user and password from the
credentials file, compared in constant time); the exposition text is rendered in a worker
thread so a scrape never blocks polling."""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import ssl

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .config import Listen
from .credentials import Credential

log = logging.getLogger("cooling_agent.http")


class _Guard(asyncio.Protocol):
    """Wraps aiohttp's per-connection protocol: counts it, closes it when idle."""

    def __init__(self, owner: MetricsServer):
        self.owner = owner
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.BaseTransport | None = None
        self.serving = False  # a request of this connection is in the handler
        self._idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        if len(self.owner.live) >= self.owner.listen.max_connections and not self.owner.evict_one():
            self.owner.refused += 1  # every slot is serving a scrape right now
            transport.abort()
            return
        self.owner.live[self] = None
        self.owner.by_transport[transport] = self
        self.owner.peak = max(self.owner.peak, len(self.owner.live))
        self.inner = self.owner.web_server()
        self.inner.connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(self.owner.listen.idle_timeout_s, self._expire)

    def _expire(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self._arm()
            self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc) -> None:
        self.owner.live.pop(self, None)
        self.owner.by_transport.pop(self.transport, None)
        if self._idle is not None:
            self._idle.cancel()
        if self.inner is not None:
            self.inner.connection_lost(exc)


def tls_context(listen: Listen) -> ssl.SSLContext | None:
    if not listen.tls_cert_file:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(listen.tls_cert_file, listen.tls_key_file)
    return ctx


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, listen: Listen, basic_auth: Credential | None = None):
        self.registry = registry
        self.listen = listen
        self.live: dict[_Guard, None] = {}  # open connections, oldest first
        self.by_transport: dict[asyncio.BaseTransport, _Guard] = {}
        self.peak = 0  # most connections served at once
        self.refused = 0  # connections closed for a newer one (oldest idle first), or refused
        self._auth: tuple[bytes, bytes] | None = None
        if basic_auth is not None:
            if not basic_auth.username or not basic_auth.password:
                raise ValueError("listen.basic_auth_ref: the credential needs username and password")
            self._auth = (basic_auth.username.encode(), basic_auth.password.get_secret_value().encode())
        self.web_server = web.Server(self._handle, keepalive_timeout=listen.idle_timeout_s)
        self._server: asyncio.AbstractServer | None = None

    def evict_one(self) -> bool:
        """Makes room for a new connection: the oldest one not being served goes (an idle
        keep-alive, or a client still trickling its request). Slow clients holding every slot
        would otherwise lock Prometheus out; a scrape in progress is never the one cut."""
        for guard in self.live:
            if not guard.serving:
                self.refused += 1
                self.live.pop(guard)
                self.by_transport.pop(guard.transport, None)
                guard.transport.abort()
                return True
        return False

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> MetricsServer:
        loop = asyncio.get_running_loop()
        ctx = tls_context(self.listen)
        self._server = await loop.create_server(
            lambda: _Guard(self), self.listen.address, self.listen.port, ssl=ctx,
            ssl_handshake_timeout=self.listen.idle_timeout_s if ctx else None, backlog=128)
        return self

    def _authorized(self, header: str | None) -> bool:
        if self._auth is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).partition(b":")
        except ValueError:
            return False
        # both compared, always: no early exit that tells a valid user from an invalid one
        ok_user = hmac.compare_digest(user, self._auth[0])
        ok_password = hmac.compare_digest(password, self._auth[1])
        return ok_user and ok_password

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        guard = self.by_transport.get(request.transport)
        if guard is not None:
            guard.serving = True
        try:
            return await self._answer(request)
        finally:
            if guard is not None:
                guard.serving = False

    async def _answer(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="method not allowed\n")
        if request.path not in ("/", "/metrics"):
            return web.Response(status=404, text="not found\n")
        if not self._authorized(request.headers.get("Authorization")):
            return web.Response(status=401, text="unauthorized\n",
                                headers={"WWW-Authenticate": 'Basic realm="superpod-cooling-agent"'})
        if request.path == "/":
            return web.Response(text="superpod cooling agent: see /metrics\n")
        body = await asyncio.get_running_loop().run_in_executor(None, generate_latest, self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def stop(self, limit_s: float = 0.3) -> None:
        if self._server is None:
            return
        self._server.close()
        for guard in list(self.live):
            if guard.transport is not None:
                guard.transport.abort()
        await asyncio.wait([asyncio.ensure_future(self._server.wait_closed())], timeout=limit_s)
        self._server = None
