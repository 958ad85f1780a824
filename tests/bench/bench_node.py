"""Node agents' ``context.store`` against Python and against Node's own SQLite (issue 21).

A Node agent's store calls go over the store RPC (a Unix socket, one JSON
line each way) to the one Python store, as under ``makers-store serve``. Here
a store on a SQLite file is served by the store RPC server on this process's
event loop, and a Node process (``tests/node/project/bench_node.mjs``) calls
it. The Node contenders time their own rounds, in Node; this process alternates
them with its own (see ``bench_harness.compare_rounds``), serving the RPC while
a Node round runs.

* ``appendMessage`` and ``getMessages({limit: 50})`` (the default order, the
  oldest 50, of a conversation of ``long_conversation`` messages) through the
  Node client, against the same calls on the Python API of the same store, and
  against a raw ``better-sqlite3`` loop in Node: one INSERT per message in its
  own transaction, and one prepared SELECT of 50 rows turned into message
  objects, on the table and settings of the Python raw floor (WAL,
  synchronous=NORMAL).
* The LangGraph.js checkpointer (``context.store.langgraphCheckpointer``)
  against ``@langchain/langgraph-checkpoint-sqlite``'s ``SqliteSaver``, both in
  the one Node process on SQLite files, with the checkpoints of
  tests/bench/bench_langgraph.py: ``put`` of the next checkpoint of a thread,
  ``getTuple`` of the latest of 50 checkpoints with two pending writes, and
  ``list`` of 10 of them. Both run as shipped, at equal durability: ours at
  its default (WAL, synchronous=NORMAL); SqliteSaver sets WAL and leaves
  ``synchronous`` to SQLite, which better-sqlite3 builds with
  ``SQLITE_DEFAULT_WAL_SYNCHRONOUS=1``, so NORMAL as well. Both settings are
  read back from the connections and printed.

The overhead table (issue 25: at most 60 us added per call): each call a
Node agent makes most (``appendMessage``, ``getMessages({limit: 20})``,
``state.get``, ``state.set``, the checkpointer's ``put`` and ``getTuple``)
against the same call a Python agent makes on the same store, alternating,
in microseconds per call; "added" is the difference. For the checkpointer,
the Python call is ``MakersCheckpointSaver`` given the same checkpoint as
Python objects (it serializes them itself, with LangGraph's serializer), and
the Node call includes LangGraph.js's serializer in Node: what each agent
pays for the same step.

For information (no targets): the Node client's cost is the Python call plus
the RPC; tests/bench/bench_node_profile.py shows where a call's time goes. Needs
``node`` and the npm packages of tests/node/project (``npm ci`` there); left
out, and said so, without them. Run alone with
``python tests/bench/bench_node.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from bench_harness import (
    FULL,
    QUICK,
    Op,
    Round,
    Row,
    Sizes,
    compare_rounds,
    populate,
    rounds_of,
    say,
    sqlite_url,
    table,
)
from bench_langgraph import HISTORY as PYTHON_HISTORY
from bench_langgraph import Thread as PythonThread
from bench_openai import TEXT
from bench_sqlite import our_settings

import makers_store
from makers_store.emulator.runtime.store_rpc import Handler, StoreRpcServer, start_store_rpc

PROJECT = Path(__file__).resolve().parents[1] / "node" / "project"
DRIVER = PROJECT / "bench_node.mjs"
NPM_PACKAGES = ("better-sqlite3", "@langchain/langgraph-checkpoint-sqlite", "@langchain/core")
HISTORY = 50  # checkpoints in the thread getTuple and list read
LIST_LIMIT = 10
READ_CONVERSATION = "node-read"


def missing() -> str | None:
    """What keeps this area from running (node, the npm packages), or None."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    for package in NPM_PACKAGES:
        if not (PROJECT / "node_modules" / package / "package.json").exists():
            return f"{package} is not installed: (cd tests/node/project && npm ci)"
    return None


