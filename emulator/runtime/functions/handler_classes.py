"""Run a ``cloud-functions/`` handler class as the platform does.

A handler is a ``BaseHTTPRequestHandler`` subclass with ``do_GET``,
``do_POST``, ... It runs in a thread of its own with ``self.rfile`` holding
the request body and ``self.wfile`` connected to the client;
``self.context.agent.store`` is the synchronous store, ``self.context.params``
(also ``self.params``) the ``[id]`` / ``[[catch-all]]`` path parameters.

``self.path`` is the full raw request path with its query
(``/api/items/42?x=1``), as ``BaseHTTPRequestHandler`` gives it behind a
plain HTTP server. The platform may strip the route prefix here (one doc
example suggests it, nothing confirms it), so code that wants the ``[id]``
should read ``self.context.params`` rather than parse ``self.path``.

What the handler writes is parsed back into a response: with a
``Content-Length`` the body is sent in one piece; without one, each write is
passed on as it happens. The platform does not stream cloud-function
responses (the client gets the body when the function returns), so a
streaming handler is logged once per route. Writes block while more than
:data:`MAX_PENDING_BYTES` wait for a slow client, so a handler that writes a
lot cannot fill the worker's memory. Limits: :mod:`.limits`.
"""

from __future__ import annotations

import asyncio
import email.parser
import io
import logging
import threading
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..worker.context import FunctionContext
from ..worker.responses import error_response
from .limits import FunctionLimits, timed_out

logger = logging.getLogger("makers_store.serve")
_DROPPED = {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server"}
#: Bytes a streaming handler may have written ahead of the client before its writes block.
MAX_PENDING_BYTES = 1024 * 1024
_warned_streaming: set[str] = set()


class _Done:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error


Item = bytes | _Done


class _Channel:
    """The handler thread's output, on its way to the event loop (with backpressure)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self._room = threading.Condition()
        self._pending = 0
        self._closed = False

    # --- the handler's thread

    def put(self, chunk: bytes) -> None:
        with self._room:
            while self._pending >= MAX_PENDING_BYTES and not self._closed:
                self._room.wait()
            if self._closed:
                raise BrokenPipeError("the response is closed (time limit, or the client left)")
            self._pending += len(chunk)
        self._send(chunk)

    def finish(self, error: BaseException | None) -> None:
        self._send(_Done(error))

    def _send(self, item: Item) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the worker is shutting down and its loop is gone
            self.close()

    # --- the event loop

    async def get(self, deadline: float | None) -> Item:
        """The next item; TimeoutError once the loop's clock passes ``deadline``."""
        timeout = None if deadline is None else max(0.0, deadline - self._loop.time())
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if isinstance(item, bytes):
            with self._room:
                self._pending -= len(item)
                self._room.notify_all()
        return item

    def close(self) -> None:
        """From now on the handler's writes raise BrokenPipeError."""
        with self._room:
            self._closed = True
            self._room.notify_all()


class _Writer(io.RawIOBase):
    """``self.wfile``."""

    def __init__(self, channel: _Channel) -> None:
        super().__init__()
        self._channel = channel

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if chunk:
            self._channel.put(chunk)
        return len(chunk)


def _methods(handler: type) -> list[str]:
    return sorted(name[3:] for name in dir(handler) if name.startswith("do_"))


def _build(
    handler: type[BaseHTTPRequestHandler],
    request: Request,
    body: bytes,
    wfile: _Writer,
    context: FunctionContext,
) -> BaseHTTPRequestHandler:
    instance = handler.__new__(handler)
    target = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    path = target.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
    client = request.client
    server = request.scope.get("server") or ("127.0.0.1", 0)
    raw: Any = instance  # attributes normally set by BaseHTTPRequestHandler.handle()
    raw.client_address = (client.host, client.port) if client else ("127.0.0.1", 0)
    raw.server = SimpleNamespace(
        server_name=server[0], server_port=server[1], server_address=tuple(server)
    )
    raw.request = raw.connection = None
    raw.rfile = io.BytesIO(body)
    raw.wfile = wfile
    raw.command = request.method
    raw.path = path
    raw.request_version = "HTTP/1.1"
    raw.requestline = f"{request.method} {path} HTTP/1.1"
    raw.raw_requestline = (raw.requestline + "\r\n").encode("latin-1")
    raw.close_connection = True
    header_text = "".join(
        f"{name.decode('latin-1')}: {value.decode('latin-1')}\r\n"
        for name, value in request.scope["headers"]
    )
    raw.headers = email.parser.Parser(_class=handler.MessageClass).parsestr(header_text + "\r\n")
    raw.context = context
    raw.params = context.params
    if handler.log_message is BaseHTTPRequestHandler.log_message:
        raw.log_message = lambda *args: None  # the front logs every request already
    return instance


def _parse_head(head: bytes) -> tuple[int, list[tuple[bytes, bytes]]]:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise ValueError(
            "the handler wrote a body before its headers: call self.send_response(...) "
            "and self.end_headers() first"
        )
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(b":")
            headers.append((name.strip().lower(), value.strip()))
    return int(parts[1]), headers


class _StreamedBody(Response):
    """A handler's output without ``Content-Length``, passed on as it is written."""

    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        first: bytes,
        channel: _Channel,
        label: str,
        deadline: float | None,
    ) -> None:
        self.status_code = status
        self.background = None
        self.raw_headers = headers
        self.first = first
        self.channel = channel
        self.label = label
        self.deadline = deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code,
                        "headers": self.raw_headers})
            if self.first:
                await send({"type": "http.response.body", "body": self.first, "more_body": True})
            await self._relay(send)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.channel.close()

    async def _relay(self, send: Send) -> None:
        while True:
            try:
                item = await self.channel.get(self.deadline)
            except TimeoutError:
                logger.error("%s: response cut off at the cloud-function wall-clock limit "
                             "(its thread keeps running until it returns)", self.label)
                return
            if isinstance(item, _Done):
                if item.error is not None:
                    logger.error("%s raised after sending its headers", self.label,
                                 exc_info=item.error)
                return
            await send({"type": "http.response.body", "body": item, "more_body": True})


