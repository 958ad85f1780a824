"""The PostgreSQL backend (``postgresql://user:password@host:port/database``).

Needs the ``postgres`` extra (psycopg 3 and psycopg_pool). One table of blobs
per store, keyed by the blob key in the "C" collation, so keys sort by code
point and a prefix query is a range scan of the primary key.

URL query options (the rest of the query goes to libpq untouched, e.g.
``sslmode``, ``connect_timeout``, ``application_name``):

``schema``
    the PostgreSQL schema holding the store's tables (default ``public``);
    many stores can share one database, one schema each. Created on first use.
``pool_min`` / ``pool_max``
    connections the pool keeps open / may open (default 1 / 10).
``pool_timeout``
    seconds a unit waits for a free connection before failing (default 30).

Isolation. A write unit is one ``READ COMMITTED`` transaction in which every
``Get`` reads with ``FOR UPDATE``: the unit holds a row lock on each existing
blob it reads or writes until it commits, so read-modify-write units of
existing blobs serialize (a second writer waits and then reads the first
one's result) and a unit's writes become visible together. Creation and
replacement are single conditional statements (``INSERT ... ON CONFLICT DO
NOTHING`` for if-none-match, ``UPDATE ... WHERE etag = ...`` for if-match),
which PostgreSQL re-checks against the latest committed row, so
compare-and-swap is exact. Range reads and reads of missing keys take no
locks (create with if-none-match, as the store's programs do); the programs
need no more (they are written to be correct even on object storage). A
deadlock between two units is reported as :class:`PreconditionFailedError`,
so the store runs the unit again.

A read unit runs its statements in autocommit mode, without ``BEGIN`` and
``COMMIT``: each statement sees everything committed when it starts, which is
all the store's read programs need, for one round trip per operation.

Speed. Write units run in pipeline mode: ``BEGIN`` travels with the first
statement, and an unconditional ``Put`` (whose result is known in advance)
does not wait for its reply, so a unit costs one round trip per read or
conditional write plus one for ``COMMIT``. Etags are made on the client (a
random per-store prefix and a counter) and psycopg prepares repeated
statements by itself.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from makers_store.blob import (
    Blob,
    BlobInfo,
    BlobStore,
    Delete,
    DeleteMany,
    Entry,
    Get,
    ListKeys,
    Op,
    Program,
    Put,
    Scan,
)
from makers_store.errors import (
    BackendError,
    MemoryValidationError,
    PreconditionFailedError,
    StoreError,
    missing_extra,
)

from . import postgres_migrations as migrations
from .sql_ranges import range_query

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

T = TypeVar("T")
OPTIONS = ("schema", "pool_min", "pool_max", "pool_timeout")
_RETRYABLE = ("40001", "40P01")  # serialization failure, deadlock detected


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401 - checked here so the error names the extra
    except ImportError:
        raise missing_extra("psycopg", "postgres") from None
    return psycopg


class _Sql:
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
        self.replace = (
            f"UPDATE {t} SET etag = %s, size = %s, updated_at = %s, data = %s"
            " WHERE key = %s AND etag = %s RETURNING 1"
        )
        self.delete = f"DELETE FROM {t} WHERE key = %s RETURNING 1"
        self.delete_if = f"DELETE FROM {t} WHERE key = %s AND etag = %s RETURNING 1"
        self.delete_many = f"DELETE FROM {t} WHERE key = ANY(%s)"

    def range(self, op: ListKeys | Scan) -> tuple[str, list[Any]]:
        return range_query(op, self.table, "%s")


class PostgresBlobStore(BlobStore):
    atomic: ClassVar[bool] = True

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        pool_min: int = 1,
        pool_max: int = 10,
        pool_timeout: float = 30.0,
    ) -> None:
        psycopg = _psycopg()
        if not migrations.SCHEMA_NAME.fullmatch(schema):
            raise MemoryValidationError(
                f"schema {schema!r} must be letters, digits and _ (at most 63), not starting "
                "with a digit"
            )
        if not 1 <= pool_min <= pool_max:
            raise MemoryValidationError("pool sizes must satisfy 1 <= pool_min <= pool_max")
        if pool_timeout <= 0:
            raise MemoryValidationError("pool_timeout must be positive")
        try:
            params = psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.Error as exc:
            raise MemoryValidationError(f"invalid PostgreSQL URL: {exc}") from None
        self.conninfo = conninfo
        self.schema = schema
        self.pool_min, self.pool_max, self.pool_timeout = pool_min, pool_max, pool_timeout
        host = params.get("host") or params.get("hostaddr") or "localhost"
        port = params.get("port") or "5432"
        self.server = f"{host}:{port}"
        user = f"{params['user']}@" if params.get("user") else ""
        self.location = (
            f"postgresql://{user}{self.server}/{params.get('dbname', '')}?schema={schema}"
        )
        self.schema_version = 0
        self._sql = _Sql(schema)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._etag_prefix = os.urandom(6).hex() + "-"
        self._etags = itertools.count(1)

    # --- errors and connections ------------------------------------------

    def _error(self, exc: BaseException) -> StoreError:
        """The StoreError for a psycopg or pool error."""
        import psycopg
        import psycopg_pool

        if isinstance(exc, psycopg.Error) and exc.sqlstate in _RETRYABLE:
            return PreconditionFailedError(f"PostgreSQL store {self.location}: {exc}")
        if isinstance(exc, psycopg_pool.PoolClosed):
            return BackendError(f"PostgreSQL store {self.location} is closed")
        if isinstance(exc, psycopg_pool.PoolTimeout):
            return BackendError(
                f"PostgreSQL store {self.location}: no connection to {self.server} "
                f"within {self.pool_timeout:g}s ({exc})"
            )
        if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
            return BackendError(f"cannot reach PostgreSQL at {self.server}: {exc}")
        return BackendError(f"PostgreSQL store {self.location}: {exc}")

    async def _ready(self) -> AsyncConnectionPool[Any]:
        """The pool, opened on first use after bringing the schema up to date."""
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                import psycopg
                from psycopg_pool import AsyncConnectionPool

                if self._closed:
                    raise BackendError(f"PostgreSQL store {self.location} is closed")
                try:
                    conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
                except psycopg.Error as exc:
                    raise BackendError(
                        f"cannot connect to PostgreSQL at {self.server}: {exc}"
                    ) from exc
                try:
                    self.schema_version = await migrations.migrate(conn, self.schema)
                except psycopg.Error as exc:
                    raise self._error(exc) from exc
                except migrations.NewerSchemaError as exc:
                    raise BackendError(f"PostgreSQL store {self.location}: {exc}") from exc
                finally:
                    await conn.close()
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self.conninfo,
                    min_size=self.pool_min,
                    max_size=self.pool_max,
                    timeout=self.pool_timeout,
                    kwargs={"autocommit": True},
                    open=False,
                    name=f"makers-store {self.location}",
                )
                await pool.open(wait=False)
                self._pool = pool
        return self._pool

    # --- units -----------------------------------------------------------

    async def _apply(self, conn: Any, op: Op, write: bool) -> Any:
        sql = self._sql
        if type(op) is Get:
            query = sql.get_for_update if write else sql.get
            row = await (await conn.execute(query, (op.key,), binary=True)).fetchone()
            return None if row is None else Blob(op.key, row[0], row[1], row[2], row[3])
        if type(op) is Put:
            etag = f"{self._etag_prefix}{next(self._etags):x}"
            now = time.time_ns() // 1_000_000
            size = len(op.data)
            if op.if_match is not None:
                replace = (etag, size, now, op.data, op.key, op.if_match)
                if await (await conn.execute(sql.replace, replace)).fetchone() is None:
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            elif op.if_none_match:
                create = (op.key, etag, size, now, op.data)
                if await (await conn.execute(sql.create, create)).fetchone() is None:
                    raise PreconditionFailedError(f"{op.key!r} already exists")
            else:  # the result is known: in a pipeline, do not wait for the reply
                await conn.execute(sql.upsert, (op.key, etag, size, now, op.data))
            return BlobInfo(op.key, etag, size, now)
        if type(op) is Delete:
            if op.if_match is None:
                return await (await conn.execute(sql.delete, (op.key,))).fetchone() is not None
            cursor = await conn.execute(sql.delete_if, (op.key, op.if_match))
            if await cursor.fetchone() is None:
                raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)")
            return True
        if type(op) is DeleteMany:  # nothing to answer: no need to wait in a pipeline
            await conn.execute(sql.delete_many, (list(op.keys),))
            return None
        if type(op) is Scan:
            query, params = sql.range(op)
            rows = await (await conn.execute(query, params, binary=True)).fetchall()
            return [Entry(row[0], row[1]) for row in rows]
        if type(op) is ListKeys:
            query, params = sql.range(op)
            rows = await (await conn.execute(query, params)).fetchall()
            return [BlobInfo(row[0], row[1], row[2], row[3]) for row in rows]
        raise TypeError(f"unknown blob operation {op!r}")

    async def _drive(self, conn: Any, program: Program[T], write: bool) -> T:
        """The async counterpart of :func:`makers_store.blob.drive_sync`."""
        try:
            op = next(program)
            while True:
                try:
                    result = await self._apply(conn, op, write)
                except PreconditionFailedError as exc:
                    op = program.throw(exc)
                else:
                    op = program.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def _run_write(self, conn: Any, program: Program[T]) -> T:
        from psycopg.pq import TransactionStatus

        committed = False
        try:
            async with conn.pipeline():
                await conn.execute("BEGIN")
                result = await self._drive(conn, program, write=True)
                await conn.execute("COMMIT")
            committed = True  # leaving the pipeline received COMMIT's reply
            return result
        finally:
            if not committed and conn.info.transaction_status != TransactionStatus.IDLE:
                try:
                    await conn.execute("ROLLBACK")
                except Exception:  # the error that led here is the one to report
                    pass

    async def run(self, program: Program[T], *, write: bool) -> T:
        import psycopg

        try:
            if self._closed:
                raise BackendError(f"PostgreSQL store {self.location} is closed")
            pool = await self._ready()
            conn = await pool.getconn()  # a third of the cost of pool.connection()
            try:
                if write:
                    return await self._run_write(conn, program)
                return await self._drive(conn, program, write=False)
            finally:
                await pool.putconn(conn)
        except psycopg.Error as exc:  # the pool's errors included
            raise self._error(exc) from exc
        finally:
            program.close()

    async def close(self) -> None:
        self._closed = True
        async with self._opening:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def describe(self) -> dict[str, Any]:
        """Facts for ``makers-store info``, read over a short-lived connection."""
        psycopg = _psycopg()
        facts: dict[str, Any] = {
            "kind": "postgres",
            "location": self.location,
            "schema": self.schema,
        }
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                facts["server_version"] = conn.execute("SHOW server_version").fetchone()[0]
                applied = conn.execute(
                    f"SELECT count(*) FROM {migrations.quoted(self.schema)}._migrations"
                ).fetchone()[0]
                count, size = conn.execute(
                    f"SELECT count(*), coalesce(sum(size), 0) FROM {self._sql.table}"
                ).fetchone()
        except psycopg.errors.UndefinedTable:
            applied, count, size = 0, 0, 0  # nothing written yet
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        facts.update(schema_version=int(applied), blobs=int(count), blob_bytes=int(size))
        return facts


def from_url(url: str, path: str, options: dict[str, str]) -> BlobStore:
    """Build the store for ``url``; our options are removed before libpq sees it."""
    del path  # libpq parses the URL itself
    parts = urlsplit(url)
    rest = [(k, v) for k, v in parse_qsl(parts.query) if k not in OPTIONS]
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    try:
        pool_min = int(options.get("pool_min", "1"))
        pool_max = int(options.get("pool_max", "10"))
        pool_timeout = float(options.get("pool_timeout", "30"))
    except ValueError:
        raise MemoryValidationError(
            "postgresql url: pool_min and pool_max must be integers, pool_timeout a number"
        ) from None
    return PostgresBlobStore(
        conninfo,
        schema=options.get("schema", "public"),
        pool_min=pool_min,
        pool_max=pool_max,
        pool_timeout=pool_timeout,
    )