class NodeDriver:
    """The Node process of bench_node.mjs, one command at a time."""

    def __init__(self, socket: str, workdir: Path) -> None:
        self.socket = socket
        self.workdir = workdir
        self.process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> NodeDriver:
        node = shutil.which("node")
        assert node is not None  # missing() was asked first
        self.process = await asyncio.create_subprocess_exec(
            node,
            "--expose-gc",
            str(DRIVER),
            self.socket,
            str(self.workdir),
            cwd=PROJECT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process = self.process
        assert process is not None and process.stdin is not None
        process.stdin.close()  # the driver ends when its input does
        try:
            await asyncio.wait_for(process.wait(), timeout=30)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def ask(self, **command: Any) -> dict[str, Any]:
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(command).encode() + b"\n")
        await process.stdin.drain()
        line = await process.stdout.readline()
        if not line:
            raise RuntimeError(f"bench_node.mjs exited (code {await process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"bench_node.mjs, {command}: {reply['error']}")
        return reply

    def round(self, name: str) -> Round:
        async def one_round(seconds: float, min_ops: int) -> float:
            reply = await self.ask(cmd="round", name=name, seconds=seconds, minOps=min_ops)
            return float(reply["opsPerSecond"])

        return one_round


async def serve(
    store: makers_store.ContextStore, extra: Mapping[str, Handler] | None = None
) -> tuple[StoreRpcServer, str, str]:
    """The store RPC on a short socket path (Unix socket paths are short)."""
    folder = tempfile.mkdtemp(prefix="msbench")
    path = f"{folder}/store.sock"
    return await start_store_rpc(store, path, extra=extra), path, folder


async def bench_messages(workdir: Path, sizes: Sizes, notes: list[str]) -> list[Row]:
    n = sizes.long_conversation
    say(f"node: appendMessage and getMessages(50) of {n:,}: Node client vs Python vs raw")
    store = makers_store.open_store(sqlite_url(workdir / "node-messages.db"))
    server, socket, folder = await serve(store)
    bound = store.bind("bench-python", run_id="run-bench")  # as serve binds ctx.store
    calls = 0

    async def python_append() -> None:
        nonlocal calls
        cid = f"python-append-{calls // 2_000}"  # below the quota, as the Node side
        calls += 1
        await bound.append_message(cid, "user", TEXT)

    async def python_read() -> None:
        assert len(await bound.get_messages(READ_CONVERSATION, limit=50)) == 50

    try:
        await populate(
            f"ours, conversation {READ_CONVERSATION!r} to {n:,}",
            n,
            lambda i: store.append_message(READ_CONVERSATION, "user", TEXT),
        )
        async with NodeDriver(socket, workdir) as node:
            versions = await node.ask(cmd="settings")
            raw = await node.ask(
                cmd="setup",
                what="messages",
                text=TEXT,
                readConversation=READ_CONVERSATION,
                readMessages=n,
            )
            notes.append(
                f"Node {versions['node']}, better-sqlite3 {versions['betterSqlite3']} "
                f"(SQLite {versions['sqlite']}), @langchain/langgraph-checkpoint-sqlite "
                f"{versions['sqliteSaver']}"
            )
            notes.append(
                f"Node rows: ours {our_settings(store)} (served over the store RPC); "
                f"raw better-sqlite3 {raw['raw']}"
            )
            appends = await compare_rounds(
                {
                    "node": node.round("append.node"),
                    "python": rounds_of(python_append),
                    "raw": node.round("append.raw"),
                },
                sizes,
            )
            reads = await compare_rounds(
                {
                    "node": node.round("read.node"),
                    "python": rounds_of(python_read),
                    "raw": node.round("read.raw"),
                },
                sizes,
            )
    finally:
        await server.close()
        await store.close()
        shutil.rmtree(folder, ignore_errors=True)
    read = f"Node getMessages({{limit: 50}}) of {n:,}"
    return [
        Row("Node appendMessage", appends["node"], "Python append_message", appends["python"],
            None, "info"),
        Row("Node appendMessage", appends["node"], "raw better-sqlite3 insert (Node)",
            appends["raw"], None, "info"),
        Row(read, reads["node"], "Python get_messages(limit=50)", reads["python"], None, "info"),
        Row(read, reads["node"], "raw better-sqlite3 select 50 (Node)", reads["raw"],
            None, "info"),
    ]  # fmt: skip


async def bench_checkpointer(workdir: Path, sizes: Sizes, notes: list[str]) -> list[Row]:
    say("node: langgraphCheckpointer vs SqliteSaver (put, getTuple, list)")
    store = makers_store.open_store(sqlite_url(workdir / "node-checkpoints.db"))
    server, socket, folder = await serve(store)
    try:
        async with NodeDriver(socket, workdir) as node:
            peer = await node.ask(cmd="setup", what="checkpoints", history=HISTORY)
            notes.append(
                f"Node checkpointer rows: ours {our_settings(store)}; SqliteSaver {peer['peer']} "
                "(as shipped)"
            )
            found = {
                op: await compare_rounds(
                    {name: node.round(f"{op}.{name}") for name in ("ours", "peer")}, sizes
                )
                for op in ("put", "get", "list")
            }
    finally:
        await server.close()
        await store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return [
        Row("Node langgraphCheckpointer.put", found["put"]["ours"], "SqliteSaver.put",
            found["put"]["peer"], None, "info"),
        Row("Node langgraphCheckpointer.getTuple", found["get"]["ours"],
            "SqliteSaver.getTuple (latest)", found["get"]["peer"], None, "info"),
        Row(f"Node langgraphCheckpointer.list({LIST_LIMIT} of {HISTORY})", found["list"]["ours"],
            "SqliteSaver.list", found["list"]["peer"], None, "info"),
    ]  # fmt: skip


#: (call, Node contender, Python contender) of the overhead table
OVERHEAD_CALLS = (
    ("appendMessage", "append.node", "append"),
    ("getMessages({limit: 20})", "read20.node", "read20"),
    ("state.get", "state.get.node", "state.get"),
    ("state.set", "state.set.node", "state.set"),
    ("checkpointer put", "put.ours", "put"),
    ("checkpointer getTuple", "get.ours", "get"),
)


@dataclass(frozen=True)
class Overhead:
    """One call of the overhead table: microseconds per call, wall clock and CPU
    (a Node call's CPU is both processes': Node's and the store RPC's here)."""

    call: str
    python_us: float
    node_us: float
    python_cpu_us: float
    node_cpu_us: float


async def _python_round(op: Op, seconds: float, min_ops: int) -> tuple[float, float]:
    """(wall us, CPU us) per call of one round of ``op``."""
    calls = 0
    cpu = time.process_time()
    start = time.perf_counter()
    while True:
        await op()
        calls += 1
        now = time.perf_counter()
        if calls >= min_ops and now - start >= seconds:
            return (now - start) * 1e6 / calls, (time.process_time() - cpu) * 1e6 / calls


async def _node_round(
    node: NodeDriver, name: str, seconds: float, min_ops: int
) -> tuple[float, float]:
    """(wall us, CPU us of both processes) per call of one round of a Node contender."""
    cpu = time.process_time()  # this process serves the store RPC meanwhile
    reply = await node.ask(cmd="round", name=name, seconds=seconds, minOps=min_ops)
    served = (time.process_time() - cpu) * 1e6 / reply["calls"]
    return 1e6 / reply["opsPerSecond"], reply["cpuPerCall"] + served


async def overhead(workdir: Path, sizes: Sizes) -> list[Overhead]:
    """:data:`OVERHEAD_CALLS`, each Node call against its Python call in
    alternating rounds (medians) on one store, served over the store RPC as
    serve serves it. CPU time is reported beside wall time because the wall
    time of a call that crosses two processes also holds the time each waits
    for a core, which on a shared machine is most of it."""
    say("node: overhead per call, Node context.store against the same Python call")
    store = makers_store.open_store(sqlite_url(workdir / "node-overhead.db"))
    server, socket, folder = await serve(store)
    bound = store.bind("bench-node", run_id="run-bench")  # Node's is bound alike
    saver = store.langgraph_checkpointer
    put_thread = PythonThread(saver, "python-put")
    read_thread = PythonThread(saver, "python-get")
    calls = 0

    async def append() -> None:
        nonlocal calls
        calls += 1  # below the quota, as the Node side
        await bound.append_message(f"python-append-{calls // 2_000}", "user", TEXT)

    async def read20() -> None:
        assert len(await bound.get_messages(READ_CONVERSATION, limit=20)) == 20

    async def state_get() -> None:
        await bound.state.get("k")

    async def state_set() -> None:
        nonlocal calls
        calls += 1
        await bound.state.set("k", {"step": calls, "text": "a small value"})

    async def get() -> None:
        assert await saver.aget_tuple(read_thread.config) is not None

    python: dict[str, Op] = {
        "append": append,
        "read20": read20,
        "state.get": state_get,
        "state.set": state_set,
        "put": put_thread.put,
        "get": get,
    }
    found = []
    try:
        await populate(
            f"ours, conversation {READ_CONVERSATION!r} to 100",
            100,
            lambda i: store.append_message(READ_CONVERSATION, "user", TEXT),
        )
        await bound.state.set("k", {"step": 0, "text": "a small value"})
        for _ in range(PYTHON_HISTORY):
            await read_thread.put()
        await read_thread.add_writes()
        node_files = workdir / "overhead"  # the Node side's files, apart from the other rows'
        node_files.mkdir()
        async with NodeDriver(socket, node_files) as node:
            await node.ask(
                cmd="setup", what="messages", text=TEXT, readConversation=READ_CONVERSATION,
                readMessages=100,
            )  # fmt: skip
            await node.ask(cmd="setup", what="checkpoints", history=HISTORY)
            for call, node_name, python_name in OVERHEAD_CALLS:
                op = python[python_name]
                await _python_round(op, sizes.round_seconds / 2, sizes.min_ops)  # warm-up
                await _node_round(node, node_name, sizes.round_seconds / 2, sizes.min_ops)
                samples: dict[str, list[tuple[float, float]]] = {"python": [], "node": []}
                for index in range(sizes.rounds):
                    for side in ("python", "node") if index % 2 == 0 else ("node", "python"):
                        gc.collect()
                        samples[side].append(
                            await _python_round(op, sizes.round_seconds, sizes.min_ops)
                            if side == "python"
                            else await _node_round(
                                node, node_name, sizes.round_seconds, sizes.min_ops
                            )
                        )
                found.append(
                    Overhead(
                        call,
                        statistics.median(wall for wall, _ in samples["python"]),
                        statistics.median(wall for wall, _ in samples["node"]),
                        statistics.median(cpu for _, cpu in samples["python"]),
                        statistics.median(cpu for _, cpu in samples["node"]),
                    )
                )
    finally:
        await server.close()
        await store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return found


def overhead_table(found: list[Overhead]) -> list[str]:
    """The overhead table as Markdown: wall clock, then CPU."""
    lines = [
        "| Node call (SQLite) | Python call, us | Node call, us | added, us | "
        "Python CPU, us | Node CPU (both processes), us | added CPU, us |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in found:
        lines.append(
            f"| {row.call} | {row.python_us:.0f} | {row.node_us:.0f} | "
            f"{row.node_us - row.python_us:.0f} | {row.python_cpu_us:.0f} | "
            f"{row.node_cpu_us:.0f} | {row.node_cpu_us - row.python_cpu_us:.0f} |"
        )
    return lines


async def run(workdir: Path, sizes: Sizes, notes: list[str]) -> list[Row]:
    """The Node rows; ``notes`` gets the versions and SQLite settings behind them,
    and the overhead table."""
    notes += ["", *overhead_table(await overhead(workdir, sizes)), ""]
    rows = await bench_messages(workdir, sizes, notes)
    rows += await bench_checkpointer(workdir, sizes, notes)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes")
    parser.add_argument(
        "--overhead", action="store_true", help="only the overhead table (Node against Python)"
    )
    args = parser.parse_args()
    if (reason := missing()) is not None:
        raise SystemExit(reason)
    sizes = QUICK if args.quick else FULL
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.overhead:
            print("\n".join(overhead_table(asyncio.run(overhead(Path(tmp), sizes)))))
            return 0
        rows = asyncio.run(run(Path(tmp), sizes, notes))
    print("\n".join([*notes, "", *table(rows, args.quick)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
