"""Build bench_search's store of many messages fast: the rows the store's
own bulk program writes (bench_search._build: meta, messages and index
entries with the store's records and keys), inserted straight into a SQLite
file the store created, then the search index built in one pass (as
``index rebuild`` does). For sizes where writing through units of work
takes hours on the development machine (4,000,000 messages).

    .venv/bin/python tests/bench/bench_search_bulk.py --messages 4000000
    .venv/bin/python tests/bench/bench_search.py --sqlite-only --messages 4000000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import time
from typing import Any

import bench_search
from bench_harness import say, sqlite_url

import makers_store
from makers_store.blob import drive_sync
from makers_store.blob_ops import BlobInfo, Put


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=4_000_000)
    args = parser.parse_args()
    messages = args.messages
    bench_search.CACHE.mkdir(exist_ok=True)
    path = bench_search.CACHE / f"search-{messages}.db"
    for stale in bench_search.CACHE.glob(f"search-{messages}.*"):
        stale.unlink()

    async def create() -> int:
        async with makers_store.open_store(sqlite_url(path)) as store:
            await store.append_message("first", "user", "x")  # creates the file
            await store.delete_conversation("first")
            return int(store.runner.clock())

    now = asyncio.run(create())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = off")
    # inserted here, outside the blob table, so nothing is marked: indexed in one pass below
    rng = random.Random(33)
    words, weights = bench_search._vocabulary(rng)
    conversations = messages // bench_search.PER_CONVERSATION
    rare = set(rng.sample(range(messages), max(1, messages // bench_search.RARE_EVERY)))
    start = time.perf_counter()
    batch = bench_search.BUILD_BATCH * 5
    for first in range(0, conversations, batch):
        count = min(batch, conversations - first)
        texts = []
        for index in range(first * 20, (first + count) * 20):
            chosen = rng.choices(words, weights, k=25)
            if index in rare:
                chosen[rng.randrange(25)] = bench_search.RARE.capitalize()
            texts.append(" ".join(chosen))
        rows: list[tuple[str, str, int, int, bytes]] = []

        def collect(op: Any, rows: list[tuple[str, str, int, int, bytes]] = rows) -> object:
            assert isinstance(op, Put)
            rows.append((op.key, f"bulk-{len(rows)}", len(op.data), now, bytes(op.data)))
            return BlobInfo(op.key, "", len(op.data), now)

        drive_sync(bench_search._build(first, count, now, texts), collect)
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO blobs VALUES (?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        if first % 20_000 == 0:
            say(f"  {first * 20:,} messages, {time.perf_counter() - start:.0f} s")
    conn.close()
    say(f"  inserted {messages:,} messages in {time.perf_counter() - start:.0f} s")

    async def index() -> None:
        async with makers_store.open_store(sqlite_url(path)) as store:
            began = time.perf_counter()
            indexed = await store.admin.rebuild_search_index()
            say(f"  indexed {indexed:,} in {time.perf_counter() - began:.0f} s")

    asyncio.run(index())
    (bench_search.CACHE / f"search-{messages}.done").touch()
    say(f"  {path} ({path.stat().st_size / 1e9:.1f} GB)")


if __name__ == "__main__":
    main()
