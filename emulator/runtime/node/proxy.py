"""Handing one request of a Node route to this instance's Node worker.

An agent request is a run of the Python worker like any other
(:class:`..worker.agent_run.AgentRunner`: registered for aborts, timed, traced); its
handler is :func:`agent_handler`, which sends the request to the Node worker
and relays the answer. While it runs, its Python ``ctx`` is in
:class:`.handlers.NodeRuns`, where the Node side's ``kv``, ``tools``,
``tracer`` and ``abortActiveRun`` calls find it, and its ``signal`` is
watched: once set (abort, disconnect, timeout) the Node run's AbortSignal is
aborted too. A run cancelled after the grace period closes the connection,
which stops the Node handler's stream.

What ``context.request.body`` is (parsed JSON or the raw Buffer) is decided
on this side by :mod:`..worker.request_body`, the rule Python routes follow (for an
agent when its run starts, for a cloud function here), and sent in the meta
header's ``body`` (``json``, ``empty``, ``raw``), so both languages agree on
every body; the Node worker only carries the decision out. An agent's meta
also carries ``agents.framework``, which shapes its ``context.tools`` as it
shapes Python's ``ctx.tools``.

An answer with a ``text/event-stream`` (or NDJSON) body is relayed chunk by
chunk; any other is collected first. A Node handler that threw answers 500
with ``{"error": "Name: message", "run_id"}`` and is traced as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from ..errors import NodeStreamError, RelayedError, UpstreamError
from ..http_client import Connection, ResponseHead, request_json
from ..platform_choices import NODE_STREAMED_TYPES
from ..project.node_entry import APP_ENTRY_LABEL
from ..project.routes import Route
from ..sse import StreamResponse
from ..wire import (
    ABORT_PATH,
    INTERNAL_HEADER_PREFIX,
    NODE_META_HEADER,
    NODE_OUTCOME_HEADER,
    TOKEN_HEADER,
    node_meta,
)
from ..worker.context import AgentContext
from ..worker.request_body import NodeBodyKind, handler_body, node_body_kind
from ..worker.responses import error_response
from .handlers import NodeRuns
from .worker import NodeWorker

_TOKEN_HEADER = TOKEN_HEADER.encode()
CONNECT_TIMEOUT_S = 10.0
ABORT_TIMEOUT_S = 2.0
_STREAMED = tuple(kind.encode("ascii") for kind in NODE_STREAMED_TYPES)
_DROPPED = {b"content-length", b"transfer-encoding", b"connection", b"keep-alive", b"date",
            NODE_OUTCOME_HEADER}


def _meta(route: Route, kind: str, run_id: str, conversation_id: str, **extra: Any) -> bytes:
    return node_meta(str(route.file), route.relative, kind, run_id, conversation_id, **extra)


def _headers(node: NodeWorker, pairs: list[tuple[bytes, bytes]], meta: bytes) -> list[
    tuple[bytes, bytes]
]:
    kept = [(k, v) for k, v in pairs if not k.startswith(INTERNAL_HEADER_PREFIX) and k not in (
        b"content-length", b"transfer-encoding", b"connection")]
    return [*kept, (NODE_META_HEADER, meta), (_TOKEN_HEADER, node.token.encode())]


def _relayed_headers(head: ResponseHead) -> dict[str, str]:
    return {
        k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers if k not in _DROPPED
    }


def _is_stream(head: ResponseHead) -> bool:
    kind = (head.get(b"content-type") or b"").lower()
    return head.get(b"content-length") is None and kind.startswith(_STREAMED)


def _node_failed(exc: UpstreamError, run_id: str) -> RelayedError:
    """A 502, as the front answers for an instance that dies: this instance stops next."""
    message = f"the Node worker stopped while handling this request: {exc}"
    return RelayedError(error_response(502, message, run_id=run_id))


async def _exchange(
    node: NodeWorker, method: str, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes,
    run_id: str,
) -> tuple[Connection, ResponseHead]:
    try:
        connection = await Connection.open("127.0.0.1", node.port, within_s=CONNECT_TIMEOUT_S)
    except UpstreamError as exc:
        raise _node_failed(exc, run_id) from None
    try:
        await connection.send_request(method, target, headers, body)
        return connection, await connection.read_head()
    except UpstreamError as exc:
        await connection.close()
        raise _node_failed(exc, run_id) from None
    except BaseException:
        await connection.close()
        raise


async def _collect(connection: Connection, head: ResponseHead, run_id: str) -> Response:
    try:
        data = b"".join([piece async for piece in connection.iter_body()])
    except UpstreamError as exc:
        raise _node_failed(exc, run_id) from None
    finally:
        await connection.close()
    response = Response(data, status_code=head.status, headers=_relayed_headers(head))
    if head.get(NODE_OUTCOME_HEADER) == b"error":
        raise RelayedError(response)
    return response


async def _forward_abort(node: NodeWorker, ctx: AgentContext) -> None:
    """Abort the Node run once the Python run's signal is set."""
    await ctx.request.signal.wait()
    with contextlib.suppress(UpstreamError):
        await request_json(
            "127.0.0.1", node.port, "POST", ABORT_PATH,
            headers=[(_TOKEN_HEADER, node.token.encode())],
            payload={"runId": ctx.run_id}, within_s=ABORT_TIMEOUT_S,
        )


