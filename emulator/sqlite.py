"""The SQLite emulator of the platform's Blob storage (``sqlite:///path.db``).

One table of blobs, keyed by the blob key. Every unit of work is one
transaction on one connection owned by one worker thread: ``BEGIN
IMMEDIATE`` for writers, so writers in other processes queue on SQLite's lock
(within ``busy_timeout``), a deferred ``BEGIN`` for readers, which see a
snapshot thanks to WAL. Any error rolls the unit back.

``synchronous=NORMAL`` (the default) never corrupts the file and loses no
committed unit when a process dies; a power cut may lose the last units.
``?synchronous=full`` makes every commit durable at the cost of an fsync.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from makers_store.blob import (
    Blob,
    BlobInfo,
    BlobStore,
    Delete,
    Get,
    ListKeys,
    Op,
    Program,
    Put,
    Scan,
    drive_sync,
)
from makers_store.errors import (
    BackendError,
    MemoryValidationError,
    PreconditionFailedError,
    StoreError,
)

from .migrations import migrate

T = TypeVar("T")

_GET = "SELECT etag, size, updated_at, data FROM blobs WHERE key = ?"
_ETAG = "SELECT etag FROM blobs WHERE key = ?"
_UPSERT = (
    "INSERT INTO blobs (key, etag, size, updated_at, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, size = excluded.size, "
    "updated_at = excluded.updated_at, data = excluded.data"
)
_DELETE = "DELETE FROM blobs WHERE key = ?"
SYNCHRONOUS = ("off", "normal", "full", "extra")


def _range_sql(op: ListKeys | Scan) -> tuple[str, list[Any]]:
    columns = "key, etag, size, updated_at" + (", data" if isinstance(op, Scan) else "")
    where: list[str] = []
    params: list[Any] = []
    if op.prefix:
        where.append("key >= ? AND key < ?")
        params += [op.prefix, op.prefix[:-1] + chr(ord(op.prefix[-1]) + 1)]
    if op.start_after is not None:
        where.append("key > ?")
        params.append(op.start_after)
    if op.end_before is not None:
        where.append("key < ?")
        params.append(op.end_before)
    sql = f"SELECT {columns} FROM blobs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY key DESC" if op.reverse else " ORDER BY key"
    if op.limit is not None:
        sql += " LIMIT ?"
        params.append(op.limit)
    return sql, params


class SqliteBlobStore(BlobStore):
    atomic: ClassVar[bool] = True

    def __init__(
        self, path: str | Path, *, synchronous: str = "normal", busy_timeout_ms: int = 30_000
    ) -> None:
        if synchronous.lower() not in SYNCHRONOUS:
            raise MemoryValidationError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}")
        self.path = Path(path)
        self.synchronous = synchronous.lower()
        self.busy_timeout_ms = busy_timeout_ms
        self.schema_version = 0
        self._conn: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="makers-sqlite")
        self._closed = False
        self._pid = os.getpid()
        self._lock = threading.Lock()

    # --- connection (worker thread only) --------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self.busy_timeout_ms / 1000,
                )
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self.synchronous}")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self.schema_version = migrate(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc
            except RuntimeError as exc:
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc
            self._conn = conn
        return self._conn

    def _apply(self, conn: sqlite3.Connection, op: Op) -> Any:
        if isinstance(op, Get):
            row = conn.execute(_GET, (op.key,)).fetchone()
            return None if row is None else Blob(op.key, row[0], row[1], row[2], row[3])
        if isinstance(op, Put):
            if op.if_match is not None or op.if_none_match:
                row = conn.execute(_ETAG, (op.key,)).fetchone()
                if op.if_none_match and row is not None:
                    raise PreconditionFailedError(f"{op.key!r} already exists")
                if op.if_match is not None and (row is None or row[0] != op.if_match):
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            etag = os.urandom(8).hex()
            now = time.time_ns() // 1_000_000
            conn.execute(_UPSERT, (op.key, etag, len(op.data), now, op.data))
            return BlobInfo(op.key, etag, len(op.data), now)
        if isinstance(op, Delete):
            if op.if_match is not None:
                row = conn.execute(_ETAG, (op.key,)).fetchone()
                if row is None or row[0] != op.if_match:
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            return conn.execute(_DELETE, (op.key,)).rowcount > 0
        if isinstance(op, Scan):
            sql, params = _range_sql(op)
            return [Blob(*row) for row in conn.execute(sql, params)]
        if isinstance(op, ListKeys):
            sql, params = _range_sql(op)
            return [BlobInfo(*row) for row in conn.execute(sql, params)]
        raise TypeError(f"unknown blob operation {op!r}")

    def _run_sync(self, program: Program[T], write: bool) -> T:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            program.close()
            raise BackendError(f"SQLite store {self.path}: cannot begin: {exc}") from exc
        try:
            result = drive_sync(program, lambda op: self._apply(conn, op))
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            self._rollback(conn)
            raise BackendError(f"SQLite store {self.path}: {exc}") from exc
        except BaseException:
            self._rollback(conn)
            raise

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is unusable; the error that led here matters
                pass

    # --- BlobStore -------------------------------------------------------

    async def run(self, program: Program[T], *, write: bool) -> T:
        if self._closed:
            program.close()
            raise BackendError(f"SQLite store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_sync, program, write)

    def run_blocking(self, program: Program[T], *, write: bool) -> T:
        """Run a unit from synchronous code without an event loop."""
        return self._executor.submit(self._run_sync, program, write).result()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_connection)
        self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def describe(self) -> dict[str, Any]:
        files = [self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]
        size = sum(f.stat().st_size for f in files if f.exists())
        if self._conn is None and not self._closed:
            try:
                self._executor.submit(self._connection).result()
            except StoreError:
                pass
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "size_bytes": size,
            "schema_version": self.schema_version,
            "journal_mode": "wal",
            "synchronous": self.synchronous,
        }


def from_url(url: str, path: str, options: dict[str, str]) -> BlobStore:
    synchronous = options.pop("synchronous", "normal")
    timeout = options.pop("busy_timeout_ms", "30000")
    if options:
        raise MemoryValidationError(
            f"url {url!r}: unknown option(s) {', '.join(sorted(options))}; "
            "known: synchronous, busy_timeout_ms"
        )
    try:
        busy = int(timeout)
    except ValueError:
        raise MemoryValidationError(f"url {url!r}: busy_timeout_ms must be an integer") from None
    return SqliteBlobStore(path, synchronous=synchronous, busy_timeout_ms=busy)
