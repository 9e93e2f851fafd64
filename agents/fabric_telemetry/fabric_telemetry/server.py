"""The metrics endpoint: prometheus_client's handler behind a server whose threads are bounded (a
connection past max_connections is closed at once; an idle one is dropped after idle_timeout_s),
with optional basic auth (password from a file) and TLS."""

from __future__ import annotations

import base64
import hmac
import ssl
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from prometheus_client.exposition import MetricsHandler
from prometheus_client.registry import CollectorRegistry

from .config import ExporterConfig, Listen


class BoundedServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst of connects is accepted (and refused) at once

    def __init__(self, listen: Listen, handler):
        self.slots = threading.BoundedSemaphore(listen.max_connections)
        super().__init__((listen.address, listen.port), handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: refuse rather than grow a thread per client
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def read_password(path: str) -> bytes:
    p = Path(path)
    if p.stat().st_mode & 0o077:
        raise ValueError(f"listen.basic_auth_password_file {path} must not be readable by group or others")
    return p.read_bytes().strip()


def handler_for(registry: CollectorRegistry, listen: Listen):
    expected = None
    if listen.basic_auth_user:
        secret = listen.basic_auth_user.encode() + b":" + read_password(listen.basic_auth_password_file)
        expected = b"Basic " + base64.b64encode(secret)

    class Handler(MetricsHandler):
        timeout = listen.idle_timeout_s  # socket timeout: a client that sends nothing is dropped

        def do_GET(self):  # noqa: N802 (http.server's name)
            given = self.headers.get("Authorization", "").encode("latin-1", "replace")
            if expected is not None and not hmac.compare_digest(given, expected):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="superpod-fabric-telemetry"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args):  # scrapes every few seconds: not worth a log line each
            pass

    Handler.registry = registry
    return Handler


def serve(cfg: ExporterConfig, registry: CollectorRegistry) -> BoundedServer:
    """Starts serving in a daemon thread; the caller shuts it down."""
    listen = cfg.listen
    server = BoundedServer(listen, handler_for(registry, listen))
    if listen.tls_cert_file:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(listen.tls_cert_file, listen.tls_key_file)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
