"""Speed benchmark of makers-store against its peers, and its backends side by side.

Run it from the repository root::

    .venv/bin/python tests/bench/benchmark.py            # full sizes, exits 1 if a target is missed
    .venv/bin/python tests/bench/benchmark.py --quick    # tiny sizes, a few minutes, never fails
    .venv/bin/python tests/bench/benchmark.py --smoke    # quick's data, one short round per
                                                         # contender: every area runs and prints
                                                         # its rows (the test suite's run), never
                                                         # fails; its figures mean nothing
    .venv/bin/python tests/bench/benchmark.py --compare  # quick, then names every figure more
                                                         # than 20% worse than accepted (exit 1)
    .venv/bin/python tests/bench/bench_ab.py --accept    # the table, only after an A/B against
                                                         # the previous landed commit

The regression guard (``--compare``, ``--accept``) and its table of accepted
ratios, ``tests/bench/accepted.json``, are described in tests/bench/bench_guard.py.

Every database is a file in one temporary directory. The machine is noisy, so
each comparison runs its contenders side by side in one process: a warm-up,
then several rounds in alternating order (A, B, A, B... reversed every other
round), each round timed with ``time.perf_counter`` for a minimum duration;
the table shows the median of the rounds and the ratio of the medians. The
async contenders (our store, ``agents.memory.SQLiteSession``) are awaited
inside one event loop that ``asyncio.run`` starts around the whole benchmark.

Targets (full mode):

* ``append_message`` >= 4x ``SQLiteSession.add_items`` (one item per call) and
  >= 30% of a raw sqlite3 insert-and-commit loop (WAL, synchronous=NORMAL).
* ``get_messages(limit=50, order="desc")`` on a 10,000-message conversation
  >= 2x ``SQLiteSession.get_items(limit=50)`` on a 10,000-item session.
* append number ~10,000 of a conversation costs at most 1.5x append number ~10
  (median of single appends: windows around message 10 of fresh
  conversations, and the window right before the 10,000-message quota).
* ``list_conversations(user_id=..., limit=20)`` among 100,000 conversations
  costs at most 2x the same call among 1,000.
* ``openai_session.add_items`` >= 3x ``SQLiteSession.add_items``
  (tests/bench/bench_openai.py); the LangGraph checkpointer's ``aput`` and
  ``aget_tuple`` >= 2x ``AsyncSqliteSaver`` (tests/bench/bench_langgraph.py).
* the LangGraph store against ``AsyncSqliteStore`` (SQLite) and
  ``AsyncPostgresStore`` (PostgreSQL): ``list_namespaces`` and ``search``
  >= 2x and flat as items grow, ``put`` >= 1x (tests/bench/bench_langgraph_store.py).
* SQLite at equal durability, ours vs the OpenAI SDK's sessions
  (tests/bench/bench_sqlite.py): ``add_items`` at ``synchronous=full`` >= 2x
  ``AdvancedSQLiteSession`` (one caller, and eight at once), eight processes
  on one file >= 1x ``SQLiteSession`` per process (FULL and NORMAL), and the
  longest event-loop stall of large units <= 10 ms.
* PostgreSQL against its peers on one server (tests/bench/bench_postgres.py, with
  the ``bench`` extra; left out, and said so, without it): the checkpointer's
  ``aput_writes`` and ``alist(limit=10)`` >= 1x ``AsyncPostgresSaver``,
  ``get_items(limit=20)`` >= 1x ``SQLAlchemySession``; round trips per call
  <= 2 for a conversation page, a message page, ``alist`` at any limit, and 1
  for ``aput_writes``; event-loop stalls of large units <= 10 ms.
* Node agents' ``context.store`` (tests/bench/bench_node.py, for information; left
  out, and said so, without ``node`` and tests/node/project's npm packages):
  ``appendMessage`` and ``getMessages({limit: 50})`` through the Node client
  against the same calls in Python and a raw ``better-sqlite3`` loop, and the
  LangGraph.js checkpointer's ``put``, ``getTuple`` and ``list`` against
  ``SqliteSaver`` (both WAL, synchronous=NORMAL, as shipped).
* SQLite, PostgreSQL and S3 side by side (append, newest-50 read, list by
  user, for information), and S3 requests per call: typically at most 4 for
  an append to an existing conversation; every ``STALE_INDEX_BATCH``-th (16th)
  append adds one batch delete of superseded index entries, shown as the
  mean (tests/bench/bench_backends.py).
* Message search through the search index, SQLite and PostgreSQL side by
  side (tests/bench/bench_search.py): all hits of a rare word <= 100 ms and
  the first 20 of a common word <= 50 ms at 400,000 messages in 20,000
  conversations, and ``append_message`` with the index >= 1/1.1 of the same
  append without it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import bench_backends
import bench_fork
import bench_guard
import bench_langgraph
import bench_langgraph_store
import bench_node
import bench_openai
import bench_postgres
import bench_prune
import bench_search
import bench_sqlite
from agents.memory import SQLiteSession
from bench_harness import (
    FULL,
    QUICK,
    QUOTA,
    SMOKE,
    Op,
    Row,
    Sizes,
    compare,
    populate,
    say,
    sqlite_url,
    table,
)
from openai.types.responses import EasyInputMessageParam

import makers_store
from makers_store.errors import MemoryQuotaExceededError

TEXT = (
    "Please summarise the attached quarterly report in three bullet points, "
    "keeping the figures for revenue, churn and headcount, and flag anything "
    "that changed by more than ten percent since the previous quarter."
)


def user_item() -> EasyInputMessageParam:
    """One SQLiteSession item, as its docs show: a user message dict."""
    return {"role": "user", "content": TEXT}


# --- contenders -------------------------------------------------------------


class RawMessageTable:
    """The floor: one INSERT and one COMMIT per message, WAL, synchronous=NORMAL."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(
            "CREATE TABLE messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "message_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, "
            "metadata TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (conversation_id, seq))"
        )
        self.conn.commit()
        self.seq = 0

    async def append(self) -> None:
        self.append_sync()

    def append_sync(self) -> None:
        self.seq += 1
        self.conn.execute(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                "raw",
                self.seq,
                f"msg_{self.seq:010d}",
                "user",
                json.dumps(TEXT),
                None,
                time.time_ns() // 1_000_000,
            ),
        )
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()


