"""The PostgreSQL backend's search index: ``search_rows``, one row per message
blob with its folded text (:mod:`makers_store.blob`), and a
``pg_trgm`` GIN index on the text.

The rows are written by the unit of work that writes the message blob, in
its transaction (:mod:`.postgres_units` adds the statements beside each Put
and Delete of a message key): the text is folded in Python, exactly as the
search's rule folds case, which PostgreSQL's ``lower()`` (locale-dependent)
would not. A query is ``body LIKE '%text%'`` on the folded text, answered by
the trigram index for three characters or more (and checked by PostgreSQL
against the text itself). Where ``pg_trgm`` cannot be created (not
installed, or the role may not create it), the table is still kept and
queried without the GIN index: still exact, a sequential read of the texts.

A store written before the index gets the table on first open (the
migration creates it empty, at once) and a row in ``search_fill`` saying how
far the messages already stored have been indexed: a thread of the opening
process (:class:`Filler`, one per database at a time, by an advisory lock)
indexes them in batches of :data:`FILL_BATCH`, each in a transaction that
holds those message rows against writers (``FOR SHARE``) so that a write
cannot slip between reading a message and indexing it; searches read the
messages (the scan) until it is done, then use the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from makers_store.blob import (
    MESSAGE_KEY_GLOB,
    SearchIndexCheck,
    indexed_text,
    is_message_key,
    message_text_of_blob,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

#: Rows of message blobs read per batch when the index is filled.
FILL_BATCH = 2_000
_LIKE_GLOB = MESSAGE_KEY_GLOB.replace("*", "%").replace("[0-9]", "_")


class SearchStatements:
    """The statements of one store's search index, its schema filled in."""

    def __init__(self, quoted_schema: str) -> None:
        t = f"{quoted_schema}.search_rows"
        self.table = t
        self.upsert = (
            f"INSERT INTO {t} (key, body) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET body = excluded.body"
        )
        self.create_quietly = f"INSERT INTO {t} (key, body) VALUES (%s, %s) ON CONFLICT DO NOTHING"
        self.delete = f"DELETE FROM {t} WHERE key = %s"
        self.delete_many = f"DELETE FROM {t} WHERE key = ANY(%s)"
        self.query = f"SELECT key FROM {t} WHERE body LIKE %s LIMIT %s"


def writes_for_put(
    sql: SearchStatements, key: str, data: bytes, *, quietly: bool
) -> tuple[str, Sequence[object]] | None:
    """The statement keeping the index right after a Put of ``key`` (None: not a message)."""
    if not is_message_key(key):
        return None
    body = indexed_text(data)
    if body is None:
        return sql.delete, (key,)
    body = body.replace("\x00", "\x01")  # as _text does
    return (sql.create_quietly if quietly else sql.upsert), (key, body)


def message_keys_of(keys: Sequence[str]) -> list[str]:
    return [key for key in keys if is_message_key(key)]


def _text(blob_key: str, data: object) -> str | None:
    """The indexed text of a blob as PostgreSQL can keep it: text holds no
    NUL, so NUL is kept as U+0001, in the query too (:func:`like_pattern`):
    the two match alike then, and the search checks each candidate anyway."""
    text = message_text_of_blob(blob_key, _bytes(data))
    return None if text is None else text.replace("\x00", "\x01")


def _bytes(data: object) -> bytes:
    """A bytea column's value (psycopg gives bytes, or memoryview in binary)."""
    return bytes(cast("bytes", data))


def like_pattern(folded: str) -> str:
    """``folded`` anywhere in a text, as a LIKE pattern (backslash escapes)."""
    folded = folded.replace("\x00", "\x01")  # as the texts keep it (_text)
    escaped = folded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def create(conn: AsyncConnection[tuple[object, ...]], schema: str) -> None:
    """The migration (inside the migrating transaction): the table, the
    trigram index where ``pg_trgm`` can be had, and the mark that the
    message blobs already stored wait for :class:`Filler`."""
    import psycopg

    await conn.execute(
        f'CREATE TABLE {schema}.search_rows (key text COLLATE "C" PRIMARY KEY, body text NOT NULL)'
    )
    try:
        async with conn.transaction():  # a savepoint: without pg_trgm, go on without it
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            cursor = await conn.execute(
                "SELECT quote_ident(n.nspname) FROM pg_extension e"
                " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
            )
            row = await cursor.fetchone()
            assert row is not None
            await conn.execute(
                f"CREATE INDEX search_rows_trgm ON {schema}.search_rows"
                f" USING gin (body {row[0]}.gin_trgm_ops)"
            )
    except psycopg.Error:
        pass
    await conn.execute(
        f"CREATE TABLE {schema}.search_fill (id integer PRIMARY KEY, after text NOT NULL)"
    )
    cursor = await conn.execute(
        f"SELECT 1 FROM {schema}.blobs WHERE key >= 'c/' AND key < 'c0' LIMIT 1"
    )
    if await cursor.fetchone() is not None:  # messages may wait: a new store has none
        await conn.execute(f"INSERT INTO {schema}.search_fill (id, after) VALUES (1, '')")


