"""The PostgreSQL backend (``postgresql://user:password@host:port/database``).

Needs the ``postgres`` extra (psycopg 3). One table of blobs
per store, keyed by the blob key in the "C" collation, so keys sort by code
point and a prefix query is a range scan of the primary key.

URL query options (the rest of the query goes to libpq untouched, e.g.
``sslmode``, ``connect_timeout``, ``application_name``):

``schema``
    the PostgreSQL schema holding the store's tables (default ``public``);
    many stores can share one database, one schema each. Created on first use.
``pool_min`` / ``pool_max``
    connections each event loop opens on first use / may have open at once
    (default 1 / 10).
``pool_timeout``
    the most seconds a unit waits for a free connection before failing. By
    default a unit queues as long as its retry budget allows (60 s, counted
    apart from the time spent trying: :func:`makers_store.retry.queue_allowance`),
    so a batch of calls larger than the pool waits its turn instead of failing;
    the error, if that runs out, names the budget.

Event loops and threads. A store object may be used from any event loop and
any thread, one after another or at once. psycopg's async connections belong
to the loop that made them (each carries an ``asyncio.Lock``), so each loop
has a pool of its own (:class:`_LoopPool`, kept by :class:`.per_loop.PerLoop`),
opened on its first unit and released when that loop shuts down or the store
closes. A pool has no background task (psycopg_pool's maintenance workers,
bound to one loop, swallowed the cancellation that ``asyncio.run`` sends at
shutdown and hung it): a unit opens a connection itself when none is idle.
A connection goes back to its pool only when its unit ended cleanly and it
is idle outside a pipeline; after a cancellation, a driver error or anything
unexpected it is closed, since its state (and psycopg's record of which
statements the server has prepared) is unknown.

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
that never waits sends no ``BEGIN`` / ``COMMIT`` at all: its statements are
one implicit transaction, sent as one statement when they can be (a few
writes of distinct keys and the change notice) and up to a pipeline's Sync
otherwise (see ``postgres_units``). A
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
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from makers_store.blob import (
    MIN_QUERY,
    TRANSACTIONAL,
    BlobStore,
    Capabilities,
    SearchIndexCheck,
    VacuumReport,
    drive_async,
)
from makers_store.blob_ops import Program
from makers_store.errors import (
    BackendError,
    MemoryValidationError,
    PreconditionFailedError,
    StoreError,
    missing_extra,
)
from makers_store.retry import queue_allowance, waited_in_queue

from ..per_loop import PerLoop
from . import migrations as migrations
from . import search as postgres_search
from .space import RECLAIMABLE_BYTES, parameters, vacuum_tables
from .units import Statements, Unit
from .watch import watch_notifications

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from .units import Connection

T = TypeVar("T")
OPTIONS = ("schema", "pool_min", "pool_max", "pool_timeout")
_RETRYABLE = ("40001", "40P01")  # serialization failure, deadlock detected
#: invalid_sql_statement_name: the connection ran a statement psycopg believed
#: prepared and the server did not have. The unit failed before its commit, so
#: it runs again, on another connection (this one is discarded).
_UNPREPARED = "26000"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise missing_extra("psycopg", "postgres") from None
    return psycopg


def _close_now(conn: Connection) -> None:
    """Close ``conn`` from any thread: psycopg's close never waits (it ends
    the libpq connection), and no loop watches an idle connection's socket."""
    conn.pgconn.finish()


def _close_when_connected(connecting: asyncio.Future[Connection]) -> None:
    """Close the connection a cancelled caller no longer waits for."""
    if not connecting.cancelled() and connecting.exception() is None:
        _close_now(connecting.result())


class _LoopPool:
    """One event loop's connections: those idle, and ``slots``, the
    semaphore of ``pool_max`` a unit holds while it has a connection.
    ``lock`` guards ``idle`` and ``closed``, which the store's close may
    change from another thread."""

    def __init__(self, size: int) -> None:
        self.idle: list[Connection] = []
        self.slots = asyncio.Semaphore(size)
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        """Close the idle connections; a connection in use is closed when its
        unit gives it back."""
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
        for conn in idle:
            _close_now(conn)


