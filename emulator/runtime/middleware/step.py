"""The middleware's step at the front: first for every HTTP request on serve's port.

:func:`run_middleware` tests the request's path against the matcher list
(:mod:`.matching`); a covered request's head goes to the host, whose answer
is one of:

- the middleware's own Response (``redirect()``, ``new Response(...)``):
  relayed to the client as the host streams it; the request goes no further;
- ``next()``: the request goes on with the headers it set, and the headers
  the answer carries are added to whatever answers it (an agent, a cloud
  function, the Studio, the frontend);
- ``rewrite(url)``: the request goes on as a request for ``url``'s path and
  query (the client sees nothing of it); a URL on another origin is not
  served locally (502, logged);
- nothing (no Response, or a middleware that threw): the request goes on
  unchanged.

What follows gets the request's scope and a ``send`` to answer with; the
ASGI app that called this needs nothing else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from starlette.types import Message, Receive, Scope, Send

from makers_store.text import printable_line

from ..errors import UpstreamError
from ..http_client import Connection, Headers, ResponseHead
from ..platform_choices import MIDDLEWARE_REWRITE_ELSEWHERE_STATUS
from ..wire import MIDDLEWARE_DECISION_HEADER
from .host import MiddlewareHost
from .matching import Coverage

logger = logging.getLogger("makers_store.serve")

#: Headers of the host's answer that frame it, not the middleware's Response.
_FRAMING = {
    b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"date",
    MIDDLEWARE_DECISION_HEADER,
}


class RewriteElsewhere(UpstreamError):
    """``rewrite(url)`` to another origin: not served locally."""

    status = MIDDLEWARE_REWRITE_ELSEWHERE_STATUS


def _head(scope: Scope, check: bool) -> dict[str, Any]:
    """What the host is sent: the request line and headers, the client's address."""
    target = scope.get("raw_path") or scope["path"].encode("utf-8")
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
    host = next((value for name, value in headers if name == "host"), "")
    client = scope.get("client")
    return {
        "method": scope["method"],
        "target": target.decode("latin-1"),
        "host": host,
        "headers": headers,
        "clientIp": str(client[0]) if client else "",
        "check": check,
    }


def _patched(headers: Headers, patch: Mapping[str, str | None]) -> Headers:
    """The request's headers with ``patch`` applied (a name set, or removed when None).

    Names and values come from JavaScript ``Headers``, which hold byte strings
    (every character below U+0100): latin-1 gives back the bytes."""
    names = {name.encode("latin-1", "replace") for name in patch}
    result = [(k, v) for k, v in headers if k not in names]
    for name, value in patch.items():
        if value is not None:
            result.append((name.encode("latin-1", "replace"), value.encode("latin-1", "replace")))
    return result


def _rewritten(scope: Scope, path: str) -> Scope:
    pathname, _, query = path.partition("?")
    raw = pathname.encode("utf-8")
    return {**scope, "path": unquote(pathname), "raw_path": raw,
            "query_string": query.encode("utf-8")}


def _adding(send: Send, added: Sequence[tuple[bytes, bytes]]) -> Send:
    """``send`` with ``added`` put on the response (same names replaced, cookies appended)."""
    replaced = {name for name, _ in added if name != b"set-cookie"}

    async def adding(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in replaced]
            message = {**message, "headers": [*kept, *added]}
        await send(message)

    return adding


async def run_middleware(
    host: MiddlewareHost, scope: Scope, receive: Receive, send: Send
) -> tuple[Scope, Send] | None:
    """The request as it goes on and the ``send`` to answer it with; None: answered here.

    Raises UpstreamError when the host cannot be reached (the caller answers 502)."""
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    coverage = host.matchers.covers(raw_path)
    if coverage is Coverage.NO:
        return scope, send
    started = time.perf_counter()
    connection, answer = await host.ask(_head(scope, check=coverage is Coverage.ASK))
    try:
        decision = answer.get(MIDDLEWARE_DECISION_HEADER)
        if decision == b"respond":
            await _relay(connection, answer, scope, receive, send)
            logger.info("%s %s -> %d (answered by the middleware) %.0fms", scope["method"],
                        printable_line(scope["path"]), answer.status,
                        (time.perf_counter() - started) * 1000)
            return None
        body = b"".join([piece async for piece in connection.iter_body()])
    finally:
        await connection.close()
    if decision is None or answer.status != 200:
        raise UpstreamError(f"the middleware host failed ({answer.status}): {body[:200]!r}")
    if decision == b"skip":
        return scope, send
    outcome = json.loads(body)
    patch = outcome["requestHeaders"]
    if patch:
        scope = {**scope, "headers": _patched(scope["headers"], patch)}
    rewrite = outcome["rewrite"]
    if rewrite is not None:
        if not rewrite["sameOrigin"]:
            raise RewriteElsewhere(
                f"the middleware rewrote {scope['path']} to {rewrite['href']}, another origin: "
                "serve does not fetch other sites for a rewrite"
            )
        logger.info("%s %s rewritten by the middleware to %s", scope["method"],
                    printable_line(scope["path"]), printable_line(rewrite["path"]))
        scope = _rewritten(scope, rewrite["path"])
    added = [(name.encode("latin-1"), value.encode("latin-1"))
             for name, value in outcome["responseHeaders"]]
    return scope, (_adding(send, added) if added else send)


async def _relay(
    connection: Connection, answer: ResponseHead, scope: Scope, receive: Receive, send: Send
) -> None:
    """The middleware's Response, piece by piece as the host sends it; a client that
    leaves closes the connection to the host, which cancels the Response's stream."""
    gone = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # the request's body: the middleware answered without it
        gone.set()
        await connection.close()

    headers = [(k, v) for k, v in answer.headers if k not in _FRAMING]
    watcher = asyncio.create_task(watch())
    try:
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        if scope["method"] != "HEAD":
            async for piece in connection.iter_body():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except UpstreamError:
        if not gone.is_set():
            raise
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