async def fill(conn: AsyncConnection[tuple[object, ...]], schema: str) -> int:
    """Rows for every message blob (the table being empty); how many."""
    after, count = "", 0
    while True:
        cursor = await conn.execute(
            f"SELECT key, data FROM {schema}.blobs WHERE key > %s AND key < 'c0'"
            " AND key LIKE %s ORDER BY key LIMIT %s",
            (max(after, "c/"), _LIKE_GLOB, FILL_BATCH),
        )
        rows = await cursor.fetchall()
        batch = [
            (key, body)
            for key, data in rows
            if (body := _text(str(key), data)) is not None
        ]
        if batch:
            async with conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO {schema}.search_rows (key, body) VALUES (%s, %s)", batch
                )
        count += len(batch)
        if len(rows) < FILL_BATCH:
            return count
        after = str(rows[-1][0])


async def message_keys(
    conn: AsyncConnection[tuple[object, ...]], sql: SearchStatements, folded: str, limit: int
) -> list[str]:
    cursor = await conn.execute(sql.query, (like_pattern(folded), min(limit, 1 << 62)))
    return [str(row[0]) for row in await cursor.fetchall()]


async def check(conn: AsyncConnection[tuple[object, ...]], schema: str) -> SearchIndexCheck:
    """The rows against the message blobs, in one repeatable-read transaction."""
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        filled = await filled_after(conn, schema)
        cursor = await conn.execute(f"SELECT key, body FROM {schema}.search_rows")
        indexed = {str(key): str(body) for key, body in await cursor.fetchall()}
        missing, wrong, messages, pending, after = [], [], 0, 0, ""
        while True:
            cursor = await conn.execute(
                f"SELECT key, data FROM {schema}.blobs WHERE key > %s AND key < 'c0'"
                " AND key LIKE %s ORDER BY key LIMIT %s",
                (max(after, "c/"), _LIKE_GLOB, FILL_BATCH),
            )
            rows = await cursor.fetchall()
            for key, data in rows:
                text = _text(str(key), data)
                if text is None:
                    continue
                messages += 1
                body = indexed.pop(str(key), None)
                if filled is not None and str(key) > filled:
                    pending += 1  # the fill has not come this far: read by the scan
                elif body is None:
                    missing.append(str(key))
                elif body != text:
                    wrong.append(str(key))
            if len(rows) < FILL_BATCH:
                break
            after = str(rows[-1][0])
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_indexes"
            " WHERE schemaname = %s AND indexname = 'search_rows_trgm'",
            (schema.strip('"'),),
        )
        row = await cursor.fetchone()
        trigram = bool(row and row[0])
    name = "postgresql pg_trgm gin" if trigram else "postgresql (no pg_trgm: texts read in full)"
    return SearchIndexCheck(name, messages, missing, sorted(indexed), wrong, pending=pending)


async def rebuild(conn: AsyncConnection[tuple[object, ...]], schema: str) -> int:
    """Rows again for every message blob, in one transaction (writers of
    messages wait for it: it locks the table); the fill is done then."""
    async with conn.transaction():
        await conn.execute(f"LOCK TABLE {schema}.blobs IN SHARE MODE")
        await conn.execute(f"DELETE FROM {schema}.search_rows")
        count = await fill(conn, schema)
        await conn.execute(f"DELETE FROM {schema}.search_fill")
        return count


async def filled_after(conn: AsyncConnection[tuple[object, ...]], schema: str) -> str | None:
    """How far the fill has come (a key), or None when it is done."""
    cursor = await conn.execute(f"SELECT after FROM {schema}.search_fill WHERE id = 1")
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


class Filler:
    """Index the message blobs stored before the index, on a thread with a
    connection of its own (see the module docstring); :meth:`stop` ends it
    after the batch under way."""

    def __init__(self, conninfo: str, schema: str, lock_key: int) -> None:
        import threading

        self.conninfo, self.schema, self.lock_key = conninfo, schema, lock_key
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="makers-search-fill", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_key,))
                row = locked.fetchone()
                if not (row and row[0]):
                    return  # another process fills
                while not self.stopping.is_set() and not self._batch(conn):
                    pass
        except psycopg.Error:
            return  # the next open of the store starts again where this one stopped

    def _batch(self, conn: Any) -> bool:
        """Index the next batch; True when none is left."""
        q = self.schema
        with conn.transaction():
            row = conn.execute(f"SELECT after FROM {q}.search_fill WHERE id = 1 FOR UPDATE")
            found = row.fetchone()
            if found is None:
                return True
            rows = conn.execute(
                f"SELECT key, data FROM {q}.blobs WHERE key > %s AND key < 'c0'"
                " AND key LIKE %s ORDER BY key LIMIT %s FOR SHARE",
                (max(str(found[0]), "c/"), _LIKE_GLOB, FILL_BATCH),
            ).fetchall()
            batch = [
                (key, body)
                for key, data in rows
                if (body := _text(str(key), data)) is not None
            ]
            if batch:
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {q}.search_rows (key, body) VALUES (%s, %s) "
                        "ON CONFLICT (key) DO UPDATE SET body = excluded.body",
                        batch,
                    )
            if len(rows) < FILL_BATCH:
                conn.execute(f"DELETE FROM {q}.search_fill")
                return True
            conn.execute(f"UPDATE {q}.search_fill SET after = %s WHERE id = 1", (str(rows[-1][0]),))
            return False
