"""The front: the one public port, forwarding each request to a worker process.

It never imports project code, so nothing a handler does can take it down.
Per request it gives the conversation an id if it has none, picks a worker
(:meth:`.supervisor.WorkerPool.acquire`), forwards the request, and relays
the answer: a body with a ``Content-Length`` in one piece, anything else
(server-sent events) chunk by chunk as the worker produces it. It adds
``makers-instance`` and ``makers-instance-pid`` to every response. If the
client disconnects, the connection to the worker is closed, which sets the
run's ``signal`` there. A second listener on 127.0.0.1 takes the workers'
control calls (abort fan-out), guarded by a per-session token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from .http_client import Connection, Headers, ResponseHead, UpstreamError
from .runs import new_conversation_id, new_run_id
from .sse import sse
from .supervisor import NoInstanceError, Worker, WorkerPool
from .worker_app import CONVERSATION_HEADER, INTERNAL_PREFIX, RUN_HEADER, TOKEN_HEADER

logger = logging.getLogger("makers_store.serve")

MAX_BODY_BYTES = 100 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
#: Longest wait for a worker's answer to begin, and longest pause inside a stream.
RESPONSE_TIMEOUT_S = 600.0
_HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te",
    b"trailer", b"upgrade", b"expect", b"content-length", b"host",
}
_FROM_WORKER_DROPPED = {
    b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"date", b"server",
}


@dataclass
class _Outcome:
    """What the access log line says about one proxied request."""

    status: int = 0
    run: bytes = b""
    note: str = ""


class _TooLarge(Exception):
    pass


class _ClientGone(Exception):
    pass


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _header(headers: Headers, name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def _conversation(scope: Scope) -> bytes:
    """The request's conversation id, or a new one."""
    given = _header(scope["headers"], CONVERSATION_HEADER.encode())
    return given or new_conversation_id().encode()


async def _send_json(
    send: Send, status: int, payload: Any, headers: Headers | None = None
) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