def agent_handler(
    node: NodeWorker, runs: NodeRuns, route: Route
) -> Callable[[AgentContext], Awaitable[Any]]:
    """The ``handler(ctx)`` of a Node agent route: the run, done by the Node worker."""

    async def handler(ctx: AgentContext) -> Any:
        runs.add(ctx)
        watcher = asyncio.create_task(_forward_abort(node, ctx))
        streaming = False
        try:
            body = node_body_kind(ctx.request.body, ctx.request.raw_body)
            meta = _meta(route, "agent", ctx.run_id, ctx.conversation_id, query=ctx.request.query,
                         url=ctx.request.url, path=ctx.request.path, params={}, body=body,
                         framework=ctx.tools_setup.framework)
            url = urlsplit(ctx.request.url)
            target = (url.path + (f"?{url.query}" if url.query else "")).encode()
            pairs = [(k.encode("latin-1"), v.encode("latin-1"))
                     for k, v in ctx.request.headers.items()]
            headers = _headers(node, pairs, meta)
            connection, head = await _exchange(
                node, ctx.request.method, target, headers, ctx.request.raw_body, ctx.run_id
            )
            if not _is_stream(head):
                return await _collect(connection, head, ctx.run_id)
            streaming = True
            return StreamResponse(
                _relay(connection, watcher, runs, ctx), status=head.status,
                headers=_relayed_headers(head),
            )
        finally:
            if not streaming:
                watcher.cancel()
                runs.remove(ctx)

    return handler


def _stream_error(text: str) -> NodeStreamError:
    """The exception the stream ends with: named as the JS error, so its ``event: error``
    frame says ``TypeError: ...`` as a Python stream's does."""
    name, _, message = text.partition(": ")
    named = type(name if name.isidentifier() else "Error", (NodeStreamError,), {})
    error: NodeStreamError = named(message)
    return error


async def _relay(
    connection: Connection, watcher: asyncio.Task[None], runs: NodeRuns, ctx: AgentContext
) -> AsyncIterator[bytes]:
    try:
        async for piece in connection.iter_body():
            yield piece
        failure = runs.stream_failure(ctx.run_id)
        if failure is not None:
            raise _stream_error(failure)
    finally:
        watcher.cancel()
        runs.remove(ctx)
        await connection.close()


def _function_body_kind(route: Route, request: Request, raw: bytes) -> NodeBodyKind:
    """How ``context.request.body`` is made from ``raw`` (an app reads its own body)."""
    if route.entry_label == APP_ENTRY_LABEL:
        return "raw"
    content_type = request.headers.get("content-type")
    body = handler_body(route, request.method, raw, content_type, lenient=True)
    return node_body_kind(body, raw)


async def function_response(
    node: NodeWorker, route: Route, request: Request, raw: bytes, conversation_id: str,
    run_id: str, params: dict[str, str],
) -> Response:
    """A Node cloud function's answer (collected: cloud functions do not stream)."""
    # an Express/Koa app sees the path below its [[catch-all]] file, as the platform mounts it
    below = next((params[s.value] for s in route.segments if s.kind == "catch_all"), "")
    query = request.url.query
    meta = _meta(route, "function", run_id, conversation_id, params=params, url=str(request.url),
                 path=request.url.path, appUrl="/" + below + (f"?{query}" if query else ""),
                 body=_function_body_kind(route, request, raw))
    target = request.scope.get("raw_path") or request.url.path.encode()
    if request.scope.get("query_string"):
        target += b"?" + request.scope["query_string"]
    headers = _headers(node, list(request.scope["headers"]), meta)
    try:
        connection, head = await _exchange(node, request.method, target, headers, raw, run_id)
        return await _collect(connection, head, run_id)
    except RelayedError as exc:
        return exc.response
