"""LangGraph store speed: ``store.langgraph_store`` against LangGraph's own
stores on the same engine (issue 13): ``AsyncSqliteStore`` on a SQLite file
and ``AsyncPostgresStore`` on the throwaway PostgreSQL server of the tests
(tests/servers/postgres.py), side by side in one process, alternating rounds.

Durability is the same on both sides and printed: SQLite WAL with
``synchronous=NORMAL`` (ours by default; the peer's connection is set so),
and one PostgreSQL server for both (``fsync=off``, ``synchronous_commit=off``).
Both stores hold the same items: namespaces ``("bench", "user-N", "memories")``
with small JSON memories.

Figures (each ours vs the peer, on each engine):

* ``list_namespaces(prefix=("bench",))`` with 2,000 items in 20 namespaces;
  and ours at 8,000 items against ours at 500 (cost must not grow with items);
* ``search(namespace, limit=10)`` with 400 items in the namespace; and ours
  at 400 items per namespace against ours at 100;
* ``put`` of an existing key (an update) and of a new key;
* ``get`` for information;
* on PostgreSQL, the engine's floor under ``put``: the fewest rows our put
  must change (the item, its new recency copy, the old copy's removal), sent
  raw as one statement, against the peer's one-row upsert sent raw. It bounds
  what any client of this layout can reach against the peer (the ``put`` rows
  above cannot pass while it is below 1).

Run alone with ``python tests/bench/bench_langgraph_store.py [--quick]``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_harness import QUOTA, Row, Sizes, compare, run_alone, say, sqlite_url
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.postgres.aio import AsyncPostgresStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

import makers_store
from tests.servers.postgres import postgres_url, server


@dataclass(frozen=True)
class Shape:
    namespaces: int  # namespaces in the list_namespaces store
    list_items: int  # items among them (the peer comparison)
    list_small: int  # items in the small / large stores of the growth figure
    list_large: int
    search_small: int  # items per namespace in the small / large search stores
    search_large: int


FULL_SHAPE = Shape(
    namespaces=20,
    list_items=2_000,
    list_small=500,
    list_large=8_000,
    search_small=100,
    search_large=400,
)
QUICK_SHAPE = Shape(
    namespaces=5, list_items=100, list_small=50, list_large=200, search_small=20, search_large=40
)

PREFIX = ("bench",)
BATCH = 200  # puts per batch while populating


def namespace(index: int) -> tuple[str, ...]:
    return ("bench", f"user-{index}", "memories")


def memory(index: int) -> dict[str, Any]:
    return {
        "text": f"The user prefers short answers and works on project {index % 17}.",
        "kind": "preference" if index % 3 else "fact",
        "n": index,
    }


async def populate(store: BaseStore, items: int, namespaces: int) -> None:
    """``items`` items spread round-robin over ``namespaces`` namespaces."""
    ops = [
        PutOp(namespace(index % namespaces), f"memory-{index:06d}", memory(index))
        for index in range(items)
    ]
    for start in range(0, len(ops), BATCH):
        await store.abatch(ops[start : start + BATCH])


# --- the engines ------------------------------------------------------------


Engine = Callable[[str], Any]  # label -> async context manager of (ours, peer)


@asynccontextmanager
async def sqlite_pair(workdir: Path, label: str) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    ours = makers_store.open_store(sqlite_url(workdir / f"lgstore-{label}-ours.db"))
    async with AsyncSqliteStore.from_conn_string(str(workdir / f"lgstore-{label}-peer.db")) as peer:
        await peer.setup()
        await peer.conn.execute("PRAGMA journal_mode = WAL")
        await peer.conn.execute("PRAGMA synchronous = NORMAL")
        try:
            yield ours.langgraph_store, peer
        finally:
            await ours.close()


_peer_schemas = itertools.count(1)


@asynccontextmanager
async def postgres_pair(label: str) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    import psycopg

    ours = makers_store.open_store(postgres_url())
    schema = f"lgpeer_{label}_{next(_peer_schemas)}"
    base = server().base_url
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    peer_url = f"{base}?options=-csearch_path%3D{schema}"
    async with AsyncPostgresStore.from_conn_string(peer_url) as peer:
        await peer.setup()
        try:
            yield ours.langgraph_store, peer
        finally:
            await ours.close()


# --- the figures ------------------------------------------------------------


def lister(store: BaseStore, expected: int) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        found = await store.alist_namespaces(prefix=PREFIX, limit=100)
        assert len(found) == expected, found

    return call


def searcher(store: BaseStore, where: tuple[str, ...]) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        found = await store.asearch(where, limit=10)
        assert len(found) == 10, found

    return call


def first_keys(shape: Shape) -> list[str]:
    """Keys of up to 50 items :func:`populate` put in ``namespace(0)``."""
    return [f"memory-{i:06d}" for i in range(0, shape.list_items, shape.namespaces)][:50]


def getter(store: BaseStore, keys: list[str]) -> Callable[[], Awaitable[None]]:
    counter = itertools.count()

    async def call() -> None:
        key = keys[next(counter) % len(keys)]
        assert await store.aget(namespace(0), key) is not None

    return call


def updater(store: BaseStore, keys: list[str]) -> Callable[[], Awaitable[None]]:
    counter = itertools.count()

    async def call() -> None:
        index = next(counter)
        await store.aput(namespace(0), keys[index % len(keys)], memory(index))

    return call


def creator(store: BaseStore) -> Callable[[], Awaitable[None]]:
    counter = itertools.count()

    async def call() -> None:
        index = next(counter)
        await store.aput(("bench", "fresh", "memories"), f"new-{index:08d}", memory(index))

    return call


def rows_for(engine: str, peer: str, found: dict[str, dict[str, float]], shape: Shape) -> list[Row]:
    n, items = shape.namespaces, shape.list_items
    return [
        Row(
            f"lg store list_namespaces, {items:,} items/{n} ns ({engine})",
            found["list"]["ours"],
            f"{peer}.alist_namespaces",
            found["list"]["peer"],
            2.0,
            ">= 2",
        ),
        Row(
            f"lg store list_namespaces at {shape.list_large:,} items ({engine})",
            found["list growth"]["large"],
            f"same at {shape.list_small:,} items",
            found["list growth"]["small"],
            1 / 1.5,
            ">= 0.67 (cost <= 1.5x)",
        ),
        Row(
            f"lg store search(ns, limit=10), {shape.search_large} in ns ({engine})",
            found["search"]["ours"],
            f"{peer}.asearch",
            found["search"]["peer"],
            2.0,
            ">= 2",
        ),
        Row(
            f"lg store search at {shape.search_large}/ns ({engine})",
            found["search growth"]["large"],
            f"same at {shape.search_small}/ns",
            found["search growth"]["small"],
            1 / 1.5,
            ">= 0.67 (cost <= 1.5x)",
        ),
        Row(
            f"lg store put, existing key ({engine})",
            found["update"]["ours"],
            f"{peer}.aput",
            found["update"]["peer"],
            1.0,
            ">= 1",
        ),
        Row(
            f"lg store put, new key ({engine})",
            found["create"]["ours"],
            f"{peer}.aput",
            found["create"]["peer"],
            1.0,
            ">= 1",
        ),
        Row(
            f"lg store get ({engine})",
            found["get"]["ours"],
            f"{peer}.aget",
            found["get"]["peer"],
            None,
            "info",
        ),
    ]


async def measure(
    pair: Callable[[str], Any], shape: Shape, sizes: Sizes
) -> dict[str, dict[str, float]]:
    """Every figure on one engine; ``pair(label)`` opens (ours, peer) over
    fresh databases."""
    found: dict[str, dict[str, float]] = {}
    async with AsyncExitStack() as stack:
        ours, peer = await stack.enter_async_context(pair("list"))
        for store in (ours, peer):
            await populate(store, shape.list_items, shape.namespaces)
        n = shape.namespaces
        found["list"] = await compare({"ours": lister(ours, n), "peer": lister(peer, n)}, sizes)
        keys = first_keys(shape)
        found["get"] = await compare(
            {"ours": getter(ours, keys), "peer": getter(peer, keys)}, sizes
        )
        found["update"] = await compare(
            {"ours": updater(ours, keys), "peer": updater(peer, keys)}, sizes
        )
        found["create"] = await compare({"ours": creator(ours), "peer": creator(peer)}, sizes)

    async with AsyncExitStack() as stack:
        small, _ = await stack.enter_async_context(pair("lsmall"))
        large, _ = await stack.enter_async_context(pair("llarge"))
        await populate(small, shape.list_small, n)
        await populate(large, shape.list_large, n)
        found["list growth"] = await compare(
            {"small": lister(small, n), "large": lister(large, n)}, sizes
        )

    async with AsyncExitStack() as stack:
        small, _ = await stack.enter_async_context(pair("ssmall"))
        large, peer = await stack.enter_async_context(pair("slarge"))
        # a few namespaces, so the search prefix is one namespace among others
        for store in (small, large, peer):
            per_namespace = shape.search_small if store is small else shape.search_large
            await populate(store, per_namespace * 4, 4)
        where = namespace(1)
        found["search"] = await compare(
            {"ours": searcher(large, where), "peer": searcher(peer, where)}, sizes
        )
        found["search growth"] = await compare(
            {"small": searcher(small, where), "large": searcher(large, where)}, sizes
        )
    return found


# The fewest rows a put of an existing key changes with the derived index
# beside the item, as one statement (data-modifying CTEs: one round trip,
# one implicit transaction), on a table shaped like ours; and the peer's
# statement shape: one row.
FLOOR_TABLE = "CREATE TABLE floor (key text PRIMARY KEY, etag text, data bytea)"
ONE_ROW = (
    "INSERT INTO floor VALUES (%s, 'e', %s)"
    " ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, data = excluded.data"
)
ITEM_AND_INDEX = (
    "WITH item AS (" + ONE_ROW + "), copy AS ("
    "INSERT INTO floor VALUES (%s, 'e', %s)"
    " ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, data = excluded.data)"
    " DELETE FROM floor WHERE key = %s"
)


async def engine_floor(sizes: Sizes) -> dict[str, float]:
    """Raw psycopg on the shared server: the peer's one-row upsert against
    the three row changes of our put, each as one statement per call."""
    import psycopg

    schema = f"lgfloor_{next(_peer_schemas)}"
    base = server().base_url
    data = bytes(300)
    ticks = itertools.count()
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.execute(f"SET search_path = {schema}")
        await conn.execute(FLOOR_TABLE)

        async def one_row() -> None:
            async with conn.pipeline():
                await conn.execute(ONE_ROW, (f"k{next(ticks) % 50}", data))

        async def item_and_index() -> None:
            tick = next(ticks)
            params = (f"k{tick % 50}", data, f"c{tick}", data, f"c{tick - 1}")
            async with conn.pipeline():
                await conn.execute(ITEM_AND_INDEX, params)

        return await compare({"ours": item_and_index, "peer": one_row}, sizes)


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    shape = QUICK_SHAPE if sizes.long_conversation < QUOTA else FULL_SHAPE  # quick, smoke
    say(
        "langgraph store: ours vs AsyncSqliteStore (SQLite files, both WAL, synchronous=NORMAL) "
        "and vs AsyncPostgresStore (one throwaway server: fsync=off, synchronous_commit=off)"
    )
    on_sqlite = await measure(lambda label: sqlite_pair(workdir, label), shape, sizes)
    on_postgres = await measure(postgres_pair, shape, sizes)
    floor = await engine_floor(sizes)
    return [
        *rows_for("sqlite", "AsyncSqliteStore", on_sqlite, shape),
        *rows_for("postgres", "AsyncPostgresStore", on_postgres, shape),
        Row(
            "floor: put's 3 row changes, 1 statement, raw (postgres)",
            floor["ours"],
            "the peer's 1-row upsert, raw",
            floor["peer"],
            None,
            "info (ceiling of put's ratio)",
        ),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
