"""The front: the one public port, forwarding each request to a worker process.

It never imports project code, so nothing a handler does can take it down.
Per request it picks the run id (passed to the worker in an internal header,
so it is known at dispatch), picks a worker
(:meth:`.supervisor.WorkerPool.acquire`), streams the request to it
(:mod:`.body`: capped, never held whole), and relays the answer: a body
with a ``Content-Length`` in one piece, anything else (server-sent events)
chunk by chunk as the worker produces it. It adds ``makers-instance`` and
``makers-instance-pid`` to every response. If the client disconnects, the
connection to the worker is closed, which sets the run's ``signal`` there.
A second listener on 127.0.0.1 takes the workers' control calls (abort
fan-out, :mod:`.control`). Connection-level limits (header timeout,
connection cap) are in :mod:`.limits`. What no agent or cloud function
takes goes to the project's frontend (:mod:`.frontend`), when it has one.
A project's middleware, when it has one, sees each request first
(:mod:`..middleware.step`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from makers_store.text import printable_line

from ...studio import SERVE_PREFIX as STUDIO_PREFIX
from ..errors import BodyRefused, ClientGone, NoInstanceError, UpstreamError
from ..http_client import Connection, Headers, ResponseHead
from ..middleware.host import MiddlewareHost
from ..middleware.step import RewriteElsewhere, run_middleware
from ..sse import SSE_CONNECTION_HEADER, sse
from ..wire import CONVERSATION_HEADER, INTERNAL_PREFIX, RUN_HEADER, new_run_id
from .body import body_pieces, declared_length, unless_client_leaves
from .control import InflightRuns, serve_control
from .frontend import FrontendApp
from .headers import (
    CLOSE,
    FROM_WORKER_DROPPED,
    conversation_of,
    forwarded_headers,
    header,
    identity_headers,
    instance_headers,
    send_json,
)
from .limits import FrontLimits
from .supervisor import Worker, WorkerPool

logger = logging.getLogger("makers_store.serve")


CONNECT_TIMEOUT_S = 10.0
#: Longest wait for a worker's answer to begin, and longest pause inside a stream.
RESPONSE_TIMEOUT_S = 600.0
#: A worker's answer up to this size is collected before it is relayed, so a
#: worker that dies mid-answer gives a clean 502; a larger one is relayed piece
#: by piece (bounding the front's memory), and such a failure cuts it short.
WHOLE_RESPONSE_BYTES = 1024 * 1024
@dataclass
class _Outcome:
    """What the access log line says about one proxied request."""

    status: int = 0
    run: bytes = b""
    note: str = ""


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown(text: str) -> str:
    """A client's path or header in a log line: one line, control characters
    escaped (the path arrives percent-decoded: ``%1b`` is an ESC, ``%0a`` a
    newline that would forge a log line of its own)."""
    return printable_line(text)


def _is_studio_path(path: str) -> bool:
    return path == STUDIO_PREFIX or path.startswith(STUDIO_PREFIX + "/")


def _piece_by_piece(head: ResponseHead, method: str) -> bool:
    """Whether the worker's answer is relayed as it arrives rather than collected first."""
    if head.status in (204, 304):
        return False
    declared = head.get(b"content-length")
    if declared is None:
        return True  # a stream (server-sent events, chunked)
    return method != "HEAD" and declared.isdigit() and int(declared) > WHOLE_RESPONSE_BYTES


