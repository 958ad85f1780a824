"""What units of work do to the SQLite emulator's ``blobs`` table.

:class:`BlobTable` applies one operation on a connection, inside a
transaction its caller began, and drives a unit's program through those
operations. Given a deadline (the unit runs inline on the event loop), a long
listing, batch delete or large Put works in chunks or not at all and, once
the deadline has passed, answers a :class:`~.sqlite_units.Partial` that a
worker thread finishes.
"""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, assert_never

from makers_store.blob import drive_sync
from makers_store.blob_ops import (
    Blob,
    BlobInfo,
    Delete,
    DeleteMany,
    Entry,
    Get,
    GetMany,
    ListKeys,
    ListMany,
    Op,
    Put,
    Scan,
)
from makers_store.errors import BackendError, PreconditionFailedError

from ..sql_ranges import range_query
from .file import cannot_write, rollback
from .search import mark_changed, mark_created
from .units import Partial, Stopped, Unit

T = TypeVar("T")

_GET = "SELECT etag, size, updated_at, data FROM blobs WHERE key = ?"
_GET_MANY = "SELECT key, etag, size, updated_at, data FROM blobs WHERE key IN"
#: Keys per query of a batch read (SQLite allows 32,766 parameters since 3.32).
GET_MANY_BATCH = 500
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
#: Rows fetched, or keys deleted, between two looks at the clock.
CHUNK = 64
_clock = time.perf_counter
#: Inline, a Put of more bytes than this runs off the loop (copying a few
#: megabytes into SQLite takes milliseconds).
LARGE_PUT = 1 << 20


def _range_sql(op: ListKeys | Scan) -> tuple[str, list[Any]]:
    return range_query(op, "blobs", "?")


