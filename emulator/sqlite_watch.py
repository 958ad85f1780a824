"""Change detection on a SQLite store, for :meth:`SqliteBlobStore.watch_writes`.

SQLite has no change notification across processes, but ``PRAGMA
data_version`` on a connection changes whenever another connection (of any
process) commits, and reading it costs microseconds: it reads the
shared-memory header, takes no lock and reads no table. A watcher holds one
read-only connection of its own and reads it every :data:`CHECK_INTERVAL`.
It cannot tell which keys changed, so it yields None and the watcher compares
a listing (see :mod:`makers_store.watch`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

#: How often the data version is read (seconds): the latency of a change.
CHECK_INTERVAL = 0.1


def _connect(path: Path) -> sqlite3.Connection | None:
    if not path.exists():
        return None
    try:
        return sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0, check_same_thread=False
        )
    except sqlite3.Error:
        return None


def _version(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("PRAGMA data_version").fetchone()
    except sqlite3.Error:  # busy a moment (a checkpoint): look again next time
        return None
    return int(row[0])


async def watch_data_version(
    path: Path, poll_interval: float
) -> AsyncIterator[frozenset[str] | None]:
    """Yield an empty set, then None after every commit by another connection.
    Until the file exists, look for it every ``poll_interval`` seconds."""
    conn = _connect(path)
    try:
        version = None if conn is None else await asyncio.to_thread(_version, conn)
        yield frozenset()
        while True:
            if conn is None:
                await asyncio.sleep(poll_interval)
                conn = _connect(path)
                if conn is not None:
                    version = await asyncio.to_thread(_version, conn)
                    yield None  # it was created: everything is new
                continue
            await asyncio.sleep(CHECK_INTERVAL)
            now = await asyncio.to_thread(_version, conn)
            if now is not None and now != version:
                version = now
                yield None
    finally:
        if conn is not None:
            conn.close()
