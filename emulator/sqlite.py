"""The SQLite emulator of the platform's Blob storage (``sqlite:///path.db``).

One table of blobs, keyed by the blob key. Every unit of work is one
transaction: ``BEGIN IMMEDIATE`` for writers, so writers in other processes
queue on SQLite's lock, a deferred ``BEGIN`` for readers, which see a
snapshot thanks to WAL. Any error rolls the unit back.

A unit first runs inline, on the caller's thread, on a connection that never
waits for a lock: a unit is a few statements and no I/O waits, so this costs
less than a thread hop. If the database is locked by another writer, the unit
runs instead on a worker thread whose connection waits up to ``busy_timeout``,
so the event loop never blocks on another process.

``synchronous=NORMAL`` (the default) never corrupts the file and loses no
committed unit when a process dies; a power cut may lose the last units.
``?synchronous=full`` makes every commit durable at the cost of an fsync.
"""

from __future__ import annotations

import asyncio
import itertools
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
    DeleteMany,
    Entry,
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

from . import migrations
from .sql_ranges import range_query

T = TypeVar("T")

_GET = "SELECT etag, size, updated_at, data FROM blobs WHERE key = ?"
_UPSERT = (
    "INSERT INTO blobs (key, etag, size, updated_at, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, size = excluded.size, "
    "updated_at = excluded.updated_at, data = excluded.data"
)
_CREATE = (
    "INSERT INTO blobs (key, etag, size, updated_at, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (key) DO NOTHING"
)
_REPLACE = (
    "UPDATE blobs SET etag = ?, size = ?, updated_at = ?, data = ? WHERE key = ? AND etag = ?"
)
_DELETE = "DELETE FROM blobs WHERE key = ?"
_DELETE_IF = "DELETE FROM blobs WHERE key = ? AND etag = ?"
_SNAPSHOT = "SELECT 1 FROM blobs LIMIT 1"  # a read that pins the WAL snapshot
SYNCHRONOUS = ("off", "normal", "full", "extra")
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def _range_sql(op: ListKeys | Scan) -> tuple[str, list[Any]]:
    return range_query(op, "blobs", "?")


