"""The SQLite emulator's inline connection: where units run first.

A unit starts on the caller's thread (the event loop's), on a connection that
never waits for a lock (``busy_timeout`` 0): most units are a few statements,
and a thread hop would cost as much as one of them. What must not hold the
event loop goes on on this connection's own thread, in the same transaction
(see :mod:`.sqlite_units` for why that is safe):

* the rest of a unit that ran past ``INLINE_BUDGET`` (large batches,
  deletes, listings);
* a write at ``synchronous=full`` or ``extra``, whose commit waits for an
  fsync. The whole write goes there, not only its commit, so that SQLite's
  write lock, which other processes wait for, is not held across the hop;
* at ``normal``, a commit after which the WAL keeps growing: most of the
  copying of the WAL into the database is done beside the writers, on a
  connection of its own (:mod:`.sqlite_checkpoint`), about every
  ``CHECKPOINT_PAGES * BACKGROUND_SHARE`` pages the units wrote (estimated by
  :class:`~.sqlite_ops.BlobTable`), and the WAL starts over by itself when
  the writers pause. Only when those checkpoints find it longer than
  ``RESET_FRAMES`` (writes without a pause) does one run here, after the
  commit and before any other writer of this process gets in, so that it is
  complete and the next writer starts the WAL over; it has only the frames
  written since the last one beside the writers to copy. (SQLite's count of
  frames comes from those checkpoints: reading the ``-shm`` file from Python
  would drop the process's POSIX locks on it, which SQLite holds.)

Writes that arrive while the connection is away wait for it, in order, and
join the transaction then open on its thread (each in a savepoint, so that
one failing undoes only its own work): one commit, one fsync at
``synchronous=full``, for all of them. Each gets its answer once that commit
is done. A write there that finds another process's writer holding the
database waits for it there, up to ``busy_timeout``: the writes queued behind
it wait for the same lock anyway.

``lock`` guards the connection: whoever holds it (the caller's thread, or
this connection's thread for a unit that moved there) is its only user.
Nothing on this connection's thread ever waits for the lock, so a unit moving
there can never wait behind a job that waits for it.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from makers_store.errors import BackendError

from .checkpoint import BackgroundCheckpoint
from .file import SqliteFile, is_busy, rollback
from .ops import BlobTable, begin
from .units import Unit

#: WAL frames (pages) after which a commit is followed by a checkpoint:
#: SQLite's own default threshold.
CHECKPOINT_PAGES = 1000
#: SQLite's automatic checkpoint on this connection, a backstop in case the
#: estimate falls far short.
AUTOCHECKPOINT_BACKSTOP = 10 * CHECKPOINT_PAGES
#: A checkpoint beside the writers (:mod:`.sqlite_checkpoint`) begins after
#: this share of ``CHECKPOINT_PAGES``; one under the connection runs only when
#: the WAL did not start over by itself and holds more than
#: ``RESET_FRAMES``.
BACKGROUND_SHARE = 0.25
RESET_FRAMES = 2 * CHECKPOINT_PAGES
#: Waiting writes that join one transaction at most.
GROUP_LIMIT = 64
_NEVER = float("inf")


class Outcome(enum.Enum):
    DONE = "done"  # the unit ran and committed inline: its result is ready
    MOVED = "moved"  # it goes on on the inline thread: await finish(unit)
    QUEUE = "queue"  # a write for the inline thread's next transaction: await join(unit)
    ELSEWHERE = "elsewhere"  # a read while the connection is away: run it on the worker
    BUSY = "busy"  # a read that found the database busy (recovery): run it on the worker


class _Busy(Exception):
    pass


def _seen(future: asyncio.Future[Any]) -> None:
    """Mark the outcome of a job whose caller went away as seen."""
    if not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if not future.done():  # not cancelled meanwhile
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class _Waiter:
    """A write waiting for the inline thread, and how to answer its caller."""

    __slots__ = ("future", "loop", "unit")

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Any] = self.loop.create_future()

    def claim(self) -> bool:
        """False (and the program closed) when its caller has stopped waiting."""
        if self.future.cancelled():
            self.unit.abandon()
            return False
        return True

    def answer(self, error: BaseException | None = None) -> None:
        try:
            self.loop.call_soon_threadsafe(_settle, self.future, self.unit.result, error)
        except RuntimeError:  # the caller's loop is closed: nobody to tell
            pass


class InlineConnection:
    def __init__(self, file: SqliteFile, table: BlobTable) -> None:
        self.file = file
        self.table = table
        self.conn: sqlite3.Connection | None = None
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="makers-sqlite-inline")
        self._waiting: collections.deque[_Waiter] = collections.deque()
        self._sync_commits = file.synchronous in ("full", "extra")
        #: Pages (BlobTable's estimate) between two checkpoints beside the writers.
        self._checkpoint_at: float = CHECKPOINT_PAGES * BACKGROUND_SHARE
        self._background = BackgroundCheckpoint(file)
        self._close_when_free = False

    # --- on the caller's thread -----------------------------------------

    def start(self, unit: Unit) -> Outcome:
        if unit.write and self._sync_commits:
            return Outcome.QUEUE
        if not self.lock.acquire(blocking=False):
            return Outcome.QUEUE if unit.write else Outcome.ELSEWHERE
        moving = False
        try:
            try:
                conn = self._begin(unit.write)
            except _Busy:  # the program is kept to run off the loop
                return Outcome.QUEUE if unit.write else Outcome.BUSY
            except BaseException:
                unit.abandon()
                raise
            unit.start(inline=True)
            finished = self.table.drive(conn, unit)
            if not finished or (unit.write and self._checkpoint_due()):
                moving = True
                return Outcome.MOVED
            self.table.commit(conn)
            if unit.write:
                self._checkpoint_beside()
            return Outcome.DONE
        finally:
            if not moving:
                self._release()

    async def finish(self, unit: Unit) -> Any:
        """The rest of a unit that :meth:`start` moved: on the inline thread,
        which owns its transaction from now on. A caller that is cancelled
        stops waiting; the job still runs and frees the connection."""
        try:
            job = self.executor.submit(self._finish, unit)
        except RuntimeError:  # shut down under us: undo what ran inline
            assert self.conn is not None
            rollback(self.conn)
            unit.abandon()
            self._release()
            raise BackendError(f"SQLite store {self.file.path} is closed") from None
        future = asyncio.wrap_future(job)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(_seen)
            raise

    async def join(self, unit: Unit) -> Any:
        """Run write ``unit`` in the next transaction of the inline thread."""
        waiter = _Waiter(unit)
        self._waiting.append(waiter)
        try:
            self.executor.submit(self._drain)
        except RuntimeError:  # shut down
            self._waiting.remove(waiter)
            unit.abandon()
            raise BackendError(f"SQLite store {self.file.path} is closed") from None
        return await waiter.future

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.executor, self._close)
        self.executor.shutdown(wait=True)
        await loop.run_in_executor(None, self._background.close)

    # --- whoever holds the lock -------------------------------------------

    def _begin(self, write: bool) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = self._open()
        try:
            begin(self.conn, write)
        except sqlite3.Error as exc:
            rollback(self.conn)
            if is_busy(exc):
                raise _Busy from None
            raise BackendError(f"SQLite store {self.file.path}: cannot begin: {exc}") from exc
        return self.conn

    def _begin_waiting(self) -> sqlite3.Connection:
        """On the inline thread: begin a write, waiting up to busy_timeout
        for another process's writer (SQLite's busy handler; its sleeps keep
        waiters off the CPU that the writer holding the lock needs)."""
        try:
            return self._begin(write=True)
        except _Busy:
            pass
        assert self.conn is not None
        self.conn.execute(f"PRAGMA busy_timeout = {int(self.file.busy_timeout_ms)}")
        try:
            begin(self.conn, True)
        except sqlite3.Error as exc:
            rollback(self.conn)
            raise BackendError(f"SQLite store {self.file.path}: cannot begin: {exc}") from exc
        finally:
            self.conn.execute("PRAGMA busy_timeout = 0")  # never wait on the caller's thread
        return self.conn

    def _release(self) -> None:
        """Free the connection for whoever waits: queued writes, a close."""
        if self._close_when_free and self.conn is not None:
            self.conn.close()
            self.conn = None
        self.lock.release()
        if self._waiting:
            try:
                self.executor.submit(self._drain)
            except RuntimeError:  # shut down: _close answered the waiting
                pass

    def _open(self) -> sqlite3.Connection:
        if self._sync_commits or self.file.read_only is not None:
            # Every write commits on the inline thread (or none does): SQLite
            # checkpoints inside those commits, as usual.
            self._checkpoint_at = _NEVER
            return self.file.connect(0)
        return self.file.connect(0, f"wal_autocheckpoint = {AUTOCHECKPOINT_BACKSTOP}")

    def _checkpoint_beside(self) -> None:
        """After a commit: a checkpoint beside the writers once they wrote
        about ``_checkpoint_at`` pages since the last one began."""
        if self.table.pages_written >= self._checkpoint_at:
            self.table.pages_written = 0
            self._background.start()

    def end_background_checkpoint(self) -> None:
        """Let the checkpoint beside the writers, if one is under way, end
        (off the loop: it waits for the one under way)."""
        self._background.wait()

    def _checkpoint_due(self) -> bool:
        """Whether the WAL keeps growing: the checkpoints beside the writers
        never find it started over (no pause in the writes)."""
        return self._background.wal_frames >= RESET_FRAMES

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        # The one beside the writers first: two checkpoints never run at once
        # (a PASSIVE one that finds another under way does nothing).
        self._background.wait()
        self._background.wal_frames = 0  # the WAL starts over after this one
        try:
            # PASSIVE: copies what no reader still needs, never waits for a lock.
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            pass  # the next ones try again; the backstop bounds the WAL meanwhile

    # --- on the inline thread ---------------------------------------------

    def _finish(self, unit: Unit) -> Any:
        committed: list[_Waiter] = []
        try:
            conn = self.conn
            assert conn is not None
            if not unit.done:
                unit.start(inline=False)
                self.table.drive(conn, unit)
            joined = self._join_waiting(conn, fresh=False) if unit.write else []
            self._commit(conn, joined)
            committed = joined
            return unit.result
        finally:
            self._release()
            for waiter in committed:  # once the connection is free for them
                waiter.answer()

    def _drain(self) -> None:
        """Run the waiting writes in one transaction, unless someone holds
        the connection: they drain the queue when they free it."""
        if not self._waiting or not self.lock.acquire(blocking=False):
            return
        committed: list[_Waiter] = []
        try:
            try:
                conn = self._begin_waiting()
            except Exception as exc:  # each waiting unit's answer
                self._fail_waiting(exc)
                return
            joined = self._join_waiting(conn, fresh=True)
            self._commit(conn, joined)
            committed = joined
        except Exception:  # every joined unit has its answer already
            pass
        finally:
            self._release()
            for waiter in committed:
                waiter.answer()

    def _fail_waiting(self, error: BaseException) -> None:
        if not isinstance(error, BackendError):
            error = BackendError(f"SQLite store {self.file.path}: {error}")
        while self._waiting:
            waiter = self._waiting.popleft()
            if waiter.claim():
                waiter.unit.abandon()
                waiter.answer(error)

    def _join_waiting(self, conn: sqlite3.Connection, *, fresh: bool) -> list[_Waiter]:
        """Drive waiting writes inside the open transaction, each in a
        savepoint (but the first of a ``fresh`` transaction, which has nothing
        to protect: if it fails, the whole transaction is undone and the rest
        wait for the next); those that failed have their answer, the rest
        wait for the commit."""
        joined: list[_Waiter] = []
        current: _Waiter | None = None
        try:
            while self._waiting and len(joined) < GROUP_LIMIT:
                current = self._waiting.popleft()
                if not current.claim():
                    continue
                alone = fresh and not joined
                if not alone:
                    conn.execute("SAVEPOINT joined")
                current.unit.start(inline=False)
                try:
                    self.table.drive(conn, current.unit, undo=alone)
                except Exception as exc:
                    if alone:
                        current.answer(exc)
                        return joined  # empty, and no transaction left
                    if not conn.in_transaction:  # SQLite rolled the whole transaction back
                        raise
                    conn.execute("ROLLBACK TO joined")
                    conn.execute("RELEASE joined")
                    current.answer(exc)
                    continue
                if not alone:
                    conn.execute("RELEASE joined")
                joined.append(current)
                current = None
            return joined
        except BaseException as exc:
            rollback(conn)
            error = BackendError(f"SQLite store {self.file.path}: {exc}")
            for waiter in [*joined, *([current] if current is not None else [])]:
                waiter.answer(error)
            raise

    def _commit(self, conn: sqlite3.Connection, joined: list[_Waiter]) -> None:
        """Commit (and checkpoint when due); a failed commit is every joined
        unit's answer, a successful one is given once the lock is free."""
        if not conn.in_transaction:  # the only unit failed and undid it
            return
        try:
            self.table.commit(conn)
        except BaseException as exc:
            error = exc if isinstance(exc, BackendError) else BackendError(str(exc))
            for waiter in joined:
                waiter.answer(error)
            raise
        if self._checkpoint_due():
            self._checkpoint(conn)
        else:
            self._checkpoint_beside()

    def _close(self) -> None:
        self._close_when_free = True
        if not self.lock.acquire(blocking=False):  # another thread is mid-unit: it closes
            return
        self._fail_waiting(BackendError(f"SQLite store {self.file.path} is closed"))
        self._release()
