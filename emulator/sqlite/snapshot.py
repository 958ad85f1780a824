"""Whole-file copies of a SQLite store for snapshots (``SqliteBlobStore.save_file_copy``
and ``restore_file_copy``; the rules: :mod:`makers_store.maintenance.snapshots`).

* **Save**: the database file and its WAL are copied as files (``cp``'s
  speed: the kernel copies them) while this connection holds the write lock,
  so no one commits meanwhile: the copy is the store as of one commit. Other
  processes keep reading (WAL); their writers wait for the copy, through their
  busy timeout (about a second per GB, measured). A checkpoint may copy WAL
  frames into the database file during the copy; every page it writes is in
  the copied WAL too, which SQLite reads first when the copy is opened (and
  then folds into the copy: one file). A store open read-only is copied with
  SQLite's online backup instead (one read transaction, slower).
* **Restore**: SQLite's online backup from the snapshot (opened
  ``immutable``: nobody writes a finished snapshot) into the store, in one
  step: one write transaction of the store's own. Other connections
  (``serve``'s workers, a Studio) keep theirs and read the restored store
  from their next transaction on; a restore that fails or is killed is rolled
  back as any transaction is (WAL recovery ignores frames of an uncommitted
  one), so the store reads as it was or as the snapshot, never a mix. The
  pages go through the WAL, then into the file: the data is written twice,
  which is what an atomic restore in place costs (measured in
  docs/lifecycle.md, "Snapshots": a system call per page each way, about
  0.15x ``cp``). Tried and measured without gain: ``synchronous=OFF`` on
  this connection (a WAL commit at NORMAL syncs nothing already; the cost is
  the frames, not the syncs), a 2 GB page cache, ``mmap_size`` on both files.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from makers_store.errors import BackendError, MemoryValidationError

from .file import SqliteFile, rollback
from .vacuum import CHECKPOINT_WAIT_MS


def _pragma(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute(f"PRAGMA {name}").fetchone()[0])


def save_copy(file: SqliteFile, destination: Path) -> None:
    """Copy the store ``file`` into the new database file ``destination``."""
    if file.read_only is not None:  # no write lock to take: SQLite's backup, one read transaction
        _backup(file, destination)
        return
    conn = file.connect(file.busy_timeout_ms)
    try:
        _fold_wal(conn, file.busy_timeout_ms)  # the WAL to copy: what was written since
        # The write lock: nobody commits until the files are copied, so the
        # WAL neither grows nor starts over. A checkpoint may still copy WAL
        # frames into the database file meanwhile; every page it writes is
        # in the copied WAL too, which takes precedence when the copy is opened.
        conn.execute("BEGIN IMMEDIATE")
        try:
            shutil.copyfile(file.path, destination)
            wal = Path(f"{file.path}-wal")
            if wal.is_file() and wal.stat().st_size:
                shutil.copyfile(wal, f"{destination}-wal")
        finally:
            rollback(conn)
    except (OSError, sqlite3.Error) as exc:  # a full disk, among others
        raise BackendError(f"SQLite store {file.path}: copying to {destination}: {exc}") from exc
    finally:
        conn.close()
    try:  # fold the copied WAL into the copy: one file (SQLite recovers the WAL on opening)
        copy = sqlite3.connect(destination, isolation_level=None)
        try:
            copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            copy.close()  # the last connection: the empty WAL is removed
    except (OSError, sqlite3.Error) as exc:
        raise BackendError(f"{destination}: {exc}") from exc


def _fold_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Copy the WAL into the database file and empty it, waiting at most
    CHECKPOINT_WAIT_MS for other connections (else it is left for a later
    checkpoint: correct either way, only bigger)."""
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")


def _backup(file: SqliteFile, destination: Path) -> None:
    source = file.connect(file.busy_timeout_ms)
    try:
        target = sqlite3.connect(destination, isolation_level=None)
        try:
            source.backup(target)  # one step: one read transaction, a consistent copy
        finally:
            target.close()
    except sqlite3.Error as exc:
        raise BackendError(f"SQLite store {file.path}: copying to {destination}: {exc}") from exc
    finally:
        source.close()


#: The page cache of the restoring connection (KiB): pages the backup copies
#: stay in memory until the commit writes them to the WAL in one pass
#: (measured: half the time of the default 2,000 pages on a 1 GB store).
RESTORE_CACHE_KIB = 256 * 1024


def restore_copy(file: SqliteFile, source: Path) -> None:
    """Replace everything the store ``file`` holds by the database ``source``
    (a SQLite store file of the same schema), in one transaction."""
    if file.read_only is not None:
        raise BackendError(
            f"SQLite store {file.path} is open read-only ({file.read_only}): cannot restore"
        )
    target = file.connect(file.busy_timeout_ms, f"cache_size = -{RESTORE_CACHE_KIB}")
    try:
        snapshot = sqlite3.connect(
            f"{source.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None
        )
        try:
            _check_compatible(snapshot, target, source)
            snapshot.backup(target)  # one step: one write transaction of the store
        finally:
            snapshot.close()
        # Fold the restored pages into the file now, not in the next writer's commit.
        _fold_wal(target, file.busy_timeout_ms)
    except sqlite3.Error as exc:
        raise BackendError(f"SQLite store {file.path}: restoring {source}: {exc}") from exc
    finally:
        target.close()


def _check_compatible(
    snapshot: sqlite3.Connection, target: sqlite3.Connection, source: Path
) -> None:
    """A WAL database takes a backup only of its own page size; a snapshot of
    another schema version would need the migrations the store's open
    connections already ran."""
    theirs, ours = _pragma(snapshot, "user_version"), _pragma(target, "user_version")
    if theirs != ours:
        raise MemoryValidationError(
            f"{source} has schema version {theirs}, the store {ours}: open the snapshot "
            "once with this version (makers-store --store sqlite:///PATH info) to upgrade it"
        )
    theirs, ours = _pragma(snapshot, "page_size"), _pragma(target, "page_size")
    if theirs != ours:
        raise MemoryValidationError(
            f"{source} has pages of {theirs} bytes, the store {ours}: restore it into a "
            "new store file, or with makers-store copy"
        )
