"""A PostgreSQL unit of work: blob operations as statements on one connection.

A read unit runs each statement in autocommit, one round trip each. A write
unit runs in pipeline mode inside ``BEGIN`` / ``COMMIT``: statements whose
answer the program reads wait for it (one round trip, which also carries
everything sent before), the others travel with the next wait. A write unit
that never waits (a checkpoint, pending writes, a state set...) sends its
writes and its change notice as one statement, data-modifying ``WITH``
clauses before the notice, when they write distinct keys and are few
(:func:`combined`): one implicit transaction as before, without a pipeline,
which costs the client about a third less per unit than three statements in
one (issue 36). The waits are counted on the store (``round_trips``) so that
a test can hold a program to a bound.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, assert_never

from makers_store.blob import drive_async, is_message_key
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
    Program,
    Put,
    Scan,
    keys_written,
)
from makers_store.errors import PreconditionFailedError

from ..sql_ranges import range_query
from . import migrations as migrations
from .search import SearchStatements, message_keys_of, writes_for_put
from .watch import CHANNEL, NOTIFY, payload

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor
    from psycopg.rows import TupleRow

    Connection = AsyncConnection[TupleRow]

T = TypeVar("T")
#: At most this many writes of a unit that never waits go as one statement
#: (each shape of such a statement is a statement psycopg prepares).
COMBINED_MAX = 4


class Statements:
    """The statements of one store, with its schema name filled in."""

    def __init__(self, schema: str) -> None:
        t = f"{migrations.quoted(schema)}.blobs"
        self.table = t
        self.get = f"SELECT etag, size, updated_at, data FROM {t} WHERE key = %s"
        self.get_for_update = self.get + " FOR UPDATE"
        insert = f"INSERT INTO {t} (key, etag, size, updated_at, data) VALUES (%s, %s, %s, %s, %s)"
        self.upsert = (
            f"{insert} ON CONFLICT (key) DO UPDATE SET etag = excluded.etag,"
            " size = excluded.size, updated_at = excluded.updated_at, data = excluded.data"
        )
        self.create = f"{insert} ON CONFLICT (key) DO NOTHING RETURNING 1"
        self.create_quietly = f"{insert} ON CONFLICT (key) DO NOTHING"
        self.get_many = f"SELECT key, etag, size, updated_at, data FROM {t} WHERE key = ANY(%s)"
        # one lock order for every writer: two batch reads cannot deadlock
        self.get_many_for_update = self.get_many + " ORDER BY key FOR UPDATE"
        self.replace = (
            f"UPDATE {t} SET etag = %s, size = %s, updated_at = %s, data = %s"
            " WHERE key = %s AND etag = %s RETURNING 1"
        )
        self.delete = f"DELETE FROM {t} WHERE key = %s RETURNING 1"
        self.delete_if = f"DELETE FROM {t} WHERE key = %s AND etag = %s RETURNING 1"
        self.delete_many = f"DELETE FROM {t} WHERE key = ANY(%s)"

    def range(self, op: ListKeys | Scan) -> tuple[str, list[Any]]:
        return range_query(op, self.table, "%s")


class UnitOwner(Protocol):
    """What a unit reads and counts on the store that runs it
    (:class:`~.backend.PostgresBlobStore`, which makes its units: named here
    so that this module does not import the backend back)."""

    schema: str
    sql: Statements
    statements: int
    round_trips: int
    rows_read: int
    #: whether writes keep the search index (False while a migration fills it)
    index_messages: bool
    search_sql: SearchStatements

    def next_etag(self) -> str: ...


class Unit:
    """One unit of work on one connection: its operations as statements,
    with the round trips they cost counted on the store."""

    def __init__(self, store: UnitOwner, conn: Connection, write: bool) -> None:
        self.store = store
        self.sql = store.sql
        self.conn = conn
        self.write = write  # a write unit runs in a pipeline, in one transaction
        #: A write unit's statements whose answer nobody reads, held until the
        #: unit first waits (``BEGIN`` then goes before them) or ends: then
        #: they go without ``BEGIN`` / ``COMMIT``, since the statements up to
        #: the pipeline's Sync are one implicit transaction, all or nothing
        #: (two statements fewer for a unit that only writes).
        self.held: list[tuple[str, Sequence[object]]] | None = [] if write else None
        #: Where a write unit's pipeline is opened, at its first wait.
        self.pipeline: contextlib.AsyncExitStack | None = None

    async def _execute(
        self, query: str, params: Sequence[object], binary: bool = False
    ) -> AsyncCursor[TupleRow]:
        self.store.statements += 1
        return await self.conn.execute(query, params, binary=binary)

    async def _begin(self) -> None:
        """Before a write unit's first wait: the pipeline, ``BEGIN``, then what it held."""
        if self.held is not None:
            held, self.held = self.held, None
            assert self.pipeline is not None
            await self.pipeline.enter_async_context(self.conn.pipeline())
            await self._execute("BEGIN", ())
            for query, params in held:
                await self._execute(query, params)

    async def query(self, query: str, params: Sequence[object], binary: bool = False) -> list[Any]:
        """Run ``query`` and wait for its rows: one round trip."""
        await self._begin()
        self.store.round_trips += 1
        cursor = await self._execute(query, params, binary=binary)
        rows = await cursor.fetchall()
        self.store.rows_read += len(rows)
        return rows

    async def query_many(self, queries: Sequence[tuple[str, Sequence[object]]]) -> list[list[Any]]:
        """Run independent ``queries`` and wait for all their rows at once:
        one round trip (a read unit opens a pipeline for them)."""
        await self._begin()
        self.store.round_trips += 1
        async with contextlib.AsyncExitStack() as stack:
            if not self.write:  # a write unit's pipeline is already open
                await stack.enter_async_context(self.conn.pipeline())
            cursors = [await self._execute(query, params) for query, params in queries]
            answers = [await cursor.fetchall() for cursor in cursors]
        self.store.rows_read += sum(len(rows) for rows in answers)
        return answers

    async def send(self, query: str, params: Sequence[object] = ()) -> None:
        """Run ``query`` whose answer nobody reads: in a write unit it is held
        or travels in the pipeline with the next wait; a read unit waits."""
        if self.held is not None:
            self.held.append((query, params))
            return
        if not self.write:
            self.store.round_trips += 1
        await self._execute(query, params)

    async def run_write(self, program: Program[T]) -> T:
        from psycopg.pq import TransactionStatus

        committed = False
        try:
            written: list[str] = []

            async def apply(op: Op) -> object:
                written.extend(keys_written(op))
                return await self.apply(op)

            async with contextlib.AsyncExitStack() as stack:
                self.pipeline = stack  # the first wait opens the pipeline (_begin)
                result = await drive_async(program, apply)
                if written:  # delivered at commit to ContextStore.watch (postgres_watch)
                    await self.send(NOTIFY, (CHANNEL, payload(self.store.schema, written)))
                if self.held is None:  # began: an explicit transaction, in the pipeline
                    await self._execute("COMMIT", ())
                    self.store.round_trips += 1  # leaving the pipeline waits for every reply
                elif self.held:  # never waited: an implicit transaction
                    held, self.held = self.held, None
                    statement = combined(held)
                    if statement is not None:
                        await self._execute(*statement)
                    else:
                        await stack.enter_async_context(self.conn.pipeline())
                        for query, params in held:
                            await self._execute(query, params)
                    self.store.round_trips += 1
            committed = True
            return result
        finally:
            if not committed and self.conn.info.transaction_status != TransactionStatus.IDLE:
                try:
                    await self.conn.execute("ROLLBACK")
                except Exception:  # the error that led here is the one to report
                    pass

    async def apply(self, op: Op) -> object:
        sql = self.sql
        match op:
            case Get():
                query = sql.get_for_update if self.write else sql.get
                rows = await self.query(query, (op.key,), binary=True)
                return Blob(op.key, *rows[0]) if rows else None
            case GetMany():
                query = sql.get_many_for_update if self.write else sql.get_many
                rows = await self.query(query, (list(op.keys),), binary=True)
                found = {row[0]: Blob(*row) for row in rows}
                return [found.get(key) for key in op.keys]
            case Put():
                return await self._put(op)
            case Delete():
                if op.if_match is None:
                    deleted = bool(await self.query(sql.delete, (op.key,)))
                elif not await self.query(sql.delete_if, (op.key, op.if_match)):
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
                else:
                    deleted = True
                # the search index, in this transaction
                if deleted and self.store.index_messages and is_message_key(op.key):
                    await self.send(self.store.search_sql.delete, (op.key,))
                return deleted
            case DeleteMany():
                await self.send(sql.delete_many, (list(op.keys),))
                messages = message_keys_of(op.keys) if self.store.index_messages else []
                if messages:  # the search index, in this transaction
                    await self.send(self.store.search_sql.delete_many, (messages,))
                return None
            case Scan():
                query, params = sql.range(op)
                return [Entry(*row) for row in await self.query(query, params, binary=True)]
            case ListKeys():
                query, params = sql.range(op)
                return [BlobInfo(*row) for row in await self.query(query, params)]
            case ListMany():
                answers = await self.query_many([sql.range(listing) for listing in op.listings])
                return [[BlobInfo(*row) for row in rows] for rows in answers]
            case _:
                assert_never(op)

    async def _put(self, op: Put) -> BlobInfo | None:
        info = await self._put_blob(op)
        if not self.store.index_messages:
            return info
        # the search index, in this transaction (after the Put: a failed
        # precondition raised before it; a quiet create keeps an existing
        # blob and so keeps its row too)
        search = writes_for_put(
            self.store.search_sql, op.key, op.data, quietly=op.if_none_match and op.quiet
        )
        if search is not None:
            await self.send(*search)
        return info

    async def _put_blob(self, op: Put) -> BlobInfo | None:
        sql = self.sql
        etag = self.store.next_etag()
        now = time.time_ns() // 1_000_000
        size = len(op.data)
        if op.if_match is not None:
            replace = (etag, size, now, op.data, op.key, op.if_match)
            if not await self.query(sql.replace, replace):
                raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
        elif op.if_none_match and op.quiet:  # kept if it exists; nobody waits to know
            await self.send(sql.create_quietly, (op.key, etag, size, now, op.data))
            return None
        elif op.if_none_match:
            if not await self.query(sql.create, (op.key, etag, size, now, op.data)):
                raise PreconditionFailedError(f"{op.key!r} already exists", key=op.key)
        else:  # the result is known: in a pipeline, do not wait for the reply
            await self.send(sql.upsert, (op.key, etag, size, now, op.data))
        return BlobInfo(op.key, etag, size, now)


def combined(held: Sequence[tuple[str, Sequence[object]]]) -> tuple[str, list[object]] | None:
    """The held writes of a unit that never waited as one statement: each but
    the last a data-modifying ``WITH`` clause (all run, referenced or not),
    the last (the change notice, when there is one) its body. None when they
    cannot be one: more than :data:`COMBINED_MAX`, one that is not an
    ``INSERT`` or ``DELETE`` before the last (a ``SELECT`` clause would not
    run), or two that write one key (the clauses of a statement see one
    snapshot, so their order would not hold)."""
    if not held or len(held) > COMBINED_MAX:
        return None
    keys: set[object] = set()
    clauses: list[str] = []
    params: list[object] = []
    last = len(held) - 1
    for index, (query, values) in enumerate(held):
        if query.startswith(("INSERT", "DELETE")):
            touched = values[0]
            for key in touched if isinstance(touched, list) else [touched]:
                if key in keys:
                    return None
                keys.add(key)
        elif index < last:
            return None
        if index < last:
            clauses.append(f"w{index} AS ({query})")
        params.extend(values)
    body = held[last][0]
    return (f"WITH {', '.join(clauses)} {body}" if clauses else body), params