class PostgresBlobStore(BlobStore):
    capabilities: ClassVar[Capabilities] = TRANSACTIONAL

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        pool_min: int = 1,
        pool_max: int = 10,
        pool_timeout: float | None = None,
    ) -> None:
        psycopg = _psycopg()
        if not migrations.SCHEMA_NAME.fullmatch(schema):
            raise MemoryValidationError(
                f"schema {schema!r} must be letters, digits and _ (at most 63), not starting "
                "with a digit"
            )
        if not 1 <= pool_min <= pool_max:
            raise MemoryValidationError("pool sizes must satisfy 1 <= pool_min <= pool_max")
        if pool_timeout is not None and pool_timeout <= 0:
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
        self.search_sql = postgres_search.SearchStatements(migrations.quoted(schema))
        #: Write the search index beside each message (False only to measure
        #: what it costs, tests/bench/bench_search.py: searches then scan).
        self.index_messages = True
        #: The search index holds every message stored before it (None: not
        #: known yet); the thread indexing them (:class:`.postgres_search.Filler`).
        self._search_filled: bool | None = None
        self._filler: postgres_search.Filler | None = None
        self._migrated = False  # the schema is up to date (checked once per store object)
        self._pools: PerLoop[_LoopPool] = PerLoop(
            f"PostgreSQL store {self.location}", self._open_pool, _LoopPool.close
        )
        self._etag_prefix = os.urandom(6).hex() + "-"
        self._etags = itertools.count(1)
        #: Waits for the server's answer (round trips), statements sent and
        #: rows received since the store was opened (opening connections and
        #: bringing the schema up to date are not counted).
        self.round_trips = 0
        self.statements = 0
        self.rows_read = 0

    # --- errors and connections ------------------------------------------

    def _error(self, exc: BaseException) -> StoreError:
        """The StoreError for a psycopg error."""
        import psycopg

        if isinstance(exc, psycopg.Error) and exc.sqlstate in _RETRYABLE:
            return PreconditionFailedError(f"PostgreSQL store {self.location}: {exc}")
        if isinstance(exc, psycopg.Error) and exc.sqlstate == _UNPREPARED:
            return PreconditionFailedError(
                f"PostgreSQL store {self.location}: {exc} (the connection was discarded)"
            )
        if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
            return BackendError(f"cannot reach PostgreSQL at {self.server}: {exc}")
        return BackendError(f"PostgreSQL store {self.location}: {exc}")

    async def _connect(self) -> Connection:
        """A new connection; the store's first brings the schema up to date."""
        import psycopg

        # A task of its own, finished even if the caller is cancelled meanwhile:
        # psycopg abandons a connect cancelled half-way, leaving the server
        # connection open until the garbage collector finds it.
        connecting = asyncio.ensure_future(
            psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        )
        try:
            conn = await asyncio.shield(connecting)
        except asyncio.CancelledError:
            connecting.add_done_callback(_close_when_connected)
            raise
        except psycopg.Error as exc:
            raise BackendError(f"cannot connect to PostgreSQL at {self.server}: {exc}") from exc
        try:
            if not self._migrated:  # several loops at once: migrate() locks, and is idempotent
                self.schema_version = await migrations.migrate(conn, self.schema)
                self._migrated = True
                await self._fill_search_index(conn)
        except BaseException as exc:
            _close_now(conn)
            if isinstance(exc, psycopg.Error):
                raise self._error(exc) from exc
            if isinstance(exc, migrations.NewerSchemaError):
                raise BackendError(f"PostgreSQL store {self.location}: {exc}") from exc
            raise
        return conn

    async def _open_pool(self) -> _LoopPool:
        """The running loop's pool, with its first ``pool_min`` connections."""
        pool = _LoopPool(self.pool_max)
        first = [await self._connect()]  # alone: it may migrate the schema
        try:
            rest = [self._connect() for _ in range(self.pool_min - 1)]
            first += await asyncio.gather(*rest)
        except BaseException:
            for conn in first:
                _close_now(conn)
            raise
        pool.idle = first
        return pool

    async def _take(self, pool: _LoopPool) -> Connection:
        """A connection of ``pool``: an idle one, or a new one. Time spent
        waiting for a slot is queue time, which retry budgets do not count."""
        if pool.slots.locked():
            allowance, budget = queue_allowance()
            timeout = self.pool_timeout
            capped = timeout is not None and timeout < allowance
            limit = timeout if timeout is not None and capped else allowance
            began = time.monotonic()
            try:
                async with asyncio.timeout(limit):
                    await pool.slots.acquire()
            except TimeoutError:
                waited_in_queue(time.monotonic() - began)
                bound = (
                    "pool_timeout"
                    if capped
                    else f"the call's retry budget of {budget:g}s, which bounds time queued "
                    "for a connection"
                )
                raise BackendError(
                    f"PostgreSQL store {self.location}: no connection to {self.server} "
                    f"within {limit:.3g}s ({bound}): all {self.pool_max} of this event "
                    "loop's connections stayed in use; raise pool_max, or send fewer calls "
                    "at once"
                ) from None
            waited_in_queue(time.monotonic() - began)
        else:
            await pool.slots.acquire()  # free: returns without suspending
        try:
            with pool.lock:
                conn = pool.idle.pop() if pool.idle else None
            return conn if conn is not None else await self._connect()
        except BaseException:
            pool.slots.release()
            raise

    @staticmethod
    def _give(pool: _LoopPool, conn: Connection, clean: bool) -> None:
        """Return ``conn`` to ``pool`` if its unit ended ``clean`` and it is
        idle outside a pipeline; otherwise close it."""
        from psycopg.pq import PipelineStatus, TransactionStatus

        clean = (
            clean
            and not conn.closed
            and conn.info.transaction_status == TransactionStatus.IDLE
            and conn.pgconn.pipeline_status == PipelineStatus.OFF
        )
        with pool.lock:
            kept = clean and not pool.closed
            if kept:
                pool.idle.append(conn)
        if not kept:
            _close_now(conn)
        pool.slots.release()

    # --- units -----------------------------------------------------------

    async def run(self, program: Program[T], *, write: bool) -> T:
        import psycopg

        try:
            pool = self._pools.current() or await self._pools.get()
            conn = await self._take(pool)
            clean = False
            try:
                unit = Unit(self, conn, write)
                if write:
                    result = await unit.run_write(program)
                else:
                    result = await drive_async(program, unit.apply)
                clean = True
                return result
            except PreconditionFailedError:  # a condition of ours; the unit rolled back
                clean = True
                raise
            except psycopg.Error as exc:  # a deadlock leaves a healthy connection; the rest may not
                clean = exc.sqlstate in _RETRYABLE
                raise
            finally:
                self._give(pool, conn, clean)
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        finally:
            program.close()

    def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """``LISTEN`` on a connection of the watcher's own: every write unit
        notifies the keys it wrote at commit (:mod:`.postgres_watch`)."""
        return watch_notifications(self.conninfo, self.schema)

    async def vacuum(self) -> VacuumReport:
        """``VACUUM`` of the store's own tables on one of this loop's
        connections, which are autocommit and idle between units: outside any
        transaction block, as VACUUM needs (:mod:`.postgres_space`)."""
        import psycopg

        pool = self._pools.current() or await self._pools.get()
        conn = await self._take(pool)
        clean = False
        try:
            report = await vacuum_tables(conn, self.schema)
            clean = True
            return report
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        finally:
            self._give(pool, conn, clean)

    async def search_message_keys(self, folded: str, limit: int) -> list[str] | None:
        """From ``search_rows`` and its trigram index (:mod:`.postgres_search`)."""
        if len(folded) < MIN_QUERY or not self.index_messages:
            return None
        if not self._search_filled:  # filled once, it stays so (a rebuild fills in one go)
            q = migrations.quoted(self.schema)
            after = await self._on_connection(lambda conn: postgres_search.filled_after(conn, q))
            self._search_filled = after is None
            if after is not None:
                return None  # the messages stored before the index are being indexed
        return await self._on_connection(
            lambda conn: postgres_search.message_keys(conn, self.search_sql, folded, limit)
        )

    async def check_search_index(self) -> SearchIndexCheck | None:
        q = migrations.quoted(self.schema)
        return await self._on_connection(lambda conn: postgres_search.check(conn, q))

    async def rebuild_search_index(self) -> int | None:
        q = migrations.quoted(self.schema)
        return await self._on_connection(lambda conn: postgres_search.rebuild(conn, q))

    async def _fill_search_index(self, conn: Connection) -> None:
        """Start indexing the messages stored before the index (once a store object)."""
        q = migrations.quoted(self.schema)
        if self._filler is None and await postgres_search.filled_after(conn, q) is not None:
            lock_key = migrations.lock_id(self.schema) ^ 1  # not the migration's lock
            self._filler = postgres_search.Filler(self.conninfo, q, lock_key)

    async def wait_for_search_fill(self) -> None:
        """Until this process's fill of older messages has ended (tests, benchmarks)."""
        if self._filler is not None:
            await asyncio.to_thread(self._filler.thread.join)

    async def _on_connection(self, work: Callable[[Connection], Awaitable[T]]) -> T:
        """``work`` on one of this loop's connections (autocommit, idle between units)."""
        import psycopg

        pool = self._pools.current() or await self._pools.get()
        conn = await self._take(pool)
        clean = False
        try:
            result = await work(conn)
            clean = True
            return result
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        finally:
            self._give(pool, conn, clean)

    def next_etag(self) -> str:
        return f"{self._etag_prefix}{next(self._etags):x}"

    async def close(self) -> None:
        """Release every event loop's connections, from any loop."""
        if self._filler is not None:
            await asyncio.to_thread(self._filler.stop)  # after the batch under way
        await self._pools.aclose()

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
                reclaimable = conn.execute(RECLAIMABLE_BYTES, parameters(self.schema)).fetchone()[0]
        except psycopg.errors.UndefinedTable:
            applied, count, size, reclaimable = 0, 0, 0, 0  # nothing written yet
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        facts.update(schema_version=int(applied), blobs=int(count), blob_bytes=int(size))
        # an estimate from the table statistics (see .postgres_space)
        facts.update(reclaimable_bytes=int(reclaimable), reclaimable_estimate=True)
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
        timeout = options.get("pool_timeout")
        pool_timeout = None if timeout is None else float(timeout)
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
