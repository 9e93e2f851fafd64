"""`superpod publish` against hostile token files and servers (a real HTTP server on loopback): every
case ends in an `error:` line or a result within a bounded time, never a traceback or a hang, and the
token never appears in any output."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT
from topology.cli import app

TOKEN = "0123456789abcdef0123456789abcdef01234567"  # noqa: S105 (a test token)
runner = CliRunner()


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def echo_headers(h):  # a proxy's error page that shows the request it got, Authorization included
    answer(h, 500, ("<pre>" + str(h.headers) + "</pre>").encode(), "text/html")


def always_next(h):  # a server that never ends its paging (and no count)
    if "status" in h.path:
        return answer(h, 200, b'{"nautobot-version": "2.3.0"}')
    h.server.gets += 1
    answer(h, 200, json.dumps({"next": "http://x/?offset=1", "results": [{"id": "same"}]}).encode())


def not_json(h):
    answer(h, 200, b"<html>login</html>", "text/html")


def wrong_shape(h):
    answer(h, 200, b'{"nautobot-version": "2.3.0", "count": "many", "results": 7}' if "status" not in h.path
           else b'["not", "a", "mapping"]')


def huge_count(h):
    if "status" in h.path:
        return answer(h, 200, b'{"nautobot-version": "2.3.0"}')
    answer(h, 200, b'{"count": 1' + b"0" * 5000 + b', "next": null, "results": []}')


def ids_only(h):  # objects with an id and nothing else: every field the publisher reads is missing
    if "status" in h.path:
        return answer(h, 200, b'{"nautobot-version": "2.3.0"}')
    answer(h, 200, b'{"count": 1, "next": null, "results": [{"id": "x", "name": null, "display": 7}]}')


def slow(h):
    time.sleep(8)
    answer(h, 200, b"{}")


SERVERS = {"echo_headers": echo_headers, "always_next": always_next, "not_json": not_json,
           "wrong_shape": wrong_shape, "huge_count": huge_count, "ids_only": ids_only, "slow": slow}


class QuietServer(ThreadingHTTPServer):
    """A client that hung up (the publisher's timeout against `slow`) is expected: the handler's
    broken pipe must not print, since the thread outlives its test and would write into a later
    test's captured output."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def server(request):
    behave = SERVERS[request.param]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            behave(self)

        do_POST = do_PATCH = do_DELETE = do_GET  # noqa: N815

        def log_message(self, *args):
            pass

    srv = QuietServer(("127.0.0.1", 0), Handler)
    srv.gets = 0
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def token_file(tmp_path, content: bytes = TOKEN.encode()):
    path = tmp_path / "token"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    return path


def publish(url: str, token, *extra: str, timeout: str = "3"):
    return runner.invoke(app, ["publish", "--stack", "lab", "-C", str(ROOT), "--nautobot", url, "--token-file",
                               str(token), "--timeout", timeout, *extra])


@pytest.mark.parametrize("server", list(SERVERS), indirect=True)
def test_hostile_server_gives_an_error_line_in_bounded_time_and_never_the_token(server, tmp_path):
    started = time.monotonic()
    result = publish(f"http://127.0.0.1:{server.server_address[1]}", token_file(tmp_path), "--dry-run")
    assert time.monotonic() - started < 30
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    assert TOKEN not in result.output and TOKEN[:16] not in result.output
    assert server.gets <= 1000  # paging is bounded, whatever the server says


@pytest.mark.parametrize("content", [
    TOKEN.encode()[:20] + b"\x00" + TOKEN.encode()[20:],      # a NUL byte inside
    b"\xff\xfe" + TOKEN.encode(),                             # not UTF-8
    TOKEN.encode() + b"\x1b[2J",                              # an escape sequence
    TOKEN.encode() * 10_000,                                  # far too long for a token
    b"",
])
def test_a_bad_token_file_is_refused_without_printing_it(tmp_path, content):
    result = publish("http://127.0.0.1:9", token_file(tmp_path, content), "--dry-run")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2 and result.output.startswith("error: --token-file: "), result.output
    assert TOKEN[:16] not in result.output and "\x1b" not in result.output
