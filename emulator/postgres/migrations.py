"""The PostgreSQL backend's schema, as a named list of migrations.

Each store lives in one PostgreSQL schema (``?schema=``, default ``public``)
holding ``blobs`` and ``_migrations``; the names of the applied migrations are
rows of ``_migrations``. Append new migrations; never edit or reorder applied
ones.

Several processes may open a new store at once: the migrating transaction
first takes a transaction-scoped advisory lock derived from the schema name,
so one of them creates the tables while the others wait and then find them
there. Opening an up-to-date store takes no lock and writes nothing: one read
of ``_migrations`` tells that nothing is left to do.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg import AsyncConnection

#: A schema name we put into SQL text, always double-quoted.
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# Clustered on nothing (PostgreSQL heaps are unordered) but the primary key's
# B-tree, in the "C" collation, answers every range query in code-point order.
# Metadata columns come first and the content last: a large value is TOASTed
# out of line, so listing keys never reads it. Free space on each page lets
# the frequent rewrites of a conversation's meta be HOT updates.
_CREATE_BLOBS = (
    'CREATE TABLE {schema}.blobs (key text COLLATE "C" PRIMARY KEY, etag text NOT NULL,'
    " size integer NOT NULL, updated_at bigint NOT NULL, data bytea NOT NULL)"
    " WITH (fillfactor = 85)"
)



async def _search_index(conn: AsyncConnection[tuple[object, ...]], schema: str) -> None:
    # The search index of message texts, filled from the messages already
    # stored (see .search; measured in tests/bench/bench_search.py).
    from . import search as postgres_search

    await postgres_search.create(conn, schema)


#: A migration is SQL (``{schema}`` filled in) or a coroutine function of
#: (connection, quoted schema), run inside the migrating transaction.
Migration = str | Callable[["AsyncConnection[tuple[object, ...]]", str], Awaitable[None]]

MIGRATIONS: list[tuple[str, Migration]] = [
    ("0001_create_blobs", _CREATE_BLOBS),
    ("0002_search_index", _search_index),
]
SCHEMA_VERSION = len(MIGRATIONS)


class NewerSchemaError(RuntimeError):
    """The store was written by a newer makers-store."""


def quoted(schema: str) -> str:
    if not SCHEMA_NAME.fullmatch(schema):
        raise ValueError(f"invalid schema name {schema!r}")
    return f'"{schema}"'


def lock_id(schema: str) -> int:
    """A stable signed 64-bit advisory-lock key for migrating ``schema``."""
    digest = hashlib.blake2b(f"makers_store:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _check(applied: set[str]) -> int:
    unknown = applied - {name for name, _ in MIGRATIONS}
    if unknown:
        raise NewerSchemaError(
            f"the store was written by a newer makers-store (migrations {sorted(unknown)})"
        )
    return len(applied)


async def migrate(conn: AsyncConnection[tuple[object, ...]], schema: str) -> int:
    """Bring ``schema`` up to date on an autocommit connection; returns the version."""
    import psycopg

    q = quoted(schema)
    try:
        cursor = await conn.execute(f"SELECT name FROM {q}._migrations")
        applied = {str(row[0]) for row in await cursor.fetchall()}
        if _check(applied) == SCHEMA_VERSION:
            return SCHEMA_VERSION
    except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
        pass  # a new store
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id(schema),))
        cursor = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cursor.fetchone() is None:
            await conn.execute(f"CREATE SCHEMA {q}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {q}._migrations"
            " (name text PRIMARY KEY, applied_at bigint NOT NULL)"
        )
        cursor = await conn.execute(f"SELECT name FROM {q}._migrations")
        applied = {str(row[0]) for row in await cursor.fetchall()}
        _check(applied)
        for name, statement in MIGRATIONS:
            if name not in applied:
                if isinstance(statement, str):
                    await conn.execute(statement.format(schema=q))
                else:
                    await statement(conn, q)
                await conn.execute(
                    f"INSERT INTO {q}._migrations (name, applied_at) VALUES (%s, %s)",
                    (name, time.time_ns() // 1_000_000),
                )
    return SCHEMA_VERSION
