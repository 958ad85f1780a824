"""Giving back a SQLite store's free pages (``SqliteBlobStore.vacuum``), and
telling how many there are (``describe()``'s ``reclaimable_bytes``).

Deleted blobs leave their pages on SQLite's free list; the file keeps its
size. The store gives them back while staying readable by other processes:

* A file in ``auto_vacuum=INCREMENTAL`` mode (every file this version
  creates: :data:`.sqlite_file.AUTO_VACUUM`) runs ``PRAGMA
  incremental_vacuum(N)`` in write transactions of at most
  :data:`CHUNK_PAGES` pages each. Each moves pages from the file's end into
  free slots and cuts the end off; readers (WAL) never wait for it, and a
  writer waits for one chunk at most, through its usual busy timeout.
  A passive checkpoint after each chunk keeps the WAL from growing by the
  pages moved.
* A file made by an older version has ``auto_vacuum=NONE``, which only a full
  ``VACUUM`` can change: its first vacuum sets ``INCREMENTAL`` and runs one
  (it gives back every free page at once). Readers still read meanwhile
  (WAL); writers wait for the whole rewrite, up to their busy timeout, so
  run that first one while the store is quiet. A migration could not do it:
  migrations run inside the opening transaction, where ``VACUUM`` cannot.
* Then a ``TRUNCATE`` checkpoint copies the WAL into the file, which is when
  the file on disk actually shrinks, and empties the WAL. It waits at most
  :data:`CHECKPOINT_WAIT_MS` for the write lock and for readers of older
  snapshots (new writers wait meanwhile). On a store that other processes
  read and write without pause it may not get them: the file then shrinks
  at a later checkpoint that finds a quiet moment (the store's own writers
  run them, or the next vacuum), and the report says so.

The sizes reported are the database's, ``page_count * page_size``, as every
new reader sees it once the vacuum committed: what the vacuum gave back is
exact there, whatever the other processes do. The file on disk, and the
WAL beside it, follow at the checkpoint (the WAL can grow meanwhile by the
pages moved, while readers keep it from starting over); the note gives
their size.

Nothing here changes a row: ``VACUUM`` and ``incremental_vacuum`` only move
pages.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from makers_store.blob import VacuumReport
from makers_store.errors import BackendError

from .file import AUTO_VACUUM, SqliteFile, rollback

#: Free pages one incremental-vacuum transaction gives back at most (8 MB at
#: the default 4 KB page): tens of milliseconds of a writer's wait.
CHUNK_PAGES = 2048
#: How long the final checkpoint waits for readers of older snapshots; new
#: writers wait behind it, so it stays well inside their busy timeout.
CHECKPOINT_WAIT_MS = 1000
_INCREMENTAL = 2  # PRAGMA auto_vacuum's answer for INCREMENTAL


def file_bytes(path: Path) -> int:
    """The store's size on disk: the database, its WAL and shared-memory files."""
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return sum(f.stat().st_size for f in files if f.exists())


def database_bytes(conn: sqlite3.Connection) -> int:
    """The database's size as the newest snapshot sees it: pages times page size."""
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    return pages * int(conn.execute("PRAGMA page_size").fetchone()[0])


def free_pages(conn: sqlite3.Connection) -> tuple[int, int]:
    """(pages on the free list, page size)."""
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    return free, page


def space_facts(conn: sqlite3.Connection) -> dict[str, object]:
    """``describe()``'s facts about free space: what a vacuum would give back."""
    free, page = free_pages(conn)
    mode = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
    return {
        "reclaimable_bytes": free * page,
        "auto_vacuum": {0: "none", 1: "full", 2: "incremental"}.get(mode, str(mode)),
    }


def vacuum_file(file: SqliteFile, stop: threading.Event) -> VacuumReport:
    """Give back ``file``'s free pages (see the module's docstring); on a
    thread of its own, never the event loop's. ``stop`` set: stop after the
    chunk under way (each chunk is committed whole)."""
    path = file.path
    if file.read_only is not None:
        raise BackendError(
            f"SQLite store {path} is open read-only ({file.read_only}): cannot vacuum"
        )
    conn = file.connect(file.busy_timeout_ms)
    try:
        before = database_bytes(conn)
        free, _ = free_pages(conn)
        mode = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
        if free == 0:
            done = "no free pages: nothing to give back"
        elif mode != _INCREMENTAL:
            conn.execute(f"PRAGMA auto_vacuum = {AUTO_VACUUM}")
            conn.execute("VACUUM")  # the one full rewrite that switches the mode
            done = (
                f"{free:,} free pages given back by one full VACUUM, which switched the "
                "file to incremental auto-vacuum (later vacuums run in short transactions)"
            )
        else:
            freed = _incremental(conn, free, stop)
            done = f"{freed:,} free pages given back in short transactions"
            if freed < free:
                done += f" (stopped early: {free - freed:,} left)"
        after = database_bytes(conn)
        conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        on_disk = file_bytes(path)
        if busy:
            done += (
                f"; on disk {on_disk:,} bytes with the WAL for now: other processes' reads "
                "and writes kept the checkpoint from finishing, the file shrinks at a "
                "later one"
            )
        else:
            done += f"; on disk {on_disk:,} bytes, the WAL emptied"
    except sqlite3.Error as exc:
        rollback(conn)
        raise BackendError(f"SQLite store {path}: vacuum: {exc}") from exc
    finally:
        conn.close()
    return VacuumReport(backend="sqlite", bytes_before=before, bytes_after=after, note=done)


def _incremental(conn: sqlite3.Connection, free: int, stop: threading.Event) -> int:
    """``incremental_vacuum`` chunk by chunk; returns the pages freed."""
    freed = 0
    while free > 0 and not stop.is_set():
        # executescript steps the pragma to its end: an execute() steps it
        # once, which frees one page.
        conn.executescript(
            f"BEGIN IMMEDIATE; PRAGMA incremental_vacuum({min(free, CHUNK_PAGES)}); COMMIT;"
        )
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # keeps the WAL from growing meanwhile
        left = free_pages(conn)[0]
        if left >= free:  # writers filled what was freed as fast: done for now
            break
        freed += free - left
        free = left
    return freed
