"""The SQLite emulator's search index: an FTS5 trigram index of every message
blob's text (:mod:`makers_store.blob`).

Four tables. ``search_rows`` holds one row per indexed message blob (its key
and folded text) and ``search_fts``, an external-content FTS5 table over it
with the trigram tokenizer, indexes the text. Two tables say what is not
indexed yet, written in the same transaction as the write:

- ``search_appended`` (one row per conversation, or generation, that got new
  message blobs): its messages prefix and the lowest message key created
  since it was last indexed. Every message key from there to the end of the
  prefix waits. An append marks its conversation once (an upsert that
  writes nothing when the mark is there and lower already); a unit that
  creates many messages in one conversation (a fork, an import) marks it
  once (:func:`mark_created`).
- ``search_dirty``: keys of message blobs changed or deleted since they were
  last indexed (:func:`mark_changed`).

Both are written by the one code that writes blobs (:class:`.ops.BlobTable`;
a test checks that no other module does), in the write's transaction.
Triggers did this until migration 0004: a trigger runs on every row of its
event whatever its WHEN says (an append inserts an index entry, updates its
conversation's meta and deletes its old entry: 3 to 5 us each), and a copy
of many messages paid a trigger per row (a fork of 300 messages 27% slower).

The index is therefore right at every commit for every key outside both, and
a search takes the index's answer plus every waiting key as its candidates
(:func:`message_keys`): exact, whatever is pending.

Why not index in the write's transaction: FTS5 writes a new segment per
transaction, so indexing each append on its own cost about 250 us, more than
half an append again; in batches (:func:`catch_up`) the trigram index costs
about 27 us a message of 70 characters, 94 us of 850 (measured:
docs/backends.md, Searching messages). Why a mark per conversation and not per key: a key
marked per append was one more B-tree page written per commit, 20 us on an
append of 112 us (an append with the index must cost at most 1.1x one
without); the conversation's mark is written by its first append and only
read by the next ones (measured by tests/bench/benchmark.py's "append with
search index" row). So writers only mark, and a process indexes what waits
once its writers pause for :data:`IDLE_DELAY` (or past :data:`BACKLOG_MAX`
write units, busy or not), on its worker thread, at most
:data:`CATCH_UP_BATCH` keys a transaction, so that writers wait for it at
most a few tens of milliseconds (:class:`~.sqlite.SqliteBlobStore`). A search
that finds more than :data:`DIRTY_MAX` keys waiting indexes them first. A
store opened for the first time by a version with the index (the migration)
marks every message blob dirty (seconds for a gigabyte) and is indexed in the
background from then on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from makers_store.blob import (
    MESSAGE_KEY_GLOB,
    SearchIndexCheck,
    is_message_key,
    message_text_of_blob,
)

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
_APPENDED_TABLE = (
    "CREATE TABLE IF NOT EXISTS search_appended (prefix TEXT PRIMARY KEY, low TEXT NOT NULL) "
    "WITHOUT ROWID"
)
_GLOB = f"'{MESSAGE_KEY_GLOB}'"
# Not INSERT OR IGNORE: in a trigger the statement that fired it imposes its
# own conflict policy, so an upsert of a message blob (ON CONFLICT DO UPDATE,
# firing the update trigger) failed on a key marked already.
_MARK = (
    "INSERT INTO search_dirty (key) SELECT {k} "
    "WHERE NOT EXISTS (SELECT 1 FROM search_dirty WHERE key = {k});"
)
#: The insert trigger of migration 0003 (a mark per key); 0004 replaces it.
_INSERT_TRIGGER_0003 = (
    f"CREATE TRIGGER IF NOT EXISTS search_blob_insert AFTER INSERT ON blobs "
    f"WHEN new.key GLOB {_GLOB} BEGIN {_MARK.format(k='new.key')} END"
)
#: Migration 0003's update and delete triggers (a mark per key); 0004 drops them.
_TRIGGERS_0003 = (
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
#: One catch-up batch, the keys in temp.search_batch. CROSS JOIN keeps the
#: batch as the outer loop: with a plain JOIN the planner scanned all of
#: ``blobs`` (and ``search_rows``) for each batch, reading every message of
#: the store a thousand keys at a time.
_BATCH_ROWS = "FROM temp.search_batch AS d CROSS JOIN search_rows AS r ON r.key = d.key"
_UNINDEX_BATCH = (
    f"INSERT INTO search_fts (search_fts, rowid, body) SELECT 'delete', r.id, r.body {_BATCH_ROWS}",
    "DELETE FROM search_rows WHERE key IN (SELECT key FROM temp.search_batch)",
)
_BATCH_BLOBS = (
    "SELECT b.key, b.data FROM temp.search_batch AS d CROSS JOIN blobs AS b ON b.key = d.key"
)
_INSERT_ROW = "INSERT INTO search_rows (key, body) VALUES (?, ?)"
_INDEX_BATCH = (
    f"INSERT INTO search_fts (rowid, body) SELECT r.id, r.body {_BATCH_ROWS}",
    "DELETE FROM search_dirty WHERE key IN (SELECT key FROM temp.search_batch)",
)
_QUERY = (
    "SELECT r.key FROM search_fts JOIN search_rows AS r ON r.id = search_fts.rowid "
    "WHERE search_fts MATCH ? LIMIT ?"
)


def indexed_body(key: str, data: bytes) -> str | None:
    """The text the index keeps of a blob (None: not a message). FTS5's
    trigram tokenizer stops at NUL (a text "\\x00 hello" was never found by
    "hello"), so NUL is kept as U+0001, in the query too (:func:`phrase`),
    as the PostgreSQL index does; the candidates are checked against the
    messages themselves, so nothing is found that does not match."""
    text = message_text_of_blob(key, data)
    return None if text is None else text.replace("\x00", "\x01")


def _rows(blobs: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, str]]:
    """``search_rows``' rows of ``(key, data)`` message blobs, read as they go.
    In Python, not an SQL function in an ``INSERT ... SELECT``: SQLite
    evaluated that function twice a row (in the filter on its result and in
    the row inserted)."""
    for key, data in blobs:
        body = indexed_body(key, data)
        if body is not None:
            yield key, body


def create(conn: sqlite3.Connection) -> None:
    """Migration 0003: tables and triggers, and every message blob already
    stored marked dirty (indexed by the catch-ups that follow)."""
    for statement in (*_TABLES, _INSERT_TRIGGER_0003, *_TRIGGERS_0003):
        conn.execute(statement)
    conn.execute(f"INSERT OR IGNORE INTO search_dirty (key) {_MESSAGE_KEYS}")


def mark_appends_by_conversation(conn: sqlite3.Connection) -> None:
    """Migration 0004: new message blobs mark their conversation's prefix
    (``search_appended``) instead of each key, and the blob table marks
    what it writes (:func:`mark_created`, :func:`mark_changed`) instead of
    triggers; keys marked before stay marked, and texts indexed with a NUL
    are indexed again."""
    conn.execute(_APPENDED_TABLE)
    # texts indexed with a NUL, which the index could not find (indexed_body)
    conn.execute(
        "INSERT OR IGNORE INTO search_dirty (key) SELECT key FROM search_rows "
        "WHERE instr(CAST(body AS BLOB), x'00') > 0"
    )
    for trigger in ("insert", "update", "delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS search_blob_{trigger}")


_MARK_CHANGED = "INSERT INTO search_dirty (key) VALUES (?) ON CONFLICT (key) DO NOTHING"
_MARK_CREATED = (
    "INSERT INTO search_appended (prefix, low) VALUES (?, ?) "
    "ON CONFLICT (prefix) DO UPDATE SET low = excluded.low "
    "WHERE excluded.low < search_appended.low"
)


def mark_created(conn: sqlite3.Connection, key: str, marked: dict[str, str]) -> None:
    """Mark the prefix of a message blob the caller creates, or upserts, in
    this transaction (nothing for another key): its mark, or a lower low
    (the catch-up indexes every key from there as the blobs are). ``marked``
    is the unit's own record of what it marked: a copy or an import of many
    messages into one conversation marks once (a trigger ran per row, about
    5 us a message: a fork of 300 messages 27% slower)."""
    if not is_message_key(key):
        return
    prefix = key[: key.rindex("/") + 1]
    low = marked.get(prefix)
    if low is None or key < low:
        conn.execute(_MARK_CREATED, (prefix, key))
        marked[prefix] = key


def mark_changed(conn: sqlite3.Connection, keys: Sequence[str]) -> None:
    """Mark the message blobs among ``keys`` dirty: the caller updates or
    deletes them in this transaction (other keys are left alone)."""
    if len(keys) == 1:  # the usual case, without a list
        if is_message_key(keys[0]):
            conn.execute(_MARK_CHANGED, (keys[0],))
        return
    conn.executemany(_MARK_CHANGED, [(key,) for key in keys if is_message_key(key)])


#: The message keys waiting under the marked prefixes, from each mark's low
#: key to the end of its prefix (the "/" that ends it, plus one, is "0").
#: CROSS JOIN keeps the marks as the outer loop: with a plain JOIN the
#: planner walked every conversation key of the store and the marks for each
#: (a search over 4,000 messages took 9.8 ms instead of 5.6). The GLOB's
#: operand is ``+b.key``, an expression: on the column itself SQLite took the
#: GLOB's own range ('c/' on) as the lower bound instead of the mark's, and
#: walked every message key of the store before it (9.8 ms instead of 0.3 at
#: 200,000 messages; 64 ms instead of 1.4 for a catch-up's batch).
_APPENDED_KEYS = (
    "SELECT b.key FROM search_appended AS a CROSS JOIN blobs AS b ON b.key >= a.low "
    "AND b.key < substr(a.prefix, 1, length(a.prefix) - 1) || '0' "
    f"WHERE +b.key GLOB {_GLOB}"
)

#: One mark's waiting keys, from its low key on (``+key``: as above).
_MARKED_RANGE = (
    f"SELECT key FROM blobs WHERE key >= ? AND key < ? AND +key GLOB {_GLOB} ORDER BY key LIMIT ?"
)


def _waiting(conn: sqlite3.Connection, at_most: int | None) -> list[str]:
    """Keys waiting for the index, dirty or under a mark (at most ``at_most``;
    a key may be both, and is then named once)."""
    limit = -1 if at_most is None else at_most
    keys = [row[0] for row in conn.execute("SELECT key FROM search_dirty LIMIT ?", (limit,))]
    if at_most is None or len(keys) < at_most:
        more = -1 if at_most is None else at_most - len(keys)
        keys += [row[0] for row in conn.execute(f"{_APPENDED_KEYS} LIMIT ?", (more,))]
    return list(dict.fromkeys(keys))


def catch_up(conn: sqlite3.Connection, batch: int = CATCH_UP_BATCH) -> int:
    """Index at most ``batch`` waiting keys (in the caller's write
    transaction): dirty keys first, then marked prefixes, each from its low
    key on; how many were taken (fewer than ``batch``: none are left)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS search_batch (key TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.search_batch")
    taken = conn.execute(
        "INSERT INTO temp.search_batch (key) SELECT key FROM search_dirty LIMIT ?", (batch,)
    ).rowcount
    marks = conn.execute("SELECT prefix, low FROM search_appended").fetchall()
    for prefix, low in marks:
        if taken >= batch:
            break
        end = prefix[:-1] + "0"
        keys = [
            row[0]
            for row in conn.execute(_MARKED_RANGE, (low, end, batch - taken + 1))
        ]
        now, rest = keys[: batch - taken], keys[batch - taken :]
        conn.executemany(
            "INSERT OR IGNORE INTO temp.search_batch (key) VALUES (?)", [(k,) for k in now]
        )
        taken += len(now)
        if rest:  # the prefix's next batch starts there
            conn.execute("UPDATE search_appended SET low = ? WHERE prefix = ?", (rest[0], prefix))
        else:
            conn.execute("DELETE FROM search_appended WHERE prefix = ?", (prefix,))
    if taken:
        for statement in _UNINDEX_BATCH:
            conn.execute(statement)
        conn.executemany(_INSERT_ROW, _rows(conn.execute(_BATCH_BLOBS)))
        for statement in _INDEX_BATCH:
            conn.execute(statement)
    conn.execute("DELETE FROM temp.search_batch")
    return int(taken)


def dirty_count(conn: sqlite3.Connection, at_most: int) -> int:
    """How many keys wait for the index, counted up to ``at_most``."""
    return len(_waiting(conn, at_most))


def phrase(folded: str) -> str:
    """An FTS5 query for ``folded`` as a substring (one quoted phrase; NUL
    as the index keeps it, :func:`indexed_body`)."""
    return '"' + folded.replace('"', '""').replace("\x00", "\x01") + '"'


def message_keys(conn: sqlite3.Connection, folded: str, limit: int) -> list[str] | None:
    """Candidates for ``folded``: keys of indexed message blobs whose text
    holds it (at most ``limit``) and every dirty key; None when more than
    :data:`DIRTY_MAX` are dirty (in the caller's read transaction)."""
    dirty = _waiting(conn, DIRTY_MAX + 1)
    if len(dirty) > DIRTY_MAX:
        return None
    found = [row[0] for row in conn.execute(_QUERY, (phrase(folded), limit))]
    indexed = set(found)
    return found + [key for key in dirty if key not in indexed]


def check(conn: sqlite3.Connection) -> SearchIndexCheck:
    """Compare the index with the message blobs (one read transaction): every
    message blob not dirty has its row, with its text."""
    indexed = dict(conn.execute("SELECT key, body FROM search_rows").fetchall())
    dirty = set(_waiting(conn, None))
    missing, wrong, messages = [], [], 0
    for key, data in conn.execute(_MESSAGE_BLOBS):
        text = indexed_body(key, data)
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
    conn.execute("DELETE FROM search_appended")
    conn.executemany(_INSERT_ROW, _rows(conn.execute(_MESSAGE_BLOBS)))
    conn.execute("INSERT INTO search_fts (search_fts) VALUES ('rebuild')")
    return int(conn.execute("SELECT count(*) FROM search_rows").fetchone()[0])