class OurAppends:
    """append_message, moving to a fresh conversation well before the quota."""

    PER_CONVERSATION = 2_000

    def __init__(self, store: makers_store.ContextStore) -> None:
        self.store = store
        self.calls = 0

    async def append(self) -> None:
        cid = f"append-{self.calls // self.PER_CONVERSATION}"
        self.calls += 1
        await self.store.append_message(conversation_id=cid, role="user", content=TEXT)


# --- the four comparisons ---------------------------------------------------


async def bench_append(workdir: Path, sizes: Sizes) -> list[Row]:
    say("append: ours vs SQLiteSession.add_items vs raw sqlite3")
    store = makers_store.open_store(sqlite_url(workdir / "append-ours.db"))
    session = SQLiteSession("append", workdir / "append-peer.db")
    raw = RawMessageTable(workdir / "append-raw.db")
    ours = OurAppends(store)
    item = user_item()

    async def peer() -> None:
        await session.add_items([item])

    hop = ThreadPoolExecutor(max_workers=1)

    async def raw_in_thread() -> None:
        await asyncio.get_running_loop().run_in_executor(hop, raw.append_sync)

    contenders = {"ours": ours.append, "peer": peer, "raw": raw.append, "raw+hop": raw_in_thread}
    try:
        found = await compare(contenders, sizes)
    finally:
        await store.close()
        session.close()
        hop.shutdown()
        raw.close()
    return [
        Row("append_message", found["ours"], "SQLiteSession.add_items", found["peer"], 4.0, ">= 4"),
        Row(
            "append_message",
            found["ours"],
            "raw sqlite3 insert+commit",
            found["raw"],
            0.3,
            ">= 0.30",
        ),
        Row(
            "append_message",
            found["ours"],
            "raw, each op in a worker thread",
            found["raw+hop"],
            None,
            "info",
        ),
    ]


