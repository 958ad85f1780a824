"""The SQLite emulator's search index: an FTS5 trigram index of every message
blob's text (:mod:`makers_store.search_text`), kept by triggers on ``blobs``.

``search_rows`` holds one row per message blob (its key and folded text) and
``search_fts``, an external-content FTS5 table over it with the trigram
tokenizer, indexes the text. Triggers on ``blobs`` keep both in the same
transaction as the write, whatever writes the blob (a unit's Put or Delete,
an upsert, a migration): an index that is right at every commit. The text is
computed by a function every connection registers (:func:`register`), so
that it folds case exactly as the search's rule (Python's ``re``) does; a
connection without it cannot write a message blob ("no such function"):
only this package's connections write the file.

A trigger first tests the key against a GLOB (cheap, in SQLite) and only
then asks Python for the text: index entries, meta and state never leave
SQLite. Cost measured in tests/bench/bench_search.py.
"""

from __future__ import annotations

import sqlite3

from makers_store.search_text import MESSAGE_KEY_GLOB, SearchIndexCheck, message_text_of_blob

#: The function the triggers call: (key, data) -> folded text or NULL.
TEXT_FUNCTION = "makers_message_text"

_ROWS = (
    "CREATE TABLE IF NOT EXISTS search_rows ("
    "id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL)"
)
_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
    "body, content='search_rows', content_rowid='id', tokenize='trigram case_sensitive 1')"
)
_ADD = (
    "INSERT INTO search_rows (key, body) SELECT {k}, b FROM "
    f"(SELECT {TEXT_FUNCTION}({{k}}, {{d}}) AS b) WHERE b IS NOT NULL; "
    "INSERT INTO search_fts (rowid, body) SELECT id, body FROM search_rows WHERE key = {k};"
)
_REMOVE = (
    "INSERT INTO search_fts (search_fts, rowid, body) "
    "SELECT 'delete', id, body FROM search_rows WHERE key = {k}; "
    "DELETE FROM search_rows WHERE key = {k};"
)
_GLOB = f"'{MESSAGE_KEY_GLOB}'"
_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS search_blob_insert AFTER INSERT ON blobs "
    f"WHEN new.key GLOB {_GLOB} BEGIN {_ADD.format(k='new.key', d='new.data')} END",
    f"CREATE TRIGGER IF NOT EXISTS search_blob_delete AFTER DELETE ON blobs "
    f"WHEN old.key GLOB {_GLOB} BEGIN {_REMOVE.format(k='old.key')} END",
    f"CREATE TRIGGER IF NOT EXISTS search_blob_update AFTER UPDATE ON blobs "
    f"WHEN old.key GLOB {_GLOB} OR new.key GLOB {_GLOB} BEGIN "
    f"{_REMOVE.format(k='old.key')} {_ADD.format(k='new.key', d='new.data')} END",
)
_MESSAGE_BLOBS = (
    f"SELECT key, data FROM blobs WHERE key >= 'c/' AND key < 'c0' AND key GLOB {_GLOB}"
)
_FILL = (
    "INSERT INTO search_rows (key, body) SELECT key, b FROM "
    f"(SELECT key, {TEXT_FUNCTION}(key, data) AS b FROM blobs "
    f"WHERE key >= 'c/' AND key < 'c0' AND key GLOB {_GLOB}) WHERE b IS NOT NULL"
)
_QUERY = (
    "SELECT r.key FROM search_fts JOIN search_rows AS r ON r.id = search_fts.rowid "
    "WHERE search_fts MATCH ? LIMIT ?"
)


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the function the index's triggers call."""
    conn.create_function(TEXT_FUNCTION, 2, message_text_of_blob, deterministic=True)


def create(conn: sqlite3.Connection) -> None:
    """The migration: tables, triggers, and every message blob already
    stored, indexed (inside the caller's transaction)."""
    conn.execute(_ROWS)
    conn.execute(_FTS)
    for trigger in _TRIGGERS:
        conn.execute(trigger)
    fill(conn)


def fill(conn: sqlite3.Connection) -> None:
    """Index every message blob (the index being empty)."""
    conn.execute(_FILL)
    conn.execute("INSERT INTO search_fts (search_fts) VALUES ('rebuild')")


def phrase(folded: str) -> str:
    """An FTS5 query for ``folded`` as a substring (one quoted phrase)."""
    return '"' + folded.replace('"', '""') + '"'


def message_keys(conn: sqlite3.Connection, folded: str, limit: int) -> list[str]:
    """Keys of message blobs whose indexed text holds ``folded``, at most ``limit``."""
    return [row[0] for row in conn.execute(_QUERY, (phrase(folded), limit))]


def check(conn: sqlite3.Connection) -> SearchIndexCheck:
    """Compare the index with the message blobs (one read transaction)."""
    indexed = dict(conn.execute("SELECT key, body FROM search_rows").fetchall())
    missing, wrong, messages = [], [], 0
    for key, data in conn.execute(_MESSAGE_BLOBS):
        text = message_text_of_blob(key, data)
        if text is None:
            continue
        messages += 1
        body = indexed.pop(key, None)
        if body is None:
            missing.append(key)
        elif body != text:
            wrong.append(key)
    try:
        conn.execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)")
        fts_ok = True
    except sqlite3.DatabaseError:
        fts_ok = False
    stale = sorted(indexed)
    return SearchIndexCheck("sqlite fts5 trigram", messages, missing, stale, wrong, fts_ok)


def rebuild(conn: sqlite3.Connection) -> int:
    """Index every message blob again from scratch; returns how many (in the
    caller's write transaction)."""
    conn.execute("INSERT INTO search_fts (search_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM search_rows")
    fill(conn)
    return int(conn.execute("SELECT count(*) FROM search_rows").fetchone()[0])