class FrontApp:
    def __init__(self, pool: WorkerPool, token: str, control_port: int) -> None:
        self.pool = pool
        self.token = token
        self.control_port = control_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets are not part of the platform's agent runtimes
        server = scope.get("server")
        if server is not None and server[1] == self.control_port:
            await self._control(scope, receive, send)
        elif scope["path"].startswith(INTERNAL_PREFIX):
            identity = [
                (CONVERSATION_HEADER.encode(), _conversation(scope)),
                (RUN_HEADER.encode(), new_run_id().encode()),
            ]
            body = {"error": "not found", "method": scope["method"], "path": scope["path"]}
            await _send_json(send, 404, body, identity)
        else:
            await self._proxy(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- control (workers -> front) -------------------------------------------

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _header(scope["headers"], TOKEN_HEADER.encode()) or b""
        if not hmac.compare_digest(token, self.token.encode()):
            await _send_json(send, 404, {"error": "not found"})
            return
        if scope["path"] != INTERNAL_PREFIX + "abort" or scope["method"] != "POST":
            await _send_json(send, 404, {"error": "not found"})
            return
        try:
            data = json.loads(await _read_body(receive))
            count = await self.pool.broadcast_abort(data["conversation_id"], data.get("except_run"))
        except (_ClientGone, _TooLarge, ValueError, KeyError, TypeError) as exc:
            await _send_json(send, 400, {"error": f"bad abort request: {exc!r}"})
            return
        await _send_json(send, 200, {"aborted": count})

    # --- proxy (clients -> workers) -------------------------------------------

    async def _proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        method: str = scope["method"]
        headers: Headers = list(scope["headers"])
        cid = _conversation(scope)
        fallback = [
            (CONVERSATION_HEADER.encode(), cid),
            (RUN_HEADER.encode(), new_run_id().encode()),
        ]
        try:
            body = await _read_body(receive)
        except _ClientGone:
            return
        except _TooLarge:
            await _send_json(
                send, 413, {"error": f"request body over {MAX_BODY_BYTES} bytes"}, fallback
            )
            return
        forwarded: Headers = [
            (k, v)
            for k, v in headers
            if k not in _HOP_BY_HOP
            and not k.startswith(b"makers-internal")
            and k != CONVERSATION_HEADER.encode()
        ]
        host = _header(headers, b"host")
        forwarded += [(b"host", host or b"localhost"), (CONVERSATION_HEADER.encode(), cid)]
        client = scope.get("client")
        if client:
            forwarded.append((b"x-forwarded-for", str(client[0]).encode()))
        try:
            worker, connection = await self._open(cid.decode("utf-8", "replace"))
        except (NoInstanceError, UpstreamError) as exc:
            status = 503 if isinstance(exc, NoInstanceError) else 502
            logger.warning("%s %s -> %d: %s", method, scope["path"], status, exc)
            await _send_json(send, status, {"error": str(exc)}, fallback)
            return
        outcome = _Outcome()
        try:
            await self._exchange(
                worker, connection, scope, receive, send, forwarded, body, fallback, outcome
            )
        finally:
            await connection.close()
            self.pool.release(worker)
            logger.info(
                "%s %s -> %s %.0fms instance=%d conversation=%s run=%s%s",
                method,
                scope["path"],
                outcome.status or "-",
                (time.perf_counter() - started) * 1000,
                worker.serial,
                _shorten(cid.decode("utf-8", "replace")),
                outcome.run.decode("latin-1") or "-",
                outcome.note,
            )

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
        forwarded: Headers,
        body: bytes,
        fallback: Headers,
        outcome: _Outcome,
    ) -> None:
        finished = asyncio.Event()
        gone = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    if not finished.is_set():
                        gone.set()
                    return

        forward = asyncio.create_task(
            self._forward(
                worker, connection, scope, send, forwarded, body, fallback, outcome, finished
            )
        )
        watcher = asyncio.create_task(watch())
        try:
            await asyncio.wait({forward, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if gone.is_set() and not forward.done():
                outcome.note = " (client disconnected)"
                forward.cancel()
            try:
                await forward
            except asyncio.CancelledError:
                if not gone.is_set():
                    raise
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _forward(
        self,
        worker: Worker,
        connection: Connection,
        scope: Scope,
        send: Send,
        forwarded: Headers,
        body: bytes,
        fallback: Headers,
        outcome: _Outcome,
        finished: asyncio.Event,
    ) -> None:
        method: str = scope["method"]
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        instance = [
            (b"makers-instance", str(worker.serial).encode()),
            (b"makers-instance-pid", str(worker.pid).encode()),
        ]
        try:
            await connection.send_request(method, target, forwarded, body)
            head = await asyncio.wait_for(connection.read_head(), RESPONSE_TIMEOUT_S)
        except (UpstreamError, TimeoutError) as exc:
            await self._failed(worker, send, fallback + instance, outcome, exc)
            return
        outcome.status = head.status
        outcome.run = head.get(RUN_HEADER.encode()) or b""
        headers = [(k, v) for k, v in head.headers if k not in _FROM_WORKER_DROPPED]
        headers += instance
        if head.get(b"content-length") is None and head.status not in (204, 304):
            await self._relay_stream(worker, connection, head, method, send, headers, finished)
            return
        try:
            data = await asyncio.wait_for(
                _collect(connection.iter_body(head, method=method)), RESPONSE_TIMEOUT_S
            )
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
        await _send_json(send, 502, {"error": message, "instance": worker.serial}, headers)

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
        method: str,
        send: Send,
        headers: Headers,
        finished: asyncio.Event,
    ) -> None:
        await send({"type": "http.response.start", "status": head.status, "headers": headers})
        pieces = connection.iter_body(head, method=method)
        is_sse = (head.get(b"content-type") or b"").startswith(b"text/event-stream")
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
