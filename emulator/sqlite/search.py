"""The SQLite emulator's search index: an FTS5 trigram index of every message
blob's text (:mod:`makers_store.blob`).

Three tables. ``search_rows`` holds one row per indexed message blob (its key
and folded text) and ``search_fts``, an external-content FTS5 table over it
with the trigram tokenizer, indexes the text. ``search_dirty`` holds the keys
of message blobs written or deleted since they were last indexed: a trigger
on ``blobs`` adds the key in the same transaction as the write, whatever
writes it (a unit's Put or Delete, an upsert, a migration, another process),
in plain SQL. The index is therefore right at every commit for every key not
in ``search_dirty``, and a search takes the index's answer plus every dirty
key as its candidates (:func:`message_keys`): exact, whatever is pending.

Why not index in the write's transaction: FTS5 writes a new segment per
transaction, so indexing each append on its own cost about 250 us, more than
half an append again; in batches (:func:`catch_up`) the trigram index costs
about 30-40 us a message of 170 characters (measured: docs/backends.md, Searching messages), and
marking the key dirty about 5% of an append. So writers only mark, and a
process indexes what waits once its writers pause for :data:`IDLE_DELAY`
(or past :data:`BACKLOG_MAX` write units, busy or not), on its worker
thread, at most :data:`CATCH_UP_BATCH` keys a transaction, so that writers
wait for it at most a few tens of milliseconds
(:class:`~.sqlite.SqliteBlobStore`). A search that finds more than
:data:`DIRTY_MAX` keys waiting indexes them first. A store opened for the
first time by this version (the migration) marks every message blob dirty
(seconds for a gigabyte) and is indexed in the background from then on.
"""

from __future__ import annotations

import sqlite3

from makers_store.blob import MESSAGE_KEY_GLOB, SearchIndexCheck, message_text_of_blob

#: The function the index calls: (key, data) -> folded text or NULL.
TEXT_FUNCTION = "makers_message_text"
#: Seconds without a write unit of this process before it indexes what waits.
IDLE_DELAY = 0.5
#: Write units of this process after which it indexes what waits, busy or not.
BACKLOG_MAX = 20_000
#: Dirty keys indexed per transaction of a catch-up.
CATCH_UP_BATCH = 1_000
#: Seconds the write lock is left free between two batches of a catch-up
#: (a batch holds it about 30 to 120 ms), for other units and processes.
CATCH_UP_PAUSE = 0.1
#: More dirty keys than this: a search indexes them first (they would cost
#: more to read one by one), or, where it cannot write, scans.
DIRTY_MAX = 500

_TABLES = (
    "CREATE TABLE IF NOT EXISTS search_rows ("
    "id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
    "body, content='search_rows', content_rowid='id', tokenize='trigram case_sensitive 1')",
    "CREATE TABLE IF NOT EXISTS search_dirty (key TEXT PRIMARY KEY) WITHOUT ROWID",
)
_GLOB = f"'{MESSAGE_KEY_GLOB}'"
# Not INSERT OR IGNORE: in a trigger the statement that fired it imposes its
# own conflict policy, so an upsert of a message blob (ON CONFLICT DO UPDATE,
# firing the update trigger) failed on a key marked already.
_MARK = (
    "INSERT INTO search_dirty (key) SELECT {k} "
    "WHERE NOT EXISTS (SELECT 1 FROM search_dirty WHERE key = {k});"
)
_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS search_blob_insert AFTER INSERT ON blobs "
    f"WHEN new.key GLOB {_GLOB} BEGIN {_MARK.format(k='new.key')} END",
    f"CREATE TRIGGER IF NOT EXISTS search_blob_delete AFTER DELETE ON blobs "
    f"WHEN old.key GLOB {_GLOB} BEGIN {_MARK.format(k='old.key')} END",
    f"CREATE TRIGGER IF NOT EXISTS search_blob_update AFTER UPDATE ON blobs "
    f"WHEN old.key GLOB {_GLOB} OR new.key GLOB {_GLOB} BEGIN "
    f"{_MARK.format(k='old.key')} {_MARK.format(k='new.key')} END",
)
_MESSAGE_KEYS = f"SELECT key FROM blobs WHERE key >= 'c/' AND key < 'c0' AND key GLOB {_GLOB}"
_MESSAGE_BLOBS = (
    f"SELECT key, data FROM blobs WHERE key >= 'c/' AND key < 'c0' AND key GLOB {_GLOB}"
)
#: one catch-up batch: the dirty keys are in temp.search_batch
_CATCH_UP = (
    "INSERT INTO search_fts (search_fts, rowid, body) SELECT 'delete', r.id, r.body "
    "FROM temp.search_batch AS d JOIN search_rows AS r ON r.key = d.key",
    "DELETE FROM search_rows WHERE key IN (SELECT key FROM temp.search_batch)",
    f"INSERT INTO search_rows (key, body) SELECT key, t FROM (SELECT b.key, "
    f"{TEXT_FUNCTION}(b.key, b.data) AS t FROM temp.search_batch AS d JOIN blobs AS b "
    "ON b.key = d.key) WHERE t IS NOT NULL",
    "INSERT INTO search_fts (rowid, body) SELECT r.id, r.body "
    "FROM temp.search_batch AS d JOIN search_rows AS r ON r.key = d.key",
    "DELETE FROM search_dirty WHERE key IN (SELECT key FROM temp.search_batch)",
)
_QUERY = (
    "SELECT r.key FROM search_fts JOIN search_rows AS r ON r.id = search_fts.rowid "
    "WHERE search_fts MATCH ? LIMIT ?"
)


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the function a catch-up calls."""
    conn.create_function(TEXT_FUNCTION, 2, message_text_of_blob, deterministic=True)


def create(conn: sqlite3.Connection) -> None:
    """The migration: tables and triggers, and every message blob already
    stored marked dirty (indexed by the catch-ups that follow)."""
    for statement in (*_TABLES, *_TRIGGERS):
        conn.execute(statement)
    conn.execute(f"INSERT OR IGNORE INTO search_dirty (key) {_MESSAGE_KEYS}")


def catch_up(conn: sqlite3.Connection, batch: int = CATCH_UP_BATCH) -> int:
    """Index at most ``batch`` dirty keys (in the caller's write transaction);
    how many were taken (fewer than ``batch``: none are left)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS search_batch (key TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.search_batch")
    taken = conn.execute(
        "INSERT INTO temp.search_batch (key) SELECT key FROM search_dirty LIMIT ?", (batch,)
    ).rowcount
    if taken:
        for statement in _CATCH_UP:
            conn.execute(statement)
    conn.execute("DELETE FROM temp.search_batch")
    return int(taken)


def dirty_count(conn: sqlite3.Connection, at_most: int) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM search_dirty LIMIT ?)", (at_most,)
        ).fetchone()[0]
    )


