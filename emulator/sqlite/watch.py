"""Change detection on a SQLite store, for :meth:`SqliteBlobStore.watch_writes`.

SQLite has no change notification across processes, but ``PRAGMA
data_version`` on a connection changes whenever another connection (of any
process) commits, and reading it costs microseconds: it reads the
shared-memory header, takes no lock and reads no table. A watcher holds one
read-only connection of its own and reads it every :data:`CHECK_INTERVAL`.
It cannot tell which keys changed, so it yields None and the watcher compares
a listing (see :mod:`makers_store.api.watch`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

#: How often the data version is read (seconds): the latency of a change.
CHECK_INTERVAL = 0.1


class _VersionReader:
    """The watcher's read-only connection. Reads run in a worker thread (a
    read may touch the file); the connection is closed only when no read is
    running: closing a sqlite3 connection while another thread executes on it
    crashes the process (the Studio's SSE streams did, when a page went away
    during a read)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path) -> _VersionReader | None:
        if not path.exists():
            return None
        try:
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0, check_same_thread=False
            )
        except sqlite3.Error:
            return None
        return cls(conn)

    def version(self) -> int | None:
        """The data version (None: closed, or busy a moment, as in a checkpoint)."""
        with self._lock:
            if self._conn is None:
                return None
            try:
                row = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error:
                return None
            return int(row[0])

    def close(self) -> None:
        """Waits for a running read (microseconds: the connection never waits
        for a lock, ``timeout=0``); a read started later sees it closed."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


async def watch_data_version(
    path: Path, poll_interval: float
) -> AsyncIterator[frozenset[str] | None]:
    """Yield an empty set, then None after every commit by another connection.
    Until the file exists, look for it every ``poll_interval`` seconds."""
    reader = _VersionReader.open(path)
    try:
        version = None if reader is None else await asyncio.to_thread(reader.version)
        yield frozenset()
        while True:
            if reader is None:
                await asyncio.sleep(poll_interval)
                reader = _VersionReader.open(path)
                if reader is not None:
                    version = await asyncio.to_thread(reader.version)
                    yield None  # it was created: everything is new
                continue
            await asyncio.sleep(CHECK_INTERVAL)
            now = await asyncio.to_thread(reader.version)
            if now is not None and now != version:
                version = now
                yield None
    finally:
        if reader is not None:  # a cancelled read may still run in its thread
            reader.close()