class FrontApp:
    def __init__(
        self,
        pool: WorkerPool,
        token: str,
        control_port: int,
        limits: FrontLimits | None = None,
    ) -> None:
        self.pool = pool
        self.token = token
        self.control_port = control_port
        self.limits = limits or FrontLimits()
        self.inflight = InflightRuns()
        #: the Studio's app, answering under /_studio/ (None: not served)
        self.studio: ASGIApp | None = None
        #: the project's frontend: what no agent or cloud function takes (None: it has none)
        self.frontend: FrontendApp | None = None
        #: the project's middleware, run first (None: the project has none)
        self.middleware: MiddlewareHost | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets are not part of the platform's agent runtimes
        server = scope.get("server")
        if server is not None and server[1] == self.control_port:
            await serve_control(
                scope, receive, send, token=self.token, inflight=self.inflight,
                pool=self.pool, limits=self.limits,
            )
            return
        if self.middleware is not None:  # first: in front of everything the port serves
            passed = await self._middleware(self.middleware, scope, receive, send)
            if passed is None:
                return  # answered by the middleware
            scope, send = passed
        if self.studio is not None and _is_studio_path(scope["path"]):
            await self.studio(scope, receive, send)  # before routing: no project route shadows it
        elif scope["path"].startswith(INTERNAL_PREFIX):
            identity = identity_headers(conversation_of(scope), new_run_id())
            body = {"error": "not found", "method": scope["method"], "path": scope["path"]}
            await send_json(send, 404, body, identity)
        elif self.frontend is not None and self.frontend.takes(scope):
            await self.frontend(scope, receive, send)
        else:
            await self._proxy(scope, receive, send)

    async def _middleware(
        self, host: MiddlewareHost, scope: Scope, receive: Receive, send: Send
    ) -> tuple[Scope, Send] | None:
        """The project's middleware step (:mod:`..middleware.step`); None: it answered."""
        try:
            return await run_middleware(host, scope, receive, send)
        except UpstreamError as exc:  # refused, never let through: it may be an auth guard
            status = exc.status if isinstance(exc, RewriteElsewhere) else 502
            logger.warning("%s %s -> %d: %s", scope["method"], _shown(scope["path"]), status, exc)
            await send_json(send, status, {"error": str(exc)}, identity_headers(b"", new_run_id()))
            return None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- proxy (clients -> workers) -------------------------------------------

    async def _proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        cid = conversation_of(scope)
        run_id = new_run_id()
        fallback = identity_headers(cid, run_id)
        try:
            conversation = cid.decode("utf-8")
        except UnicodeDecodeError:
            fallback = identity_headers(b"", run_id)
            message = f"the {CONVERSATION_HEADER} header is not UTF-8"
            await send_json(send, 400, {"error": message}, fallback)
            return
        try:  # refused before reading any of it, so a huge upload costs nothing
            length = declared_length(scope["headers"], self.limits)
        except BodyRefused as exc:
            await send_json(send, exc.status, {"error": exc.message}, [*fallback, CLOSE])
            return
        try:
            worker, connection = await self._open(conversation)
        except (NoInstanceError, UpstreamError) as exc:
            status = 503 if isinstance(exc, NoInstanceError) else 502
            logger.warning("%s %s -> %d: %s", scope["method"], _shown(scope["path"]), status, exc)
            await send_json(send, status, {"error": str(exc)}, fallback)
            return
        outcome = _Outcome()
        self.inflight.add(conversation, run_id, worker)
        try:
            request = forwarded_headers(scope, cid, run_id)
            if await self._send_request(
                worker, connection, scope, receive, send, request, length, fallback, outcome
            ):
                await self._exchange(worker, connection, scope, receive, send, fallback, outcome)
        finally:
            self.inflight.remove(conversation, run_id)
            await connection.close()
            self.pool.release(worker)
            logger.info(
                "%s %s -> %s %.0fms instance=%d conversation=%s run=%s%s",
                scope["method"],
                _shown(scope["path"]),
                outcome.status or "-",
                (time.perf_counter() - started) * 1000,
                worker.serial,
                _shorten(_shown(conversation)) or "-",
                outcome.run.decode("latin-1") or "-",
                outcome.note,
            )

    async def _send_request(
        self,
        worker: Worker,
        connection: Connection,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: Headers,
        length: int | None,
        fallback: Headers,
        outcome: _Outcome,
    ) -> bool:
        """Stream the request to the worker; False when it failed (and was answered)."""
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        chunked = length is None and header(scope["headers"], b"transfer-encoding") is not None
        try:
            await connection.send_streamed(
                scope["method"], target, headers, body_pieces(receive, self.limits),
                None if chunked else (length or 0),
            )
        except ClientGone:
            outcome.note = " (client disconnected while sending the body)"
            return False
        except BodyRefused as exc:
            outcome.status, outcome.note = exc.status, f" ({exc.message})"
            await send_json(send, exc.status, {"error": exc.message}, [*fallback, CLOSE])
            return False
        except UpstreamError as exc:
            await self._failed(worker, send, fallback + instance_headers(worker), outcome, exc)
            return False
        return True

    async def _open(self, conversation_id: str) -> tuple[Worker, Connection]:
        """A worker for the request and a connection to it.

        Nothing has been sent yet when connecting fails, so another worker may
        take the request: a worker that has just died (its exit not yet noticed)
        costs a short wait, not an error.
        """
        failure: UpstreamError | None = None
        for _ in range(3):
            worker = await self.pool.acquire(conversation_id)
            try:
                connection = await Connection.open(
                    "127.0.0.1", worker.port, within_s=CONNECT_TIMEOUT_S
                )
            except UpstreamError as exc:
                failure = exc
                self.pool.release(worker, counted=False)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(worker.exited.wait(), 2.0)
                continue
            return worker, connection
        raise UpstreamError(f"no instance accepted the request: {failure}")

    async def _exchange(
        self,
        worker: Worker,
        connection: Connection,
        scope: Scope,
        receive: Receive,
        send: Send,
        fallback: Headers,
        outcome: _Outcome,
    ) -> None:
        """Relay the worker's answer, closing its connection if the client leaves."""
        finished = asyncio.Event()
        relay = self._forward(worker, connection, scope, send, fallback, outcome, finished)
        if await unless_client_leaves(receive, relay, finished):
            outcome.note = " (client disconnected)"

    async def _forward(
        self,
        worker: Worker,
        connection: Connection,
        scope: Scope,
        send: Send,
        fallback: Headers,
        outcome: _Outcome,
        finished: asyncio.Event,
    ) -> None:
        method: str = scope["method"]
        instance = instance_headers(worker)
        try:
            head = await asyncio.wait_for(connection.read_head(), RESPONSE_TIMEOUT_S)
        except (UpstreamError, TimeoutError) as exc:
            await self._failed(worker, send, fallback + instance, outcome, exc)
            return
        outcome.status = head.status
        outcome.run = head.get(RUN_HEADER.encode()) or b""
        headers = [(k, v) for k, v in head.headers if k not in FROM_WORKER_DROPPED]
        headers += instance
        if _piece_by_piece(head, method):
            declared = head.get(b"content-length")
            if declared is not None:  # a large answer: relayed as the worker announced it
                headers.append((b"content-length", declared))
            await self._relay_stream(
                worker, connection, head, send, headers, finished,
                http_version=scope.get("http_version", "1.1"),
            )
            return
        try:
            data = await asyncio.wait_for(_collect(connection.iter_body()), RESPONSE_TIMEOUT_S)
        except (UpstreamError, TimeoutError) as exc:
            await self._failed(worker, send, fallback + instance, outcome, exc)
            return
        await self._send_whole(head, method, data, send, headers, finished)

    async def _failed(
        self,
        worker: Worker,
        send: Send,
        headers: Headers,
        outcome: _Outcome,
        exc: BaseException,
    ) -> None:
        await asyncio.sleep(0.05)  # let the supervisor notice an exit first
        state = "exited" if worker.exited.is_set() else "failed"
        message = f"instance {worker.serial} {state} while handling this request"
        outcome.status = 502
        outcome.note = f" ({message}: {exc})"
        await send_json(send, 502, {"error": message, "instance": worker.serial}, headers)

    async def _send_whole(
        self,
        head: ResponseHead,
        method: str,
        data: bytes,
        send: Send,
        headers: Headers,
        finished: asyncio.Event,
    ) -> None:
        length = head.get(b"content-length") if method == "HEAD" else str(len(data)).encode()
        if length is not None and head.status not in (204, 304):
            headers = [*headers, (b"content-length", length)]
        await send({"type": "http.response.start", "status": head.status, "headers": headers})
        finished.set()
        await send({"type": "http.response.body", "body": data, "more_body": False})

    async def _relay_stream(
        self,
        worker: Worker,
        connection: Connection,
        head: ResponseHead,
        send: Send,
        headers: Headers,
        finished: asyncio.Event,
        *,
        http_version: str,
    ) -> None:
        is_sse = (head.get(b"content-type") or b"").startswith(b"text/event-stream")
        if is_sse and http_version == "1.1":
            headers = [*headers, SSE_CONNECTION_HEADER]
        await send({"type": "http.response.start", "status": head.status, "headers": headers})
        pieces = connection.iter_body()
        while True:
            try:
                piece = await asyncio.wait_for(anext(pieces), RESPONSE_TIMEOUT_S)
            except StopAsyncIteration:
                break
            except (UpstreamError, TimeoutError) as exc:
                message = f"instance {worker.serial} stopped in the middle of the response: {exc}"
                logger.warning(message)
                if not is_sse:
                    raise UpstreamError(message) from exc
                frame = sse({"error": message, "instance": worker.serial}, event="error")
                await send({"type": "http.response.body", "body": frame, "more_body": True})
                break
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        finished.set()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _collect(pieces: AsyncIterator[bytes]) -> bytes:
    return b"".join([piece async for piece in pieces])