def phrase(folded: str) -> str:
    """An FTS5 query for ``folded`` as a substring (one quoted phrase)."""
    return '"' + folded.replace('"', '""') + '"'


def message_keys(conn: sqlite3.Connection, folded: str, limit: int) -> list[str] | None:
    """Candidates for ``folded``: keys of indexed message blobs whose text
    holds it (at most ``limit``) and every dirty key; None when more than
    :data:`DIRTY_MAX` are dirty (in the caller's read transaction)."""
    dirty = [
        row[0] for row in conn.execute("SELECT key FROM search_dirty LIMIT ?", (DIRTY_MAX + 1,))
    ]
    if len(dirty) > DIRTY_MAX:
        return None
    found = [row[0] for row in conn.execute(_QUERY, (phrase(folded), limit))]
    indexed = set(found)
    return found + [key for key in dirty if key not in indexed]


def check(conn: sqlite3.Connection) -> SearchIndexCheck:
    """Compare the index with the message blobs (one read transaction): every
    message blob not dirty has its row, with its text."""
    indexed = dict(conn.execute("SELECT key, body FROM search_rows").fetchall())
    dirty = {row[0] for row in conn.execute("SELECT key FROM search_dirty")}
    missing, wrong, messages = [], [], 0
    for key, data in conn.execute(_MESSAGE_BLOBS):
        text = message_text_of_blob(key, data)
        if text is None:
            continue
        messages += 1
        body = indexed.pop(key, None)
        if key in dirty:
            continue
        if body is None:
            missing.append(key)
        elif body != text:
            wrong.append(key)
    try:
        conn.execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)")
        sound = True
    except sqlite3.DatabaseError:
        sound = False
    stale = sorted(key for key in indexed if key not in dirty)
    return SearchIndexCheck(
        "sqlite fts5 trigram", messages, missing, stale, wrong, sound, pending=len(dirty)
    )


def rebuild(conn: sqlite3.Connection) -> int:
    """Index every message blob again from scratch, dirty or not; returns how
    many (in the caller's write transaction)."""
    conn.execute("INSERT INTO search_fts (search_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM search_rows")
    conn.execute("DELETE FROM search_dirty")
    conn.execute(
        f"INSERT INTO search_rows (key, body) SELECT key, t FROM (SELECT key, "
        f"{TEXT_FUNCTION}(key, data) AS t FROM blobs WHERE key >= 'c/' AND key < 'c0' "
        f"AND key GLOB {_GLOB}) WHERE t IS NOT NULL"
    )
    conn.execute("INSERT INTO search_fts (search_fts) VALUES ('rebuild')")
    return int(conn.execute("SELECT count(*) FROM search_rows").fetchone()[0])
