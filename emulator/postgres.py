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
statement, and a write whose answer nobody reads (an unconditional ``Put``,
a quiet create, ``DeleteMany``) does not wait for its reply, so a unit costs
one round trip per read or conditional write plus one for ``COMMIT``. A unit
that never waits sends no ``BEGIN`` / ``COMMIT`` at all: its statements, up
to the pipeline's Sync, are one implicit transaction (see ``postgres_units``). A
``GetMany`` is one ``= ANY`` query. Etags are made on the client (a random
per-store prefix and a counter) and psycopg prepares repeated statements by
itself. :attr:`PostgresBlobStore.round_trips` counts the waits for the
server (and ``statements`` the statements sent), as the S3 backend counts its
requests, so tests and benchmarks can hold the store's programs to a bound.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from makers_store.blob import TRANSACTIONAL, BlobStore, Capabilities, drive_async
from makers_store.blob_ops import Program
from makers_store.errors import (
    BackendError,
    MemoryValidationError,
    PreconditionFailedError,
    StoreError,
    missing_extra,
)

from . import postgres_migrations as migrations
from .postgres_units import Statements, Unit
from .postgres_watch import watch_notifications

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from .postgres_units import Connection

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


class PostgresBlobStore(BlobStore):
    capabilities: ClassVar[Capabilities] = TRANSACTIONAL

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
        self.sql = Statements(schema)
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._opening = asyncio.Lock()
        self._closed = False
        self._etag_prefix = os.urandom(6).hex() + "-"
        self._etags = itertools.count(1)
        #: Waits for the server's answer (round trips), statements sent and
        #: rows received since the store was opened (opening the pool and
        #: bringing the schema up to date are not counted).
        self.round_trips = 0
        self.statements = 0
        self.rows_read = 0

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

    async def _ready(self) -> AsyncConnectionPool[Connection]:
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
                pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
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

    async def run(self, program: Program[T], *, write: bool) -> T:
        import psycopg

        try:
            if self._closed:
                raise BackendError(f"PostgreSQL store {self.location} is closed")
            pool = await self._ready()
            conn = await pool.getconn()  # a third of the cost of pool.connection()
            try:
                unit = Unit(self, conn, write)
                if write:
                    return await unit.run_write(program)
                return await drive_async(program, unit.apply)
            finally:
                await pool.putconn(conn)
        except psycopg.Error as exc:  # the pool's errors included
            raise self._error(exc) from exc
        finally:
            program.close()

    def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """``LISTEN`` on a connection of the watcher's own: every write unit
        notifies the keys it wrote at commit (:mod:`.postgres_watch`)."""
        return watch_notifications(self.conninfo, self.schema)

    def next_etag(self) -> str:
        return f"{self._etag_prefix}{next(self._etags):x}"

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
                    f"SELECT count(*), coalesce(sum(size), 0) FROM {self.sql.table}"
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
