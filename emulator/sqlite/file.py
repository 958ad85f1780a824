"""Connections to the SQLite emulator's file: opening, the schema, read-only use.

The first connection (the worker thread's) brings the schema up to date with
the migrations (switching a new file to WAL first), or, when this process
cannot write the file, decides how to read it: see
:meth:`SqliteFile.fall_back_to_read_only`.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from makers_store.errors import BackendError

from . import migrations

_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
#: The auto-vacuum mode new files get: free pages stay until a vacuum gives
#: them back in short transactions (:mod:`.sqlite_vacuum`). Its cost to writes
#: (pointer-map pages) measured at about 1% of an insert-and-commit loop.
AUTO_VACUUM = "INCREMENTAL"


def cannot_write(exc: sqlite3.Error) -> bool:
    """SQLITE_CANTOPEN (no ``-shm``/``-wal`` can be created) or SQLITE_READONLY."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (8, 14)


def is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in _BUSY_CODES or "locked" in str(exc) or "busy" in str(exc)


def rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:  # the connection is unusable; the error that led here matters
            pass


class SqliteFile:
    """The database file, how to connect to it, and what opening it found."""

    def __init__(self, path: Path, synchronous: str, busy_timeout_ms: int) -> None:
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.schema_version = 0
        #: Why the store is open read-only (None: writable); decided on first use.
        self.read_only: str | None = None
        self._read_only_uri = ""

    def open(self, busy_timeout_ms: int, *pragmas: str) -> sqlite3.Connection:
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
            for pragma in pragmas:
                conn.execute(f"PRAGMA {pragma}")
        except BaseException:
            conn.close()
            raise
        return conn

    def connect(self, busy_timeout_ms: int, *pragmas: str) -> sqlite3.Connection:
        """:meth:`open`, its errors as BackendError."""
        try:
            return self.open(busy_timeout_ms, *pragmas)
        except (OSError, sqlite3.Error) as exc:
            raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc

    def connect_first(self) -> sqlite3.Connection:
        """The first connection (it waits up to busy_timeout for locks): it
        brings the schema up to date, or, when the file cannot be written,
        opens it read-only."""
        while True:
            try:
                conn = self.open(self.busy_timeout_ms)
                try:
                    self.schema_version = self._prepare(conn)
                except BaseException:
                    conn.close()
                    raise
                return conn
            except sqlite3.OperationalError as exc:
                if cannot_write(exc) and self.path.is_file() and self.fall_back_to_read_only():
                    continue
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc
            except (OSError, sqlite3.Error, RuntimeError) as exc:
                raise BackendError(f"cannot open SQLite store {self.path}: {exc}") from exc

    def fall_back_to_read_only(self) -> bool:
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
        # Before the file's first page exists (the switch to WAL writes it):
        # later, only a full VACUUM can set it (see .sqlite_vacuum). A file
        # that has pages already ignores it.
        conn.execute(f"PRAGMA auto_vacuum = {AUTO_VACUUM}")
        self._enable_wal(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = migrations.migrate(conn)
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
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
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.005)  # on the worker thread, never on the event loop
