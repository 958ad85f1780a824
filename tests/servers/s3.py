"""A throwaway S3-compatible server for the tests, started once per test session.

The first call of :func:`s3_url` starts moto's S3 server in a separate process
on a free port of 127.0.0.1 (a process, not moto's in-process thread, so that
the worker processes of tests/test_multiprocess.py reach the same server) and
creates one bucket. Every call then returns a URL naming a new prefix in that
bucket, so each test gets an empty store of its own. The server is stopped
when the interpreter exits.

moto checks a request's If-Match / If-None-Match and then writes in separate
steps, without a lock, while serving requests on many threads: two
conditional writes racing on one key could both pass their check. Real S3
evaluates the condition and the write atomically. So the server run here
(``python tests/servers/s3.py``) wraps moto's WSGI application in one lock:
requests are handled one at a time, which makes every conditional write
atomic, as on S3. Nothing in the client is faked: tests/test_s3_backend.py
proves with raw requests that this server answers 412 to stale conditions.

Credentials: fake ones are put into ``os.environ`` (inherited by worker
processes); shared AWS config files and profiles are hidden so a developer's
real configuration neither leaks into nor changes the tests.
"""

from __future__ import annotations

import atexit
import io
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from socketserver import ThreadingMixIn
from typing import IO, Any, cast
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer, make_server

BUCKET = "makers-test"
REGION = "us-east-1"
_lock = threading.Lock()
_prefixes = itertools.count(1)
_endpoint: str | None = None

FAKE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def use_fake_credentials() -> None:
    """Point the standard credential chain of this process (and its children)
    at fake keys, never at a developer's real ones."""
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
    os.environ.update(FAKE_ENVIRONMENT)


def _start() -> str:
    use_fake_credentials()
    log = tempfile.TemporaryFile(mode="w+")  # stderr, read only if the server fails to start
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__)], stdout=subprocess.PIPE, stderr=log, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the server prints its port once it listens
    if not line.strip().isdigit():
        proc.kill()
        proc.wait(timeout=30)
        log.seek(0)
        raise RuntimeError(f"the moto S3 server did not start:\n{line}{log.read()}")
    atexit.register(_stop, proc, log)
    endpoint = f"http://127.0.0.1:{int(line)}"
    request = urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, response.status
    return endpoint


def _stop(proc: subprocess.Popen[str], log: IO[str]) -> None:
    proc.terminate()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    log.close()


def endpoint() -> str:
    """The session's server endpoint, started on first use."""
    global _endpoint
    with _lock:
        if _endpoint is None:
            _endpoint = _start()
        return _endpoint


def s3_url(tmp_path: object = None) -> str:
    """A URL naming a fresh, empty store (a prefix of its own) for one test.

    ``tmp_path`` is accepted for symmetry with the other backends' helpers and
    not used: the store lives in the session's server.
    """
    prefix = f"t{os.getpid()}-{next(_prefixes)}"
    return f"s3://{BUCKET}/{prefix}?endpoint_url={endpoint()}&region={REGION}"


# --- the server process ------------------------------------------------------
#
# Not werkzeug's development server, which moto's own ``moto_server`` runs: it
# closes the connection after every response and then waits 10 ms for more
# request bytes, which would add a TCP handshake and 10 ms to every request
# and drown what the store itself costs. This one keeps connections alive.

StartResponse = Callable[..., Any]


class OneRequestAtATime:
    """WSGI middleware running one request at a time (see the module docstring)."""

    def __init__(self, app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        with self.lock:
            # One block, so the gateway can always send a Content-Length.
            return [b"".join(self.app(environ, start_response))]


class KeepAliveHandler(WSGIRequestHandler):
    """HTTP/1.1 with keep-alive; reads each request body whole before the app
    runs, so an app that ignores a body cannot desynchronise the connection."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each response waits for a delayed ACK

    def handle(self) -> None:
        BaseHTTPRequestHandler.handle(self)  # loops until the client closes

    def handle_one_request(self) -> None:
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline or not self.parse_request():
            self.close_connection = True
            return
        if self.headers.get("Transfer-Encoding"):
            self.send_error(411, "send a Content-Length")
            self.close_connection = True
            return
        body = io.BytesIO(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        environ = self.get_environ()
        environ["RAW_URI"] = self.path  # moto decodes keys itself, from the raw path
        output = cast("IO[bytes]", self.wfile)
        handler = ServerHandler(body, output, self.get_stderr(), environ, multithread=True)
        handler.http_version = "1.1"
        handler.request_handler = self  # type: ignore[attr-defined]
        handler.run(self.server.get_app())  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no line per request


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def serve() -> None:
    # moto's S3 application itself, not the DomainDispatcherApplication that
    # moto_server puts in front of all its services: that one picks the
    # service of every request by listing moto's package folder (an isdir per
    # service, twice a request), a third of the server's time per request.
    from moto.moto_server.werkzeug_app import create_backend_app

    app = OneRequestAtATime(create_backend_app("s3"))
    server = make_server(
        "127.0.0.1", 0, app, server_class=ThreadingWSGIServer, handler_class=KeepAliveHandler
    )
    print(server.server_port, flush=True)
    sys.stdout = open(os.devnull, "w")
    server.serve_forever()


if __name__ == "__main__":
    serve()