def begin(conn: sqlite3.Connection, write: bool) -> None:
    """``BEGIN IMMEDIATE`` for a writer; a reader's ``BEGIN`` and the read
    that fixes its snapshot."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    if not write:
        conn.execute(_SNAPSHOT).fetchall()


def _rest(found: list[T], rows: Any, make: Callable[..., T]) -> list[T]:
    return found + [make(*row) for row in rows]


def fetch(rows: Any, make: Callable[..., T], deadline: float | None) -> list[T] | Partial:
    """``[make(*row) for row in rows]``, or, when ``deadline`` passes first,
    a Partial holding what was fetched and the cursor for the rest."""
    if deadline is None:
        return [make(*row) for row in rows]
    found: list[T] = []
    while True:
        chunk = rows.fetchmany(CHUNK)
        found += [make(*row) for row in chunk]
        if len(chunk) < CHUNK:
            return found
        if time.perf_counter() > deadline:
            return Partial(functools.partial(_rest, found, rows, make))


def delete_all(
    delete: Callable[[Sequence[str]], object], keys: Sequence[str], deadline: float | None
) -> Partial | None:
    """``delete(keys)`` in chunks, or a Partial for the keys left when
    ``deadline`` passes."""
    if deadline is None:
        delete(keys)
        return None
    for start in range(0, len(keys), CHUNK):
        if start and time.perf_counter() > deadline:
            return Partial(functools.partial(delete, keys[start:]))
        delete(keys[start : start + CHUNK])
    return None


class BlobTable:
    """The ``blobs`` table of the file at ``path``: its operations, the etags
    they hand out, and units driven through them.

    ``pages_written`` estimates the WAL pages the operations wrote (a page
    per row changed and per KiB of value: beyond about 1,000 bytes a row of a
    WITHOUT ROWID table spills into overflow pages), for deciding when to
    checkpoint; the checkpoints tell how far off it is.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._etag_prefix = os.urandom(6).hex() + "-"
        self._etags = itertools.count(1)
        self.pages_written = 0
        #: Mark what the search index must catch up on (False only to measure
        #: what it costs, tests/bench/bench_search.py: searches then miss
        #: what is written meanwhile).
        self.index_messages = True

    def error(self, exc: sqlite3.Error) -> BackendError:
        if cannot_write(exc):
            return BackendError(
                f"SQLite store {self.path} cannot be written ({exc}): "
                "writing needs write access to the file and its directory"
            )
        return BackendError(f"SQLite store {self.path}: {exc}")

    def drive(self, conn: sqlite3.Connection, unit: Unit, *, undo: bool = True) -> bool:
        """Drive ``unit``'s program inside the transaction begun on ``conn``:
        True when it has returned (``unit.result``), False when it stopped to
        go on off the loop. An error rolls the transaction back (with
        ``undo``; else the caller rolls back to its savepoint)."""
        try:  # a Unit is driven as the program it wraps (same send, throw, close)
            result: Any = drive_sync(unit, functools.partial(self.apply, conn, unit))
        except Stopped:
            return False
        except sqlite3.Error as exc:
            if undo:
                rollback(conn)
            raise self.error(exc) from exc
        except BaseException:
            if undo:
                rollback(conn)
            raise
        unit.done, unit.result = True, result
        return True

    def commit(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            rollback(conn)
            raise self.error(exc) from exc
        except BaseException:
            rollback(conn)
            raise

    def apply(self, conn: sqlite3.Connection, unit: Unit, op: Op) -> object:
        """Run ``op`` for ``unit``. Inline, a long listing, batch read or
        delete, or a large Put stops the unit with a Partial to finish off
        the loop."""
        if _clock() > unit.deadline:
            unit.at_deadline(op)
        deadline = unit.deadline if unit.inline else None
        result: object
        match op:
            case Get():
                row = conn.execute(_GET, (op.key,)).fetchone()
                return None if row is None else Blob(op.key, *row)
            case Put():
                if len(op.data) > LARGE_PUT and unit.inline:
                    unit.stop(Partial(functools.partial(self._put, conn, op, unit)))
                return self._put(conn, op, unit)
            case Delete():
                self.pages_written += 1
                if "/m/" in op.key and self.index_messages:  # for the search index
                    mark_changed(conn, (op.key,))
                if op.if_match is None:
                    return conn.execute(_DELETE, (op.key,)).rowcount > 0
                if conn.execute(_DELETE_IF, (op.key, op.if_match)).rowcount == 0:
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
                return True
            case GetMany():
                if len(op.keys) > CHUNK and unit.inline:
                    unit.stop(Partial(functools.partial(get_many, conn, op.keys)))
                return get_many(conn, op.keys)
            case DeleteMany():
                self.pages_written += len(op.keys)
                if len(op.keys) == 1:  # an append's superseded index entry
                    if "/m/" in op.keys[0] and self.index_messages:
                        mark_changed(conn, op.keys)
                    conn.execute(_DELETE, op.keys)
                    return None
                if self.index_messages:
                    mark_changed(conn, op.keys)
                if deadline is None or len(op.keys) <= CHUNK:
                    conn.executemany(_DELETE, [(key,) for key in op.keys])
                    return None

                def delete(keys: Sequence[str]) -> None:
                    conn.executemany(_DELETE, [(key,) for key in keys])

                result = delete_all(delete, op.keys, deadline)
            case Scan():
                sql, params = _range_sql(op)
                result = fetch(conn.execute(sql, params), Entry, deadline)
            case ListKeys():
                sql, params = _range_sql(op)
                result = fetch(conn.execute(sql, params), BlobInfo, deadline)
            case ListMany():
                if unit.inline and any(
                    one.limit is None or one.limit > CHUNK for one in op.listings
                ):
                    unit.stop(Partial(functools.partial(list_many, conn, op.listings)))
                return list_many(conn, op.listings)
            case _:
                assert_never(op)
        if type(result) is Partial:
            unit.stop(result)
        return result

    def _put(self, conn: sqlite3.Connection, op: Put, unit: Unit) -> BlobInfo | None:
        size = len(op.data)
        etag = f"{self._etag_prefix}{next(self._etags):x}"
        now = time.time_ns() // 1_000_000
        self.pages_written += 1 + (size >> 10)
        if "/m/" in op.key and self.index_messages:  # may be a message (.search)
            if op.if_match is None:  # creates it, or may (an upsert: a fork's copies)
                mark_created(conn, op.key, unit.search_marks)
            else:  # changes one in place (update_message)
                mark_changed(conn, (op.key,))
        if op.if_match is not None:
            cursor = conn.execute(_REPLACE, (etag, size, now, op.data, op.key, op.if_match))
            if cursor.rowcount == 0:
                raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
        elif op.if_none_match:
            created = conn.execute(_CREATE, (op.key, etag, size, now, op.data)).rowcount
            if op.quiet:
                return None
            if created == 0:
                raise PreconditionFailedError(f"{op.key!r} already exists", key=op.key)
        else:
            conn.execute(_UPSERT, (op.key, etag, size, now, op.data))
        return BlobInfo(op.key, etag, size, now)


def list_many(conn: sqlite3.Connection, listings: Sequence[ListKeys]) -> list[list[BlobInfo]]:
    return [[BlobInfo(*row) for row in conn.execute(*_range_sql(one))] for one in listings]


def get_many(conn: sqlite3.Connection, keys: Sequence[str]) -> list[Blob | None]:
    """The blobs of ``keys`` in order, read ``GET_MANY_BATCH`` keys per query."""
    found: dict[str, Blob] = {}
    distinct = list(dict.fromkeys(keys))
    for start in range(0, len(distinct), GET_MANY_BATCH):
        batch = distinct[start : start + GET_MANY_BATCH]
        marks = ",".join("?" * len(batch))
        for row in conn.execute(f"{_GET_MANY} ({marks})", batch):
            found[row[0]] = Blob(*row)
    return [found.get(key) for key in keys]