def _cannot_write(exc: sqlite3.Error) -> bool:
    """SQLITE_CANTOPEN (no ``-shm``/``-wal`` can be created) or SQLITE_READONLY."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (8, 14)


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in _BUSY_CODES or "locked" in str(exc) or "busy" in str(exc)


class _Busy(Exception):
    """The inline connection found the database locked before the unit began."""


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
        self._worker_conn: sqlite3.Connection | None = None
        self._inline_conn: sqlite3.Connection | None = None
        self._inline_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="makers-sqlite")
        self._closed = False
        #: Why the store is open read-only (None: writable); decided on first use.
        self.read_only: str | None = None
        self._read_only_uri = ""
        self._etag_prefix = os.urandom(6).hex() + "-"
        self._etags = itertools.count(1)

    # --- connections -----------------------------------------------------

    def _open(self, busy_timeout_ms: int) -> sqlite3.Connection:
        if self.read_only is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite3.connect(
                self._read_only_uri, uri=True, isolation_level=None, check_same_thread=False
            )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self, busy_timeout_ms: int) -> sqlite3.Connection:
        try:
            return self._open(busy_timeout_ms)
        except (OSError, sqlite3.Error) as exc:
            raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc

    def _worker_connection(self) -> sqlite3.Connection:
        """The worker thread's connection; the first one brings the schema up to
        date, or, when the file cannot be written, opens it read-only."""
        while self._worker_conn is None:
            try:
                conn = self._open(self.busy_timeout_ms)
                try:
                    self.schema_version = self._prepare(conn)
                except BaseException:
                    conn.close()
                    raise
                self._worker_conn = conn
            except sqlite3.OperationalError as exc:
                if _cannot_write(exc) and self.path.is_file() and self._fall_back_to_read_only():
                    continue
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc
            except (OSError, sqlite3.Error, RuntimeError) as exc:
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc
        return self._worker_conn

    def _fall_back_to_read_only(self) -> bool:
        """Choose how to read a store this process cannot write (a read-only
        directory or file). WAL readers need the ``-shm`` file: ``mode=ro``
        works when it exists or can be made; else, with no ``-wal`` file
        either, nobody can be writing (a writer would need to create both), so
        the file is read as ``immutable``. Returns False when neither holds."""
        if self.read_only is not None and "immutable" in self._read_only_uri:
            return False
        wal = Path(f"{self.path}-wal")
        if self.read_only is None:
            self.read_only = "the file or its directory is not writable"
            self._read_only_uri = f"{self.path.resolve().as_uri()}?mode=ro"
            return True
        if wal.exists():
            return False
        self._read_only_uri = f"{self.path.resolve().as_uri()}?immutable=1"
        return True

    def _prepare(self, conn: sqlite3.Connection) -> int:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version == migrations.SCHEMA_VERSION:  # the common case: no write lock to open
            return version
        if self.read_only is not None:
            raise BackendError(
                f"SQLite store {self.path} has schema version {version}, this version of "
                f"makers-store needs {migrations.SCHEMA_VERSION}, and {self.read_only}: "
                "open it once where it can be written to upgrade it"
            )
        self._enable_wal(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = migrations.migrate(conn)
            conn.execute("COMMIT")
        except BaseException:
            self._rollback(conn)
            raise
        return version

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """Switch a new database to WAL. SQLite answers "locked" at once, without
        its busy handler, while another connection (a second process opening
        the same new file) holds a lock: wait for it here, up to busy_timeout."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.005)  # on the worker thread, never on the event loop

    # --- units -----------------------------------------------------------

    def _apply(self, conn: sqlite3.Connection, op: Op) -> Any:
        if type(op) is Get:
            row = conn.execute(_GET, (op.key,)).fetchone()
            return None if row is None else Blob(op.key, *row)
        if type(op) is Put:
            etag = f"{self._etag_prefix}{next(self._etags):x}"
            now = time.time_ns() // 1_000_000
            size = len(op.data)
            if op.if_match is not None:
                cursor = conn.execute(_REPLACE, (etag, size, now, op.data, op.key, op.if_match))
                if cursor.rowcount == 0:
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            elif op.if_none_match:
                if conn.execute(_CREATE, (op.key, etag, size, now, op.data)).rowcount == 0:
                    raise PreconditionFailedError(f"{op.key!r} already exists")
            else:
                conn.execute(_UPSERT, (op.key, etag, size, now, op.data))
            return BlobInfo(op.key, etag, size, now)
        if type(op) is Delete:
            if op.if_match is None:
                return conn.execute(_DELETE, (op.key,)).rowcount > 0
            if conn.execute(_DELETE_IF, (op.key, op.if_match)).rowcount == 0:
                raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            return True
        if type(op) is DeleteMany:
            conn.executemany(_DELETE, [(key,) for key in op.keys])
            return None
        if type(op) is Scan:
            sql, params = _range_sql(op)
            return [Entry(*row) for row in conn.execute(sql, params)]
        if type(op) is ListKeys:
            sql, params = _range_sql(op)
            return [BlobInfo(*row) for row in conn.execute(sql, params)]
        raise TypeError(f"unknown blob operation {op!r}")

    def _begin(self, conn: sqlite3.Connection, write: bool) -> None:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        if not write:
            conn.execute(_SNAPSHOT).fetchall()

    def _run_unit(self, conn: sqlite3.Connection, program: Program[T]) -> T:
        """Drive ``program`` inside the transaction already begun on ``conn``."""
        try:
            result = drive_sync(program, lambda op: self._apply(conn, op))
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            self._rollback(conn)
            if _cannot_write(exc):
                raise BackendError(
                    f"SQLite store {self.path} cannot be written ({exc}): "
                    "writing needs write access to the file and its directory"
                ) from exc
            raise BackendError(f"SQLite store {self.path}: {exc}") from exc
        except BaseException:
            self._rollback(conn)
            raise

    def _run_inline(self, program: Program[T], write: bool) -> T:
        """Run on the caller's thread, or raise _Busy before the unit begins."""
        if self._inline_conn is None:
            self._inline_conn = self._connect(busy_timeout_ms=0)
        conn = self._inline_conn
        try:
            self._begin(conn, write)
        except sqlite3.Error as exc:
            self._rollback(conn)
            if _is_busy(exc):
                raise _Busy from None
            program.close()
            raise BackendError(f"SQLite store {self.path}: cannot begin: {exc}") from exc
        return self._run_unit(conn, program)

    def _refuse_write(self, program: Program[T]) -> BackendError:
        program.close()
        return BackendError(
            f"SQLite store {self.path} is open read-only ({self.read_only}): "
            "writing needs write access to the file and its directory"
        )

    def _run_in_worker(self, program: Program[T], write: bool) -> T:
        try:
            conn = self._worker_connection()
            if write and self.read_only is not None:
                raise self._refuse_write(program)
            self._begin(conn, write)
        except sqlite3.Error as exc:
            program.close()
            raise BackendError(f"SQLite store {self.path}: cannot begin: {exc}") from exc
        except BaseException:
            program.close()
            raise
        return self._run_unit(conn, program)

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
        if write and self.read_only is not None:
            raise self._refuse_write(program)
        if self._worker_conn is not None and self._inline_lock.acquire(blocking=False):
            try:
                return self._run_inline(program, write)
            except _Busy:
                pass  # another writer holds the lock: wait for it off the event loop
            finally:
                self._inline_lock.release()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_in_worker, program, write)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._inline_lock:
            if self._inline_conn is not None:
                self._inline_conn.close()
                self._inline_conn = None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_worker)
        self._executor.shutdown(wait=True)

    def _close_worker(self) -> None:
        if self._worker_conn is not None:
            self._worker_conn.close()
            self._worker_conn = None

    def describe(self) -> dict[str, Any]:
        files = [self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]
        size = sum(f.stat().st_size for f in files if f.exists())
        if self._worker_conn is None and not self._closed:
            try:
                self._executor.submit(self._worker_connection).result()
            except StoreError:
                pass
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "size_bytes": size,
            "schema_version": self.schema_version,
            "journal_mode": "wal",
            "read_only": self.read_only,
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
