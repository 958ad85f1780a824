"""The store RPC server: Node agents' ``context.store`` calls the Python store.

Node workers have no store of their own: ``emulator/runtime/node/store.mjs``
sends each call over a Unix-domain socket to this server, which runs it on
the one Python :class:`~makers_store.ContextStore`, so Python agents, Node
agents and the CLI see the same data, errors and limits on every backend.

Protocol: newline-delimited UTF-8 JSON. A request is
``{"id": n, "method": "appendMessage", "params": {...}}``; the answer is
``{"id": n, "result": ...}`` or ``{"id": n, "error": {"name", "message"}}``
with the Python exception's class name and message. Requests on one
connection may be pipelined (several lines in one write): each starts in the
order it arrived, runs concurrently with the others, and answers carry ids,
so answers may come back in any order.

Two reserved params travel with any method (see :mod:`.values`):
``$bind`` (the conversation and run the Node ``context.store`` is bound to)
and ``$nonjson`` (where the client found values JSON cannot carry, so that
Python's own validation rejects them with Python's own message).

Why it is a :class:`asyncio.Protocol` and not streams (measured in
``tests/bench/bench_node_profile.py``): a store call on SQLite or memory
takes tens of microseconds, and the streams machinery around it (a
``readline`` per request, a Task, a write lock and ``drain`` per answer) cost
more than the call. Here a chunk from the socket is split into lines where it
arrives, each call starts at once (:mod:`.calls`: on SQLite and memory it
runs to its end right there when it never waits, else it goes on as a task)
and its answer is written straight to the transport. What the streams gave is kept: calls in
flight are independent (one that waits does not hold the others), answers are
whole lines (a transport writes each ``write`` whole, in order), and a client
that stops reading stops being read (``pause_writing`` pauses reading, so the
answers held in memory stay bounded by the calls in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from makers_store import ContextStore
from makers_store.errors import MemoryValidationError, StoreError

from . import adapters, calls, methods, values
from .values import Handler

#: the longest request line read (a 50 MB content, JSON-escaped, plus room)
MAX_LINE_BYTES = 256 * 1024 * 1024
_log = logging.getLogger("makers_store.store_rpc")


class StoreRpcServer:
    """A listening store RPC socket; :meth:`close` stops it and its connections."""

    def __init__(
        self, handlers: Mapping[str, Handler], path: str, *, eager: Iterable[str] = ()
    ) -> None:
        self._handlers = dict(handlers)
        #: methods whose calls start eagerly (:mod:`.calls`)
        self._eager = frozenset(eager)
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket file left by a process that died
        self._server = await asyncio.get_running_loop().create_unix_server(
            lambda: _Connection(self), path=self.path
        )

    async def close(self) -> None:
        """Stop listening, end open connections (cancelling their calls in
        flight), remove the socket file."""
        if self._server is not None:
            self._server.close()
        in_flight = [task for connection in list(self._connections) for task in connection.end()]
        await asyncio.gather(*in_flight, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def call(self, line: bytes) -> tuple[Any, Awaitable[Any], bool]:
        """The request id, the handler's coroutine and whether it starts eagerly,
        of one request line; raises (with the id found, if any) what makes it no call."""
        request = values.decode_request(line)
        method = request["method"]
        handler = self._handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            raise _NoCall(request["id"], MemoryValidationError(f"unknown store method {method!r}"))
        return request["id"], handler(request["params"]), method in self._eager


class _NoCall(Exception):
    def __init__(self, request_id: Any, error: Exception) -> None:
        super().__init__(str(error))
        self.request_id = request_id
        self.error = error


class _Connection(asyncio.Protocol):
    """One Node process's connection: request lines in, answer lines out."""

    def __init__(self, server: StoreRpcServer) -> None:
        self._server = server
        self._transport: asyncio.Transport | None = None
        #: the start of a request line whose end has not arrived yet
        self._partial: list[bytes] = []
        self._partial_bytes = 0
        #: calls that waited, still running (cancelled when the connection ends)
        self._calls: set[asyncio.Future[Any]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server._connections.add(self)

    def data_received(self, data: bytes) -> None:
        start = 0
        end = data.find(b"\n")
        while end >= 0:
            if self._partial:  # joined once, when its end arrives: no copy per chunk
                self._partial.append(data[start:end])
                line = b"".join(self._partial)
                self._partial.clear()
                self._partial_bytes = 0
            else:
                line = data[start:end]
            self._request(line)
            if self._transport is None:
                return  # ended meanwhile: read nothing more
            start = end + 1
            end = data.find(b"\n", start)
        if start < len(data):
            self._partial.append(data[start:] if start else data)
            self._partial_bytes += len(data) - start
            if self._partial_bytes > MAX_LINE_BYTES:
                _log.warning("store RPC request over %d bytes; connection closed", MAX_LINE_BYTES)
                self.end()

    def _request(self, line: bytes) -> None:
        try:
            request_id, coroutine, eager = self._server.call(line)
        except _NoCall as exc:
            self._send(exc.request_id, calls.Done.of_error(exc.error))
            return
        except Exception as exc:  # not a request at all: answered without an id
            self._send(None, calls.Done.of_error(exc))
            return
        task = calls.start(coroutine, lambda done: self._send(request_id, done), eager=eager)
        if task is not None:
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)

    def _send(self, request_id: Any, done: calls.Done) -> None:
        if done.error is None:
            reply: dict[str, Any] = {"id": request_id, "result": done.result}
        else:
            exc = done.error
            if not isinstance(exc, StoreError):
                _log.error("store RPC call failed", exc_info=exc)
            reply = {"id": request_id, "error": {"name": type(exc).__name__, "message": str(exc)}}
        try:
            data = values.encode_reply(reply)
        except Exception as exc:  # a result JSON cannot carry: still an answer
            _log.error("store RPC answer failed", exc_info=exc)
            data = values.encode_reply(
                {"id": request_id, "error": {"name": type(exc).__name__, "message": str(exc)}}
            )
        if self._transport is not None:  # else the worker went away: nobody waits
            self._transport.write(data)

    def pause_writing(self) -> None:
        # the client reads no answers: read no more requests until it does
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None:
            self._transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.end()

    def end(self) -> list[asyncio.Future[Any]]:
        """Close the connection and cancel its calls in flight; returns them."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        self._server._connections.discard(self)
        self._partial.clear()
        in_flight = list(self._calls)
        for task in in_flight:
            task.cancel()
        return in_flight


def handlers_for(store: ContextStore) -> dict[str, Handler]:
    """Every store method by its Node name (the generic API, ``state`` and the adapters)."""
    table = methods.handlers(store)
    table.update(adapters.handlers(store))
    return table


async def start_store_rpc(
    store: ContextStore, path: str, *, extra: Mapping[str, Handler] | None = None
) -> StoreRpcServer:
    """Serve ``store`` at the Unix socket ``path``; ``extra`` adds (or replaces)
    handlers by method name.

    On a backend that runs units inline (:func:`.calls.runs_inline`), the
    generic methods, ``state`` and the LangGraph checkpointer start eagerly:
    their code is the store's, which asks for no current task there. A
    handler of ``extra`` that replaces one of them is taken to wrap it (as the
    profiler's do) and starts as it would."""
    table = handlers_for(store)
    eager: set[str] = set()
    if calls.runs_inline(store):
        eager.update(methods.handlers(store))
        eager.update(name for name in table if name.startswith("langgraph.checkpointer."))
    table.update(extra or {})
    server = StoreRpcServer(table, path, eager=eager)
    await server.start()
    return server