def _start(instance: BaseHTTPRequestHandler, method: str, channel: _Channel, label: str) -> None:
    def call() -> None:
        error: BaseException | None = None
        try:
            getattr(instance, f"do_{method}")()
        except BaseException as exc:
            error = exc
        channel.finish(error)

    # A thread of its own, not the loop's executor: a function stuck past its
    # time limit cannot be killed, and must not take a pool thread with it.
    threading.Thread(target=call, name=f"cloud function {label}", daemon=True).start()


async def _read_head(channel: _Channel, deadline: float | None) -> tuple[bytes, _Done | None]:
    """Everything written up to the blank line ending the head (or the handler's end)."""
    received = b""
    while b"\r\n\r\n" not in received:
        item = await channel.get(deadline)
        if isinstance(item, _Done):
            return received, item
        received += item
    return received, None


def _no_head(label: str, received: bytes, done: _Done | None, run_id: str) -> Response:
    if done is not None and done.error is not None:
        logger.error("%s raised", label, exc_info=done.error)
        error = done.error
        return error_response(500, f"{type(error).__name__}: {error}", run_id=run_id)
    if received.strip():
        return error_response(
            500, f"{label} wrote an incomplete response head: call self.end_headers()"
        )
    return error_response(500, f"{label} wrote no response")


async def run_cloud_function(
    handler: Any,
    label: str,
    request: Request,
    body: bytes,
    context: FunctionContext,
    limits: FunctionLimits,
) -> Response:
    """Run ``handler`` (the module's ``handler`` class) for ``request``.

    The caller adds the identity headers (conversation and run ids).
    """
    if not (isinstance(handler, type) and issubclass(handler, BaseHTTPRequestHandler)):
        return error_response(
            500, f"{label}: `handler` must be a class derived from BaseHTTPRequestHandler"
        )
    if getattr(handler, f"do_{request.method}", None) is None:
        response = error_response(405, f"{request.method} is not supported here")
        response.headers["allow"] = ", ".join(_methods(handler))
        return response
    loop = asyncio.get_running_loop()
    channel = _Channel(loop)
    instance = _build(handler, request, body, _Writer(channel), context)
    deadline = None if limits.wall_clock_s is None else loop.time() + limits.wall_clock_s
    _start(instance, request.method, channel, label)
    try:
        received, done = await _read_head(channel, deadline)
        if b"\r\n\r\n" not in received:
            channel.close()
            return _no_head(label, received, done, context.run_id)
        head, _, rest = received.partition(b"\r\n\r\n")
        try:
            status, headers = _parse_head(head)
        except ValueError as exc:
            channel.close()
            return error_response(500, f"{label}: {exc}")
        headers = [(k, v) for k, v in headers if k not in _DROPPED]
        if done is None and not any(name == b"content-length" for name, _ in headers):
            if label not in _warned_streaming:
                _warned_streaming.add(label)
                logger.warning("%s streams its response (no Content-Length); the platform "
                               "does not stream cloud functions: there the client gets the "
                               "whole body when the function returns", label)
            return _StreamedBody(status, headers, rest, channel, label, deadline)
        chunks = [rest]
        while done is None:
            item = await channel.get(deadline)
            if isinstance(item, _Done):
                done = item
            else:
                chunks.append(item)
    except TimeoutError:
        channel.close()
        logger.error("%s: still running at the cloud-function wall-clock limit; answered 504 "
                     "(its thread keeps running until it returns)", label)
        return timed_out(label, limits)
    channel.close()
    return _buffered(label, request.method, status, headers, b"".join(chunks), done)


def _buffered(
    label: str,
    method: str,
    status: int,
    headers: list[tuple[bytes, bytes]],
    data: bytes,
    done: _Done,
) -> Response:
    if done.error is not None:
        logger.error("%s raised after sending its headers", label, exc_info=done.error)
    declared = next((v for k, v in headers if k == b"content-length"), None)
    if declared is not None and declared != str(len(data)).encode() and method != "HEAD":
        logger.warning("%s declared Content-Length %s but wrote %d bytes; sending what it wrote",
                       label, declared.decode("latin-1"), len(data))
        headers = [(k, v) for k, v in headers if k != b"content-length"]
        declared = None
    has_body = status >= 200 and status not in (204, 304) and method != "HEAD"
    if declared is None and has_body:
        headers.append((b"content-length", str(len(data)).encode()))
    response = Response(status_code=status)
    response.raw_headers = headers
    response.body = data if method != "HEAD" else b""
    return response