async def bench_growth_and_read(workdir: Path, sizes: Sizes) -> list[Row]:
    n, window = sizes.long_conversation, sizes.window
    say(f"append cost at message ~10 vs at message ~{n:,}; get_messages on {n:,} messages")
    store = makers_store.open_store(sqlite_url(workdir / "long-ours.db"))
    session = SQLiteSession("long", workdir / "long-peer.db")
    try:
        await populate(
            f"ours, conversation 'long' to {n - window:,}",
            n - window,
            lambda i: store.append_message(conversation_id="long", role="user", content=TEXT),
        )
        early, late = await growth(store, sizes)
        for _ in range(window):
            await store.append_message(conversation_id="long", role="user", content=TEXT)
        for start in range(0, n, 500):
            await session.add_items([user_item() for _ in range(min(500, n - start))])

        meta = await store.get_conversation(conversation_id="long")
        assert meta is not None and meta.message_count == n, meta
        assert len(await session.get_items()) == n

        async def ours() -> None:
            page = await store.get_messages(conversation_id="long", limit=50, order="desc")
            assert len(page) == 50

        async def peer() -> None:
            page = await session.get_items(limit=50)
            assert len(page) == 50

        found = await compare({"ours": ours, "peer": peer}, sizes)
    finally:
        await store.close()
        session.close()
    first, last = 5 + 1, 5 + window
    return [
        Row(
            f"append #{n - window + 1:,}-{n:,} (per append)",
            1 / late,
            f"append #{first}-{last} of new convs",
            1 / early,
            1 / 1.5,
            ">= 0.67 (cost <= 1.5x)",
        ),
        Row(
            f"get_messages(50, desc) of {n:,}",
            found["ours"],
            f"SQLiteSession.get_items(50) of {n:,}",
            found["peer"],
            2.0,
            ">= 2",
        ),
    ]


async def growth(store: makers_store.ContextStore, sizes: Sizes) -> tuple[float, float]:
    """Median seconds of one append around message 10 and right before message ``n``.

    Early windows append messages 6..15 to fresh conversations; late windows
    append the last ``window`` messages of conversation 'long' (up to the
    quota in full mode), then delete them again untimed. The two kinds
    alternate, and the first pair is a warm-up.
    """
    early: list[float] = []
    late: list[float] = []

    async def timed_appends(cid: str, into: list[float]) -> list[str]:
        ids = []
        for _ in range(sizes.window):
            start = time.perf_counter()
            ids.append(await store.append_message(conversation_id=cid, role="user", content=TEXT))
            into.append(time.perf_counter() - start)
        return ids

    async def early_window(index: int, into: list[float]) -> None:
        cid = f"early-{index}"
        for _ in range(5):
            await store.append_message(conversation_id=cid, role="user", content=TEXT)
        await timed_appends(cid, into)

    async def late_window(into: list[float]) -> None:
        ids = await timed_appends("long", into)
        if sizes.long_conversation == QUOTA:
            try:
                await store.append_message(conversation_id="long", role="user", content=TEXT)
            except MemoryQuotaExceededError:
                pass
            else:
                raise AssertionError("the late window did not end at the quota")
        for mid in ids:
            await store.delete_message(conversation_id="long", message_id=mid)

    await early_window(-1, [])
    await late_window([])
    for index in range(sizes.growth_rounds):
        gc.collect()
        if index % 2 == 0:
            await early_window(index, early)
            await late_window(late)
        else:
            await late_window(late)
            await early_window(index, early)
    return statistics.median(early), statistics.median(late)


async def bench_list(workdir: Path, sizes: Sizes) -> list[Row]:
    small_n, large_n = sizes.list_small, sizes.list_large
    say(f"list_conversations among {small_n:,} vs {large_n:,} conversations")
    small = makers_store.open_store(sqlite_url(workdir / "list-small.db"))
    large = makers_store.open_store(sqlite_url(workdir / "list-large.db"))
    users = sizes.list_users

    def filler(store: makers_store.ContextStore) -> Callable[[int], Awaitable[object]]:
        def append(index: int) -> Awaitable[object]:
            return store.append_message(
                conversation_id=f"conv-{index:07d}",
                role="user",
                content="hello",
                user_id=f"user-{index % users}",
            )

        return append

    def lister(store: makers_store.ContextStore, user_id: str | None) -> Op:
        async def call() -> None:
            page = await store.list_conversations(user_id=user_id, limit=20)
            assert len(page.items) == 20 and page.next_cursor is not None

        return call

    try:
        await populate(f"{small_n:,} conversations", small_n, filler(small))
        await populate(f"{large_n:,} conversations", large_n, filler(large))
        by_user = await compare(
            {"small": lister(small, "user-1"), "large": lister(large, "user-1")}, sizes
        )
        everyone = await compare(
            {"small": lister(small, None), "large": lister(large, None)}, sizes
        )
    finally:
        await small.close()
        await large.close()
    return [
        Row(
            f"list_conversations(user_id, 20) of {large_n:,}",
            by_user["large"],
            f"same call among {small_n:,}",
            by_user["small"],
            0.5,
            ">= 0.50 (cost <= 2x)",
        ),
        Row(
            f"list_conversations(20) of {large_n:,}",
            everyone["large"],
            f"same call among {small_n:,}",
            everyone["small"],
            None,
            "info",
        ),
    ]


