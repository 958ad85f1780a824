"""The store RPC server: Node agents' ``context.store`` calls the Python store.

Node workers have no store of their own: ``emulator/runtime/node/store.mjs``
sends each call over a Unix-domain socket to this server, which runs it on
the one Python :class:`~makers_store.ContextStore`, so Python agents, Node
agents and the CLI see the same data, errors and limits on every backend.

Protocol: newline-delimited UTF-8 JSON. A request is
``{"id": n, "method": "appendMessage", "params": {...}}``; the answer is
``{"id": n, "result": ...}`` or ``{"id": n, "error": {"name", "message"}}``
with the Python exception's class name and message. Requests on one
connection may be pipelined: each runs as its own task and answers carry ids.

Two reserved params travel with any method (see :mod:`.values`):
``$bind`` (the conversation and run the Node ``context.store`` is bound to)
and ``$nonjson`` (where the client found values JSON cannot carry, so that
Python's own validation rejects them with Python's own message).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from typing import Any

from makers_store import ContextStore
from makers_store.errors import MemoryValidationError, StoreError

from . import adapters, methods, values
from .values import Handler

#: the longest request line read (a 50 MB content, JSON-escaped, plus room)
MAX_LINE_BYTES = 256 * 1024 * 1024
_log = logging.getLogger("makers_store.store_rpc")


class StoreRpcServer:
    """A listening store RPC socket; :meth:`close` stops it and its connections."""

    def __init__(self, handlers: Mapping[str, Handler], path: str) -> None:
        self._handlers = dict(handlers)
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket file left by a process that died
        self._server = await asyncio.start_unix_server(
            self._serve_connection, path=self.path, limit=MAX_LINE_BYTES
        )

    async def close(self) -> None:
        """Stop listening, end open connections, remove the socket file."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None  # a stream callback always runs in a task
        self._connections.add(task)
        lock = asyncio.Lock()
        calls: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    _log.warning(
                        "store RPC request over %d bytes; connection closed", MAX_LINE_BYTES
                    )
                    return
                if not line:
                    return
                call = asyncio.create_task(self._answer(line, writer, lock))
                calls.add(call)
                call.add_done_callback(calls.discard)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            for call in list(calls):
                call.cancel()
            writer.close()
            self._connections.discard(task)

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter, lock: asyncio.Lock) -> None:
        request_id: Any = None
        try:
            request = values.decode_request(line)
            request_id = request["id"]
            reply: dict[str, Any] = {"id": request_id, "result": await self._call(request)}
        except Exception as exc:  # every failure goes back to the caller, named
            if not isinstance(exc, StoreError):
                _log.exception("store RPC call failed")
            reply = {"id": request_id, "error": {"name": type(exc).__name__, "message": str(exc)}}
        data = values.encode_reply(reply)
        async with lock:
            try:
                writer.write(data)
                await writer.drain()
            except ConnectionError:
                pass  # the worker went away; nobody waits for this answer

    async def _call(self, request: dict[str, Any]) -> Any:
        method = request["method"]
        handler = self._handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            raise MemoryValidationError(f"unknown store method {method!r}")
        return await handler(request["params"])


def handlers_for(store: ContextStore) -> dict[str, Handler]:
    """Every store method by its Node name (the generic API, ``state`` and the adapters)."""
    table = methods.handlers(store)
    table.update(adapters.handlers(store))
    return table


async def start_store_rpc(
    store: ContextStore, path: str, *, extra: Mapping[str, Handler] | None = None
) -> StoreRpcServer:
    """Serve ``store`` at the Unix socket ``path``; ``extra`` adds (or replaces)
    handlers by method name."""
    table = handlers_for(store)
    table.update(extra or {})
    server = StoreRpcServer(table, path)
    await server.start()
    return server
