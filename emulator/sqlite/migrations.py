"""The SQLite emulator's schema, as a named list of migrations.

Each migration runs once, in order, inside the opening transaction; its name
is recorded in ``_migrations`` and the count in ``PRAGMA user_version``.
Append new migrations; never edit or reorder applied ones.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by migrate(): opening a current file needs no sqlite-utils
    from sqlite_utils import Database


def _create_blobs(db: Database) -> None:
    # Clustered by key (WITHOUT ROWID): a range scan reads rows in key order
    # with no second lookup per row. Metadata columns first, the content last,
    # so listing keys never reads a content overflow page.
    db.execute(
        "CREATE TABLE blobs (key TEXT PRIMARY KEY, etag TEXT NOT NULL, size INTEGER NOT NULL,"
        " updated_at INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID"
    )


def _invert_index_ranks(db: Database) -> None:
    # Index entries (i/all/{rank}/{cid}, i/u/{uid}/{rank}/{cid}) changed their
    # rank from last_message_at to 999999999999999 - last_message_at, so that
    # newest-first listings are forward listings (all object storage offers).
    # The rank is the second-to-last segment; ids are escaped and hold no "/".
    rows = db.execute("SELECT key FROM blobs WHERE key >= 'i/' AND key < 'i0'").fetchall()
    for (key,) in rows:
        head, rank, cid = key.rsplit("/", 2)
        if len(rank) == 15 and rank.isdigit():
            new_key = f"{head}/{999_999_999_999_999 - int(rank):015d}/{cid}"
            db.execute("UPDATE blobs SET key = ? WHERE key = ?", [new_key, key])


def _search_index(db: Database) -> None:
    # The search index of message texts, filled from the messages already
    # stored (see .search; measured in tests/bench/bench_search.py).
    from . import search as sqlite_search

    sqlite_search.create(db.conn)


def _search_marks_by_conversation(db: Database) -> None:
    # New message blobs mark their conversation, not each key: an append's
    # mark was a B-tree page more per commit (see .search).
    from . import search as sqlite_search

    sqlite_search.mark_appends_by_conversation(db.conn)


MIGRATIONS: list[tuple[str, Callable[[Database], None]]] = [
    ("0001_create_blobs", _create_blobs),
    ("0002_invert_index_ranks", _invert_index_ranks),
    ("0003_search_index", _search_index),
    ("0004_search_marks_by_conversation", _search_marks_by_conversation),
]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; call inside ``BEGIN IMMEDIATE``. Returns the version."""
    from sqlite_utils import Database

    db = Database(conn, execute_plugins=False, recursive_triggers=False)
    db["_migrations"].create(  # type: ignore[union-attr]
        {"name": str, "applied_at": int}, pk="name", if_not_exists=True
    )
    applied = {row["name"] for row in db["_migrations"].rows}
    unknown = applied - {name for name, _ in MIGRATIONS}
    if unknown:
        raise RuntimeError(
            f"the database was written by a newer makers-store (migrations {sorted(unknown)})"
        )
    for name, apply in MIGRATIONS:
        if name not in applied:
            apply(db)
            db["_migrations"].insert(  # type: ignore[union-attr]
                {"name": name, "applied_at": time.time_ns() // 1_000_000}
            )
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return SCHEMA_VERSION
