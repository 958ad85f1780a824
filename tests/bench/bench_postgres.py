"""PostgreSQL: ours against the peers on the same server, and the round trips
each call costs (issue 13's PostgreSQL rows).

One throwaway server (tests/servers/postgres.py) holds every contender, each
in a schema or tables of its own, so the durability settings are the same
for all and printed (the server runs with ``fsync=off``: it measures the
work and the round trips, not the disk). Side by side, alternating rounds:

* the LangGraph checkpointer against ``AsyncPostgresSaver``: ``aput`` of the
  next checkpoint of a thread (target >= 1.25, issue 36), ``aput_writes``
  of two writes, ``aget_tuple`` of the latest checkpoint, ``alist(limit=10)``
  on a thread of 50 checkpoints with their writes (targets >= 1: the peer
  reads a checkpoint with its writes in one joined query, ours needs two
  range reads, the second keyed by the first's answer);
* the OpenAI session against the SDK's ``SQLAlchemySession`` over asyncpg:
  ``get_items(limit=20)`` of a 200-item session and ``add_items`` of one item;
* ``list_conversations(user_id, limit=20)`` against Google ADK's
  ``DatabaseSessionService.list_sessions`` (which returns every session of
  the user, so for information);
* round trips per call (``PostgresBlobStore.round_trips``), with a budget
  where issue 13 sets one: a conversation page, a message page <= 2; ``alist``
  the same for any limit; ``aput_writes`` 1;
* the longest event-loop stall of large units (the ``StallMeter`` of
  bench_sqlite), <= 10 ms.

The peers come with ``pip install -e '.[bench]'``. Run alone with
``python tests/bench/bench_postgres.py [--quick]``.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_harness import Row, Sizes, compare, populate, say
from bench_langgraph import Thread
from bench_sqlite import STALL_BUDGET_US, StallMeter

import makers_store
from makers_store.emulator.postgres.backend import PostgresBlobStore
from tests.servers.postgres import postgres_url, server

TEXT = "Please summarise the attached quarterly report in three bullet points."
CHECKPOINTS = 50
SESSION_ITEMS = 200


def missing_peers() -> str | None:
    """What keeps this area from running (the ``bench`` extra), or None."""
    try:
        import asyncpg  # noqa: F401 - SQLAlchemySession's driver
        import google.adk.sessions  # noqa: F401
        import sqlalchemy.ext.asyncio  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is missing: pip install -e '.[bench]'"
    return None


def round_trips(store: makers_store.ContextStore) -> Callable[[], int]:
    blobs = store.blobs
    assert isinstance(blobs, PostgresBlobStore)
    return lambda: blobs.round_trips


async def trips_per_call(
    store: makers_store.ContextStore, call: Callable[[], Awaitable[object]]
) -> float:
    """Round trips of one call (the most of five, after one to warm up)."""
    count = round_trips(store)
    await call()
    spent = []
    for _ in range(5):
        before = count()
        await call()
        spent.append(count() - before)
    return float(max(spent))


def trips_row(name: str, trips: float, budget: float | None) -> Row:
    if budget is None:
        return Row(f"PostgreSQL round trips per {name}", trips, "per call", 1.0, None, "info")
    return Row(
        f"PostgreSQL round trips per {name}",
        trips,
        f"budget of {budget:g}",
        budget,
        1.0,
        f"<= {budget:g}",
        lower_is_better=True,
    )


async def server_settings() -> str:
    import psycopg

    async with await psycopg.AsyncConnection.connect(server().base_url, autocommit=True) as conn:
        shown = []
        for name in ("server_version", "fsync", "synchronous_commit", "wal_level"):
            row = await (await conn.execute(f"SHOW {name}")).fetchone()
            shown.append(f"{name}={row[0] if row else '?'}")
    return ", ".join(shown)


# --- LangGraph checkpointer ---------------------------------------------------


async def bench_checkpointer(sizes: Sizes) -> list[Row]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    say("postgres: MakersCheckpointSaver vs AsyncPostgresSaver")
    store = makers_store.open_store(postgres_url())
    ours = store.langgraph_checkpointer
    async with AsyncPostgresSaver.from_conn_string(server().base_url) as peer:
        await peer.setup()
        try:
            savers: dict[str, Any] = {"ours": ours, "peer": peer}
            threads = {name: Thread(saver, f"lg-{name}") for name, saver in savers.items()}
            for thread in threads.values():
                for _ in range(CHECKPOINTS):
                    await thread.put()
                    await thread.add_writes()
            tasks = iter(range(10**9))
            # a thread of their own: the writes pile up on its one checkpoint
            targets = {name: Thread(saver, f"lgw-{name}") for name, saver in savers.items()}
            for target in targets.values():
                await target.put()

            def writer(name: str) -> Callable[[], Awaitable[None]]:
                thread = targets[name]

                async def call() -> None:  # two writes of a new task each time
                    writes = [("messages", TEXT), ("branch:to:tools", None)]
                    await thread.saver.aput_writes(thread.config, writes, f"t{next(tasks)}")

                return call

            # a thread of their own for the puts (no conversation meta, as a graph's)
            putters = {name: Thread(saver, f"lgp-{name}") for name, saver in savers.items()}

            def latest(name: str) -> Callable[[], Awaitable[None]]:
                config: Any = {"configurable": {"thread_id": f"lg-{name}", "checkpoint_ns": ""}}

                async def call() -> None:
                    assert await savers[name].aget_tuple(config) is not None

                return call

            def lister(name: str, limit: int) -> Callable[[], Awaitable[None]]:
                config: Any = {"configurable": {"thread_id": f"lg-{name}", "checkpoint_ns": ""}}

                async def call() -> None:
                    found = [item async for item in savers[name].alist(config, limit=limit)]
                    assert len(found) == limit and found[0].pending_writes

                return call

            rates = {
                "aput": await compare({n: putters[n].put for n in savers}, sizes),
                "aput_writes": await compare({n: writer(n) for n in savers}, sizes),
                "aget_tuple": await compare({n: latest(n) for n in savers}, sizes),
                "alist": await compare({n: lister(n, 10) for n in savers}, sizes),
            }
            trips = {
                "aput": await trips_per_call(store, putters["ours"].put),
                "aput_writes (2 writes)": await trips_per_call(store, writer("ours")),
                "aget_tuple": await trips_per_call(store, latest("ours")),
                **{
                    f"alist(limit={limit})": await trips_per_call(store, lister("ours", limit))
                    for limit in (1, 10, CHECKPOINTS)
                },
            }
        finally:
            await store.close()
    rows = [
        Row("postgres aput", rates["aput"]["ours"],
            "AsyncPostgresSaver.aput", rates["aput"]["peer"], 1.25, ">= 1.25"),
        Row("postgres aput_writes (2 writes)", rates["aput_writes"]["ours"],
            "AsyncPostgresSaver.aput_writes", rates["aput_writes"]["peer"], 1.0, ">= 1"),
        Row("postgres aget_tuple (latest)", rates["aget_tuple"]["ours"],
            "AsyncPostgresSaver.aget_tuple", rates["aget_tuple"]["peer"], 1.0, ">= 1"),
        Row(f"postgres alist(limit=10) of {CHECKPOINTS}", rates["alist"]["ours"],
            "AsyncPostgresSaver.alist", rates["alist"]["peer"], 1.0, ">= 1"),
    ]  # fmt: skip
    # aput: the meta read of the retention stamp, once a second, is the most of five
    budgets = {"aput": 2.0, "aput_writes (2 writes)": 1.0, "aget_tuple": 2.0}
    budgets.update({f"alist(limit={limit})": 2.0 for limit in (1, 10, CHECKPOINTS)})
    rows += [trips_row(f"checkpointer {name}", n, budgets.get(name)) for name, n in trips.items()]
    return rows


# --- OpenAI session -------------------------------------------------------------


async def bench_openai(sizes: Sizes) -> list[Row]:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    say("postgres: openai_session vs SQLAlchemySession (asyncpg)")
    store = makers_store.open_store(postgres_url())
    engine = create_async_engine(
        server().base_url.replace("postgresql://", "postgresql+asyncpg://")
    )
    items: list[Any] = [{"role": "user", "content": f"{TEXT} ({n})"} for n in range(SESSION_ITEMS)]
    try:
        ours = store.openai_session("read")
        peer = SQLAlchemySession("read", engine=engine, create_tables=True)
        await ours.add_items(items)
        await peer.add_items(items)

        async def ours_read() -> None:
            assert len(await ours.get_items(limit=20)) == 20

        async def peer_read() -> None:
            assert len(await peer.get_items(limit=20)) == 20

        reads = await compare({"ours": ours_read, "peer": peer_read}, sizes)
        ours_writer = store.openai_session("write")
        peer_writer = SQLAlchemySession("write", engine=engine, create_tables=True)
        one: list[Any] = [{"role": "user", "content": TEXT}]
        writes = await compare(
            {
                "ours": lambda: ours_writer.add_items(one),
                "peer": lambda: peer_writer.add_items(one),
            },
            sizes,
        )
        trips = await trips_per_call(store, ours_read)
    finally:
        await store.close()
        await engine.dispose()
    return [
        Row(f"postgres get_items(limit=20) of {SESSION_ITEMS}", reads["ours"],
            "SQLAlchemySession.get_items", reads["peer"], 1.0, ">= 1"),
        Row("postgres add_items (1 item)", writes["ours"], "SQLAlchemySession.add_items",
            writes["peer"], None, "info"),
        trips_row("openai get_items(limit=20)", trips, 2.0),
    ]  # fmt: skip


# --- conversations ----------------------------------------------------------------


async def bench_conversations(sizes: Sizes) -> list[Row]:
    from google.adk.sessions import DatabaseSessionService

    count = sizes.list_small
    say(f"postgres: list_conversations vs ADK list_sessions ({count:,} of one user)")
    store = makers_store.open_store(postgres_url())
    adk = DatabaseSessionService(
        db_url=server().base_url.replace("postgresql://", "postgresql+asyncpg://")
    )
    try:

        async def ours_add(n: int) -> None:
            await store.append_message(f"c{n}", "user", TEXT, user_id="u")

        async def adk_add(n: int) -> None:
            await adk.create_session(app_name="bench", user_id="u", session_id=f"c{n}")

        await populate(f"{count:,} conversations", count, ours_add)
        await populate(f"{count:,} ADK sessions", count, adk_add)
        await store.append_messages("long", [{"role": "user", "content": TEXT}] * 200)

        async def ours_list() -> None:
            assert len((await store.list_conversations(user_id="u", limit=20)).items) == 20

        async def adk_list() -> None:
            assert len((await adk.list_sessions(app_name="bench", user_id="u")).sessions) == count

        rates = await compare({"ours": ours_list, "adk": adk_list}, sizes)
        trips = {
            "list_conversations(limit=20)": await trips_per_call(
                store, lambda: store.list_conversations(limit=20)
            ),
            "list_conversations(user_id, limit=20)": await trips_per_call(store, ours_list),
            "get_messages(50, desc)": await trips_per_call(
                store, lambda: store.get_messages("long", limit=50, order="desc")
            ),
            "append_message (existing conversation)": await trips_per_call(
                store, lambda: store.append_message("long", "user", TEXT)
            ),
        }
        put = store.langgraph_store.aput
        trips["LangGraph store put (replacing)"] = await trips_per_call(
            store, lambda: put(("bench",), "k", {"v": 1})
        )
    finally:
        await store.close()
        await adk.close()
    budgets = {"list_conversations(limit=20)": 2.0, "list_conversations(user_id, limit=20)": 2.0}
    budgets["get_messages(50, desc)"] = 2.0
    return [
        Row(f"postgres list_conversations(user, 20) of {count:,}", rates["ours"],
            f"ADK list_sessions (all {count:,})", rates["adk"], None, "info"),
        *(trips_row(name, n, budgets.get(name)) for name, n in trips.items()),
    ]  # fmt: skip


# --- event-loop stalls ------------------------------------------------------------


async def bench_stalls(sizes: Sizes) -> list[Row]:
    big = sizes.long_conversation
    batch = min(1_000, big)
    say("postgres: event-loop stalls of large units")
    store = makers_store.open_store(postgres_url())
    meter = StallMeter()
    batch_of = [{"role": "user", "content": TEXT} for _ in range(batch)]
    session = store.openai_session("stalls-items")
    works: dict[str, Callable[[], Awaitable[object]]] = {
        f"append_messages of {batch:,}": lambda: store.append_messages("stalls-batch", batch_of),
        f"openai get_items() of {big:,}": session.get_items,
        f"delete_conversation of {big:,}": lambda: store.delete_conversation("stalls-items"),
    }
    found: dict[str, float] = {}
    try:
        for _ in range(big // batch):
            await session.add_items([dict(item) for item in batch_of])
        for name, work in works.items():
            found[name], _ = await meter.measure(work)
            say(f"  {name}: longest stall {found[name] * 1e3:.1f} ms")
    finally:
        await store.close()
    return [
        Row(f"loop stall (us), {name}, postgres", stall * 1e6, "budget (us)", STALL_BUDGET_US,
            1.0, f"<= {STALL_BUDGET_US // 1000} ms", lower_is_better=True)
        for name, stall in found.items()
    ]  # fmt: skip


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    del workdir  # everything lives on the throwaway server
    say(f"postgres settings (every contender): {await server_settings()}")
    rows = await bench_checkpointer(sizes)
    rows += await bench_openai(sizes)
    rows += await bench_conversations(sizes)
    rows += await bench_stalls(sizes)
    return rows


if __name__ == "__main__":
    from bench_harness import run_alone

    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