# --- report -----------------------------------------------------------------


def environment(workdir: Path) -> list[str]:
    return [
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"SQLite {sqlite3.sqlite_version}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs",
        f"makers-store {version('makers-store')}, openai-agents {version('openai-agents')}",
        f"databases in {workdir} (ours: WAL, synchronous=NORMAL; SQLiteSession: WAL, "
        "synchronous left at its default; raw: WAL, synchronous=NORMAL)",
    ]


async def run_all(workdir: Path, sizes: Sizes, notes: list[str]) -> list[Row]:
    rows = await bench_append(workdir, sizes)
    rows += await bench_growth_and_read(workdir, sizes)
    rows += await bench_list(workdir, sizes)
    rows += await bench_openai.run(workdir, sizes)
    rows += await bench_sqlite.run(workdir, sizes)
    rows += await bench_langgraph.run(workdir, sizes)
    rows += await bench_langgraph_store.run(workdir, sizes)
    if (no_node := bench_node.missing()) is None:
        rows += await bench_node.run(workdir, sizes, notes)
    else:
        say(f"node rows (context.store, langgraphCheckpointer vs SqliteSaver) left out: {no_node}")
    rows += await bench_backends.run(workdir, sizes)
    rows += await bench_fork.run(workdir, sizes)
    rows += await bench_prune.run(workdir, sizes)
    rows += await bench_search.run(workdir, sizes)
    if (missing := bench_postgres.missing_peers()) is None:
        rows += await bench_postgres.run(workdir, sizes)
    else:
        say(f"postgres peers (AsyncPostgresSaver, SQLAlchemySession, ADK) left out: {missing}")
    return rows


def measure(sizes: Sizes, where: Path | None) -> tuple[list[Row], list[str]]:
    """One run of every area: its rows, and the lines about where it ran."""
    with tempfile.TemporaryDirectory(prefix="makers-bench-", dir=where) as tmp:
        workdir = Path(tmp)
        notes: list[str] = []  # what the Node rows ran on, known once they ran
        rows = asyncio.run(run_all(workdir, sizes, notes))
        return rows, environment(workdir) + notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes; never fails on targets")
    size.add_argument(
        "--smoke",
        action="store_true",
        help="quick's data, one short round per contender: every area and row, figures "
        "meaningless (tests/test_benchmark_smoke.py); never fails on targets",
    )
    parser.add_argument("--dir", type=Path, help="put the databases here (default: a temp dir)")
    guard = parser.add_mutually_exclusive_group()
    guard.add_argument(
        "--compare",
        action="store_true",
        help="run in quick mode and name every figure more than 20%% worse than its "
        "accepted ratio (tests/bench/accepted.json); exit 1 if any",
    )
    guard.add_argument("--accept", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--accepted", type=Path, default=bench_guard.ACCEPTED, help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.accept:
        parser.error(
            "the table is accepted only after an A/B against the previous landed commit: "
            "python tests/bench/bench_ab.py --accept (issue 36)"
        )
    if args.smoke and args.compare:
        parser.error("--compare judges figures at the quick sizes: run it without --smoke")
    quick = args.quick or args.compare or args.smoke
    sizes = SMOKE if args.smoke else QUICK if quick else FULL
    mode = "smoke" if args.smoke else "quick" if quick else "full"
    started = time.perf_counter()
    rows, lines = measure(sizes, args.dir)
    lines += ["", *table(rows, quick, mode), ""]
    missed = [row for row in rows if row.passed is False]
    elapsed = time.perf_counter() - started
    lines.append(f"{mode} mode, {elapsed:.0f} s; targets missed: {len(missed)}")
    print("\n".join(lines), flush=True)
    if args.compare:

        def again() -> list[Row]:
            return measure(sizes, args.dir)[0]

        return bench_guard.run_compare(rows, again, args.accepted)
    return 1 if missed and not quick else 0


if __name__ == "__main__":
    sys.exit(main())
