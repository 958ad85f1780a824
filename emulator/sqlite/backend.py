"""The SQLite emulator of the platform's Blob storage (``sqlite:///path.db``).

One table of blobs, keyed by the blob key. Every unit of work is one
transaction: ``BEGIN IMMEDIATE`` for writers, so writers in other processes
queue on SQLite's lock, a deferred ``BEGIN`` for readers, which see a
snapshot thanks to WAL. Any error rolls the unit back.

Where a unit runs (measured in tests/bench/bench_sqlite.py):

* On the inline connection (:mod:`.sqlite_inline`), first on the caller's
  thread: most units take 0.1-0.7 ms, less than a thread hop costs. What must
  not hold the event loop (a unit past 2 ms, a checkpoint, and every write at
  ``synchronous=full``, which waits for an fsync) goes on, or runs, on that
  connection's own thread, in the same transaction; writes that arrive
  meanwhile join its next transaction there, one commit for all. A write
  that finds the database locked by another process's writer waits there
  too, up to ``busy_timeout``, so the event loop never blocks on another
  process.
* On a worker thread with a connection of its own: reads that find the
  inline connection away (they run beside its writer, WAL), and the first
  units, whose connection brings the schema up to date (:mod:`.sqlite_file`).

Inline units complete without suspending the caller, so a coroutine calling
the store in a loop would never let the event loop run anything else; after
``HOLD_BUDGET`` (4 ms) of that, the next call yields to the loop once.

``synchronous=NORMAL`` (the default) never corrupts the file and loses no
committed unit when a process dies; a power cut may lose the last units.
``?synchronous=full`` makes every commit durable at the cost of an fsync.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from makers_store.blob import (
    MIN_QUERY,
    TRANSACTIONAL,
    BlobStore,
    Capabilities,
    SearchIndexCheck,
    VacuumReport,
)
from makers_store.blob_ops import Program
from makers_store.errors import BackendError, MemoryValidationError, StoreError

from . import search as sqlite_search
from .file import SqliteFile, rollback
from .inline import InlineConnection, Outcome
from .ops import BlobTable, begin
from .units import Unit

T = TypeVar("T")

SYNCHRONOUS = ("off", "normal", "full", "extra")
#: Inline units one after another (an await of an inline unit does not
#: suspend its caller) hold the event loop at most about this long; then the
#: next one yields to the loop once.
HOLD_BUDGET = 0.004


class SqliteBlobStore(BlobStore):
    capabilities: ClassVar[Capabilities] = TRANSACTIONAL

    def __init__(
        self, path: str | Path, *, synchronous: str = "normal", busy_timeout_ms: int = 30_000
    ) -> None:
        if synchronous.lower() not in SYNCHRONOUS:
            raise MemoryValidationError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}")
        self.path = Path(path)
        self.synchronous = synchronous.lower()
        self.busy_timeout_ms = busy_timeout_ms
        self.file = SqliteFile(self.path, self.synchronous, busy_timeout_ms)
        self._table = BlobTable(self.path)
        self._inline = InlineConnection(self.file, self._table)
        self._worker_conn: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="makers-sqlite")
        #: When inline units began holding the event loop with no pause (None:
        #: the loop has run its other callbacks since).
        self._held_since: float | None = None
        self._closed = False
        #: Write units since the last catch-up of the search index, and the
        #: catch-up under way (:mod:`.sqlite_search`).
        self._unindexed_writes = 0
        self._last_write = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_loop: asyncio.AbstractEventLoop | None = None
        #: a catch-up's chain of batches is under way (see _catch_up)
        self._catch_up_running = False

    @property
    def read_only(self) -> str | None:
        """Why the store is open read-only (None: writable); decided on first use."""
        return self.file.read_only

    @property
    def schema_version(self) -> int:
        return self.file.schema_version

    def _worker_connection(self) -> sqlite3.Connection:
        if self._worker_conn is None:
            self._worker_conn = self.file.connect_first()
        return self._worker_conn

    def _refuse_write(self, program: Program[T]) -> BackendError:
        program.close()
        return BackendError(
            f"SQLite store {self.path} is open read-only ({self.read_only}): "
            "writing needs write access to the file and its directory"
        )

    def _run_in_worker(self, unit: Unit) -> Any:
        try:
            conn = self._worker_connection()
            if unit.write and self.read_only is not None:
                raise self._refuse_write(unit.program)
            begin(conn, unit.write)
        except sqlite3.Error as exc:
            unit.abandon()
            raise BackendError(f"SQLite store {self.path}: cannot begin: {exc}") from exc
        except BaseException:
            unit.abandon()
            raise
        unit.start(inline=False)
        self._table.drive(conn, unit)
        self._table.commit(conn)
        return unit.result

    @property
    def index_messages(self) -> bool:
        """Whether writes mark messages for the search index (False only to
        measure what that costs: tests/bench/bench_search.py)."""
        return self._table.index_messages

    @index_messages.setter
    def index_messages(self, on: bool) -> None:
        self._table.index_messages = on

    # --- BlobStore -------------------------------------------------------

    async def run(self, program: Program[T], *, write: bool) -> T:
        if self._closed:
            program.close()
            raise BackendError(f"SQLite store {self.path} is closed")
        if write and self.file.read_only is not None:
            raise self._refuse_write(program)
        if write:
            self._note_write()
        unit = Unit(program, write)
        if self._worker_conn is not None:  # the schema is ready
            held = self._held_since
            if held is None or time.perf_counter() - held > HOLD_BUDGET:
                if held is not None:
                    await asyncio.sleep(0)  # inline units held the loop that long: let it run
                self._held_since = time.perf_counter()
                asyncio.get_running_loop().call_soon(self._loop_turned)
            outcome = self._inline.start(unit)
            if outcome is Outcome.DONE:
                return unit.result  # type: ignore[no-any-return]
            if outcome is Outcome.MOVED:
                return await self._inline.finish(unit)  # type: ignore[no-any-return]
            if outcome is Outcome.QUEUE:
                return await self._inline.join(unit)  # type: ignore[no-any-return]
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_in_worker, unit)

    def _loop_turned(self) -> None:
        self._held_since = None

    def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """Every commit by any process moves ``PRAGMA data_version``: read it
        every 0.1 s on a connection of the watcher's own (:mod:`.sqlite_watch`)."""
        from .watch import watch_data_version  # on use, as the next three: start-up

        return watch_data_version(self.path, poll_interval)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        await self._inline.close()  # after the units it has queued
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_worker)
        self._executor.shutdown(wait=True)

    def _close_worker(self) -> None:
        if self._worker_conn is not None:
            self._worker_conn.close()
            self._worker_conn = None

    async def vacuum(self) -> VacuumReport:
        """Give back the free pages deleted blobs left, the store readable by
        other processes throughout (:mod:`.sqlite_vacuum`). On a thread and a
        connection of its own; cancelled, it stops after the chunk under way."""
        if self._closed:
            raise BackendError(f"SQLite store {self.path} is closed")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._worker_connection)  # the schema, read-only
        if self.file.read_only is None:
            # The index rows of messages deleted by a process that ended
            # before it caught up (a CLI command) are dropped now, so that the
            # pages they held are given back by this vacuum, not left free.
            await self.catch_up_search_index()
        # A checkpoint beside the writers would keep vacuum's own from emptying the WAL.
        await loop.run_in_executor(self._executor, self._inline.end_background_checkpoint)
        stop = threading.Event()
        from .vacuum import vacuum_file

        work = loop.run_in_executor(None, vacuum_file, self.file, stop)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            raise

    def home(self) -> Path:
        return self.path.parent

    async def save_file_copy(self, destination: Path) -> bool:
        """SQLite's online backup of the store into ``destination``, on a
        thread of its own (:mod:`.sqlite_snapshot`)."""
        await self._ready_for_copy()
        from .snapshot import save_copy

        await asyncio.get_running_loop().run_in_executor(None, save_copy, self.file, destination)
        return True

    async def restore_file_copy(self, source: Path) -> bool:
        """SQLite's online backup of ``source`` into the store, one write
        transaction (:mod:`.sqlite_snapshot`)."""
        await self._ready_for_copy()
        from .snapshot import restore_copy

        await asyncio.get_running_loop().run_in_executor(None, restore_copy, self.file, source)
        return True

    async def _ready_for_copy(self) -> None:
        if self._closed:
            raise BackendError(f"SQLite store {self.path} is closed")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._worker_connection)  # the schema

    async def search_message_keys(self, folded: str, limit: int) -> list[str] | None:
        """From the FTS5 trigram index and the keys waiting for it
        (:mod:`.sqlite_search`), in a read transaction on the worker thread;
        None, and a catch-up started, when too many wait."""
        if len(folded) < MIN_QUERY:
            return None
        found = await self._on_worker(lambda c: sqlite_search.message_keys(c, folded, limit))
        if found is not None or self.read_only is not None:
            return found
        waiting = await self._on_worker(
            lambda c: sqlite_search.dirty_count(c, sqlite_search.BACKLOG_MAX + 1)
        )
        if waiting > sqlite_search.BACKLOG_MAX:  # a store just upgraded: scan meanwhile
            self._start_catch_up()
            return None
        await self.catch_up_search_index()  # a burst of writes: under a second to index
        return await self._on_worker(lambda c: sqlite_search.message_keys(c, folded, limit))

    async def catch_up_search_index(self) -> int:
        """Index every message blob waiting for the search index now; how many."""
        done = 0
        while True:
            taken = await self._on_worker(sqlite_search.catch_up, write=True)
            done += taken
            if taken < sqlite_search.CATCH_UP_BATCH:
                return done

    def _note_write(self) -> None:
        """A write unit: its message keys wait for the search index. Index
        them once writers pause for IDLE_DELAY, or at once past BACKLOG_MAX
        waiting (:mod:`.sqlite_search`), so a busy writer does not pay for it
        on every append."""
        self._unindexed_writes += 1
        self._last_write = time.monotonic()
        loop = asyncio.get_running_loop()
        if self._unindexed_writes >= sqlite_search.BACKLOG_MAX:
            self._start_catch_up()
        elif self._idle_timer is None or self._idle_loop is not loop:  # a loop gone: anew
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self._idle_loop = loop
            self._idle_timer = loop.call_later(sqlite_search.IDLE_DELAY, self._when_idle)

    def _when_idle(self) -> None:
        self._idle_timer = None
        quiet = time.monotonic() - self._last_write
        if quiet < sqlite_search.IDLE_DELAY:
            delay = sqlite_search.IDLE_DELAY - quiet
            self._idle_timer = asyncio.get_running_loop().call_later(delay, self._when_idle)
        else:
            self._start_catch_up()

    def _start_catch_up(self) -> None:
        """Index the waiting keys on the worker thread, a batch per transaction."""
        self._unindexed_writes = 0
        if self._closed or self.read_only is not None or self._catch_up_running:
            return
        self._catch_up_running = True
        self._submit_catch_up()

    def _submit_catch_up(self) -> None:
        try:
            self._executor.submit(self._catch_up)
        except RuntimeError:  # the store closed meanwhile
            self._catch_up_running = False

    def _catch_up(self) -> None:
        """One batch, then the next after CATCH_UP_PAUSE on a timer: a loop
        here would hold this process's one worker thread for the whole
        catch-up (a first open of a 1 GB store: about two minutes), and take
        the write lock again at once after each commit, so other processes'
        writers, whose busy handler polls every 100 ms at most, could wait
        until their busy timeout and fail."""
        more = False
        try:
            if not self._closed:
                taken = self._in_transaction(sqlite_search.catch_up, write=True)
                more = taken >= sqlite_search.CATCH_UP_BATCH
        except StoreError:
            pass  # busy, or read-only: the next writer or search starts it again
        if more and not self._closed:
            timer = threading.Timer(sqlite_search.CATCH_UP_PAUSE, self._submit_catch_up)
            timer.daemon = True
            timer.start()
        else:
            self._catch_up_running = False

    async def check_search_index(self) -> SearchIndexCheck | None:
        return await self._on_worker(sqlite_search.check)

    async def rebuild_search_index(self) -> int | None:
        return await self._on_worker(sqlite_search.rebuild, write=True)

    async def _on_worker(self, work: Callable[[sqlite3.Connection], T], write: bool = False) -> T:
        if self._closed:
            raise BackendError(f"SQLite store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._in_transaction, work, write)

    def _in_transaction(self, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
        conn = self._worker_connection()
        if write and self.read_only is not None:
            raise BackendError(f"SQLite store {self.path} is open read-only ({self.read_only})")
        try:
            begin(conn, write)
            result = work(conn)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            rollback(conn)
            raise self._table.error(exc) from exc
        except BaseException:
            rollback(conn)
            raise
        return result

    def describe(self) -> dict[str, Any]:
        from .vacuum import file_bytes

        size = file_bytes(self.path)
        space: dict[str, Any] = {}
        if not self._closed:
            try:
                space = self._executor.submit(self._space_facts).result()
            except StoreError:
                pass
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "size_bytes": size,
            "schema_version": self.schema_version,
            "journal_mode": "wal",
            "read_only": self.read_only,
            "synchronous": self.synchronous,
            **space,
        }

    def _space_facts(self) -> dict[str, Any]:
        try:
            from .vacuum import space_facts

            return space_facts(self._worker_connection())
        except sqlite3.Error as exc:
            raise BackendError(f"SQLite store {self.path}: {exc}") from exc


def from_url(url: str, path: str, options: dict[str, str]) -> BlobStore:
    synchronous = options.pop("synchronous", "normal")
    timeout = options.pop("busy_timeout_ms", "30000")
    if options:
        raise MemoryValidationError(
            f"url {url!r}: unknown option(s) {', '.join(sorted(options))}; "
            "known: synchronous, busy_timeout_ms"
        )
    try:
        busy = int(timeout)
    except ValueError:
        raise MemoryValidationError(f"url {url!r}: busy_timeout_ms must be an integer") from None
    return SqliteBlobStore(path, synchronous=synchronous, busy_timeout_ms=busy)
