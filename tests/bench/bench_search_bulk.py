"""Build bench_search's store of many messages fast, and measure its queries.

The rows are the ones the store's own bulk program writes
(bench_search._build: meta, messages and index entries with the store's
records and keys), inserted straight into the blob table of a store the
store created, so nothing is indexed on the way; the search index is then
built in one pass, as ``index rebuild`` does. For sizes where writing
through units of work takes hours on the development machine (4,000,000
messages).

SQLite keeps the built store (bench_search's cache) for
``bench_search.py --sqlite-only``; PostgreSQL builds into a throwaway server
(tests/servers/postgres.py) and measures bench_search's queries on it in
the same run, since the server is gone when the script ends:

    .venv/bin/python tests/bench/bench_search_bulk.py --messages 4000000
    .venv/bin/python tests/bench/bench_search.py --sqlite-only --messages 4000000
    .venv/bin/python tests/bench/bench_search_bulk.py --postgres --messages 4000000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import bench_search
from bench_harness import say, sqlite_url, table

import makers_store
from makers_store.blob import drive_sync
from makers_store.blob_ops import BlobInfo, Put

#: (key, etag, size, updated_at, data): a row of either backend's blob table.
BlobRow = tuple[str, str, int, int, bytes]
#: Conversations generated per batch of rows.
BATCH = bench_search.BUILD_BATCH * 5


def blob_rows(messages: int, now: int) -> Iterator[list[BlobRow]]:
    """bench_search's store, batch by batch, with the same texts and rare hits."""
    rng = random.Random(33)
    words, weights = bench_search._vocabulary(rng)
    per = bench_search.PER_CONVERSATION
    conversations = messages // per
    rare = set(rng.sample(range(messages), max(1, messages // bench_search.RARE_EVERY)))
    start = time.perf_counter()
    for first in range(0, conversations, BATCH):
        count = min(BATCH, conversations - first)
        texts = []
        for index in range(first * per, (first + count) * per):
            chosen = rng.choices(words, weights, k=25)
            if index in rare:
                chosen[rng.randrange(25)] = bench_search.RARE.capitalize()
            texts.append(" ".join(chosen))
        rows: list[BlobRow] = []

        def collect(op: Any, rows: list[BlobRow] = rows, first: int = first) -> object:
            assert isinstance(op, Put)
            rows.append((op.key, f"bulk-{first}-{len(rows)}", len(op.data), now, bytes(op.data)))
            return BlobInfo(op.key, "", len(op.data), now)

        drive_sync(bench_search._build(first, count, now, texts), collect)
        yield rows
        if first % 20_000 == 0:
            say(f"  {first * per:,} messages, {time.perf_counter() - start:.0f} s")
    say(f"  inserted {messages:,} messages in {time.perf_counter() - start:.0f} s")


async def _created(url: str) -> int:
    """Open the store at ``url`` once (its schema made), empty; the store's clock."""
    async with makers_store.open_store(url) as store:
        await store.append_message("first", "user", "x")
        await store.delete_conversation("first")
        return int(store.runner.clock())


async def _rebuild_index(url: str) -> None:
    async with makers_store.open_store(url) as store:
        began = time.perf_counter()
        indexed = await store.admin.rebuild_search_index()
        say(f"  indexed {indexed:,} in {time.perf_counter() - began:.0f} s")


def build_sqlite(messages: int) -> None:
    path = bench_search.CACHE / f"search-{messages}.db"
    for stale in bench_search.CACHE.glob(f"search-{messages}.*"):
        stale.unlink()
    now = asyncio.run(_created(sqlite_url(path)))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = off")
    # inserted here, outside the blob table's code, so nothing is marked
    for rows in blob_rows(messages, now):
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO blobs VALUES (?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    conn.close()
    asyncio.run(_rebuild_index(sqlite_url(path)))
    (bench_search.CACHE / f"search-{messages}.done").touch()
    say(f"  {path} ({path.stat().st_size / 1e9:.1f} GB)")


def build_postgres(messages: int) -> str:
    """A throwaway server's store of ``messages`` messages, indexed; its URL."""
    import psycopg

    from tests.servers.postgres import postgres_url

    url = postgres_url()
    now = asyncio.run(_created(url))
    base, schema = url.split("?schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        statement = f'COPY "{schema}".blobs (key, etag, size, updated_at, data) FROM STDIN'

        def copy_rows(rows: list[BlobRow]) -> None:
            with conn.cursor() as cursor, cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)

        for rows in blob_rows(messages, now):
            copy_rows(rows)
        conn.execute(f'ANALYZE "{schema}".blobs')
    asyncio.run(_rebuild_index(url))
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'VACUUM ANALYZE "{schema}".search_rows')
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    say(f"  database {size[0] / 1e9 if size else 0:.2f} GB")
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=4_000_000)
    parser.add_argument(
        "--postgres", action="store_true", help="build on a throwaway PostgreSQL and measure there"
    )
    args = parser.parse_args()
    bench_search.CACHE.mkdir(exist_ok=True)
    if not args.postgres:
        build_sqlite(args.messages)
        return
    url = build_postgres(args.messages)
    rows = asyncio.run(bench_search.query_rows(url, "postgres", args.messages, scan=False))
    print("\n".join(table(rows, False)))


if __name__ == "__main__":
    main()
