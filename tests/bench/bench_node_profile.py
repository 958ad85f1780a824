"""Where the time of a Node ``context.store`` call goes: Node, the socket, Python, SQLite.

Run it from the repository root::

    .venv/bin/python tests/bench/bench_node_profile.py [--calls 2000]

The operations of tests/bench/bench_node.py that go through the store RPC run in its
Node driver, ``calls`` of them one after another, on a SQLite store served by
the store RPC server on this process's event loop. Both ends are timed by
wrapping their entry points (no change to the RPC code):

* Node (``bench_node.mjs``, ``profile``): the whole call; the time inside the
  RPC client's ``call`` until the answer arrives (``rpc``; the rest is the
  adapter's own work, such as LangGraph.js's serde and base64); the request's
  ``encodeRequest`` (timed apart on the same arguments) and the ``JSON.parse``
  of the answer.
* Python: ``decode_request`` (``json.loads`` and ``$nonjson``), the handler
  (argument checks, the store's work, ``to_node``), ``encode_reply``
  (``json.dumps``), and the whole answering task (with the socket write).
* SQLite: a second pass under ``cProfile``, summing the time in the
  ``sqlite3`` module's C calls (execute, fetch, commit) per call; the
  handler's time less that is the store's Python work.

What is left of the RPC wait (``rpc`` less Node's encode and parse and
Python's answering task) is the transport: the socket both ways and the two
event loops waking up. A no-op method (``bench.noop``, answering ``null``)
shows that floor alone. All figures are microseconds per call.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import cProfile
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_harness import QUOTA, populate, sqlite_url
from bench_node import HISTORY, READ_CONVERSATION, NodeDriver, missing, serve
from bench_openai import TEXT

import makers_store
from makers_store.emulator.runtime.store_rpc import Handler, handlers_for
from makers_store.emulator.runtime.store_rpc import values as store_rpc_values

OPERATIONS = {  # bench_node.mjs contender -> its store RPC method
    "noop": "bench.noop",
    "append.node": "appendMessage",
    "read.node": "getMessages",
    "put.ours": "langgraph.checkpointer.put",
    "get.ours": "langgraph.checkpointer.getTuple",
    "list.ours": "langgraph.checkpointer.list",
}
COLUMNS = (
    "wall",
    "node cpu",
    "node encode",
    "node parse",
    "node adapter",
    "py cpu",
    "py decode",
    "py handler",
    "py sqlite",
    "sql stmts",
    "py encode",
    "py loop+send",
    "idle",
    "handler here",
    "req B",
    "reply B",
)


class Meter:
    """CPU nanoseconds of this thread spent per name, summed, by wrapped
    functions, and the arguments of the first call of each (to replay it
    without the RPC). CPU time, not wall time: on a machine of two cores a
    send to the Node process may hand the core to it before returning."""

    def __init__(self) -> None:
        self.spent: dict[str, int] = defaultdict(int)
        self.last: dict[str, Any] = {}

    def wrap_sync(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return function(*args)
            finally:
                self.spent[name] += time.thread_time_ns() - started

        return timed

    def wrap_async(
        self, name: str, function: Callable[..., Awaitable[Any]], *, keep: bool = False
    ) -> Any:
        async def timed(*args: Any) -> Any:
            if keep and name not in self.last:  # once: a copy costs more than some calls
                self.last[name] = copy.deepcopy(args)  # before the handler pops $bind
            started = time.thread_time_ns()
            try:
                return await function(*args)
            finally:
                self.spent[name] += time.thread_time_ns() - started

        return timed


async def replayed(handler: Handler, params: dict[str, Any], calls: int) -> float:
    """Microseconds per call of ``handler`` called here, without the RPC."""
    copies = [copy.deepcopy(params) for _ in range(calls)]  # each call pops $bind
    started = time.perf_counter()
    for one in copies:
        await handler(one)
    return (time.perf_counter() - started) * 1e6 / calls


def sqlite_time(profile: cProfile.Profile) -> tuple[float, int]:
    """Seconds spent inside the sqlite3 module's C functions (their own time),
    and how many statements were executed."""
    entries = [
        entry
        for entry in profile.getstats()
        if isinstance(entry.code, str) and "sqlite3." in entry.code
    ]
    statements = sum(entry.callcount for entry in entries if "'execute" in str(entry.code))
    return sum(entry.inlinetime for entry in entries), statements


async def main_async(calls: int) -> list[tuple[str, dict[str, float]]]:
    folder = Path(tempfile.mkdtemp(prefix="msprof"))
    store = makers_store.open_store(sqlite_url(folder / "profile.db"))
    meter = Meter()

    async def noop(params: dict[str, Any]) -> None:
        return None

    table: dict[str, Handler] = {"bench.noop": noop, **handlers_for(store)}
    extra = {name: meter.wrap_async(name, handler, keep=True) for name, handler in table.items()}
    server, socket, socket_folder = await serve(store, extra=extra)
    decode, encode = store_rpc_values.decode_request, store_rpc_values.encode_reply
    store_rpc_values.decode_request = meter.wrap_sync("decode", decode)
    store_rpc_values.encode_reply = meter.wrap_sync("encode", encode)
    found: list[tuple[str, dict[str, float]]] = []
    try:
        await populate(
            f"conversation {READ_CONVERSATION!r}",
            QUOTA,
            lambda i: store.append_message(READ_CONVERSATION, "user", TEXT),
        )
        async with NodeDriver(socket, folder) as node:
            await node.ask(
                cmd="setup",
                what="messages",
                text=TEXT,
                readConversation=READ_CONVERSATION,
                readMessages=QUOTA,
            )
            await node.ask(cmd="setup", what="checkpoints", history=HISTORY)
            for name, method in OPERATIONS.items():
                meter.spent.clear()
                meter.last.clear()
                cpu = time.process_time()
                got = await node.ask(cmd="profile", name=name, calls=calls)
                python_cpu = (time.process_time() - cpu) * 1e6 / calls
                python = {key: value / calls / 1000 for key, value in meter.spent.items()}
                profiler = cProfile.Profile()
                profiler.enable()
                await node.ask(cmd="profile", name=name, calls=calls)
                profiler.disable()
                (params,) = meter.last[method]
                sqlite_seconds, statements = sqlite_time(profiler)
                parts = ("decode", method, "encode")
                row = {
                    "wall": got["total"],
                    "node cpu": got["cpu"],
                    "node encode": got.get("encode", 0.0),
                    "node parse": got["parse"],
                    "node adapter": got["total"] - got["rpc"],
                    "py cpu": python_cpu,
                    "py decode": python.get("decode", 0.0),
                    "py handler": python.get(method, 0.0),
                    "py sqlite": sqlite_seconds * 1e6 / calls,
                    "sql stmts": statements / calls,
                    "py encode": python.get("encode", 0.0),
                    "py loop+send": python_cpu - sum(python.get(part, 0.0) for part in parts),
                    "idle": got["total"] - got["cpu"] - python_cpu,
                    "handler here": await replayed(table[method], params, calls),
                    "req B": got.get("requestBytes", 0),
                    "reply B": got.get("replyBytes", 0),
                }
                found.append((name, row))
    finally:
        store_rpc_values.decode_request, store_rpc_values.encode_reply = decode, encode
        await server.close()
        await store.close()
        shutil.rmtree(socket_folder, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    if (reason := missing()) is not None:
        raise SystemExit(reason)
    rows = asyncio.run(main_async(calls))
    print(f"{'us per call':12}" + "".join(f"{c:>13}" for c in COLUMNS))
    for name, row in rows:
        cells = (f"{row[c]:13.1f}" if c == "sql stmts" else f"{row[c]:13.0f}" for c in COLUMNS)
        print(f"{name:12}" + "".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
