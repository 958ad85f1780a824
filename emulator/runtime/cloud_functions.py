"""Run a ``cloud-functions/`` handler class as the platform does.

A handler is a ``BaseHTTPRequestHandler`` subclass with ``do_GET``,
``do_POST``, ... It runs in a thread with ``self.rfile`` holding the request
body and ``self.wfile`` connected to the client; ``self.context.agent.store``
is the synchronous store, ``self.context.params`` (also ``self.params``) the
``[id]`` / ``[[catch-all]]`` path parameters. What it writes is parsed back
into a response: with a ``Content-Length`` the body is sent in one piece;
without one, each write is streamed to the client as it happens.
"""

from __future__ import annotations

import asyncio
import email.parser
import io
import logging
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .context import FunctionContext
from .responses import error_response

logger = logging.getLogger("makers_store.serve")
_DROPPED = {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server"}


class _Done:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error


Item = bytes | _Done


class _Writer(io.RawIOBase):
    """``self.wfile``: hands every write to the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Item]) -> None:
        super().__init__()
        self._loop = loop
        self._queue = queue

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if chunk:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, chunk)
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
    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        first: bytes,
        queue: asyncio.Queue[Item],
        label: str,
    ) -> None:
        self.status_code = status
        self.background = None
        self.raw_headers = headers
        self.first = first
        self.queue = queue
        self.label = label

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        if self.first:
            await send({"type": "http.response.body", "body": self.first, "more_body": True})
        while True:
            item = await self.queue.get()
            if isinstance(item, _Done):
                if item.error is not None:
                    logger.error("%s raised after sending its headers", self.label,
                                 exc_info=item.error)
                break
            await send({"type": "http.response.body", "body": item, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def run_cloud_function(
    handler: Any,
    label: str,
    request: Request,
    body: bytes,
    context: FunctionContext,
) -> Response:
    """Run ``handler`` (the module's ``handler`` class) for ``request``.

    The caller adds the identity headers (conversation and run ids).
    """
    if not (isinstance(handler, type) and issubclass(handler, BaseHTTPRequestHandler)):
        return error_response(
            500, f"{label}: `handler` must be a class derived from BaseHTTPRequestHandler"
        )
    method = getattr(handler, f"do_{request.method}", None)
    if method is None:
        response = error_response(405, f"{request.method} is not supported here")
        response.headers["allow"] = ", ".join(_methods(handler))
        return response
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Item] = asyncio.Queue()
    instance = _build(handler, request, body, _Writer(loop, queue), context)

    def call() -> None:
        error: BaseException | None = None
        try:
            getattr(instance, f"do_{request.method}")()
        except BaseException as exc:
            error = exc
        loop.call_soon_threadsafe(queue.put_nowait, _Done(error))

    loop.run_in_executor(None, call)
    received = b""
    done: _Done | None = None
    while b"\r\n\r\n" not in received:
        item = await queue.get()
        if isinstance(item, _Done):
            done = item
            break
        received += item
    if b"\r\n\r\n" not in received:
        if done is not None and done.error is not None:
            logger.error("%s raised", label, exc_info=done.error)
            error = done.error
            return error_response(
                500, f"{type(error).__name__}: {error}", run_id=context.run_id
            )
        if received.strip():
            return error_response(
                500, f"{label} wrote an incomplete response head: call self.end_headers()"
            )
        return error_response(500, f"{label} wrote no response")
    head, _, rest = received.partition(b"\r\n\r\n")
    try:
        status, headers = _parse_head(head)
    except ValueError as exc:
        return error_response(500, f"{label}: {exc}")
    headers = [(k, v) for k, v in headers if k not in _DROPPED]
    if done is None and not any(name == b"content-length" for name, _ in headers):
        return _StreamedBody(status, headers, rest, queue, label)
    chunks = [rest]
    while done is None:
        item = await queue.get()
        if isinstance(item, _Done):
            done = item
        else:
            chunks.append(item)
    if done.error is not None:
        logger.error("%s raised after sending its headers", label, exc_info=done.error)
    data = b"".join(chunks)
    declared = next((v for k, v in headers if k == b"content-length"), None)
    if declared is not None and declared != str(len(data)).encode() and request.method != "HEAD":
        logger.warning("%s declared Content-Length %s but wrote %d bytes; sending what it wrote",
                       label, declared.decode("latin-1"), len(data))
        headers = [(k, v) for k, v in headers if k != b"content-length"]
        declared = None
    has_body = status >= 200 and status not in (204, 304) and request.method != "HEAD"
    if declared is None and has_body:
        headers.append((b"content-length", str(len(data)).encode()))
    response = Response(status_code=status)
    response.raw_headers = headers
    response.body = data if request.method != "HEAD" else b""
    return response
