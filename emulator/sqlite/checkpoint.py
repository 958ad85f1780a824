"""Copying the SQLite WAL into the database beside the writers (issue 36).

A checkpoint costs what its fsyncs cost: at ``synchronous=normal`` it syncs
the WAL, copies the frames into the database and syncs the database, and
the second sync writes every page copied. The inline connection
(:mod:`.sqlite_inline`) runs one after a commit once the WAL holds about
``CHECKPOINT_PAGES``, holding the connection so that no writer of this
process gets in before it is complete (then the next writer starts the WAL
over). Every write that arrives meanwhile waits: measured over 4,000
LangGraph ``aput`` calls on the shared 2-core machine, 47 such checkpoints
took 11 ms each (median), 30% of the whole run's time, and what a sync costs
is the disk's and the machine's load's, not ours: that is what made our
ratios against peers swing from one machine to another.

So the copying is done here, on a connection and a thread of its own, while
writers go on: a ``PASSIVE`` checkpoint takes no lock a writer needs and
copies the frames committed before it began. When writers pause with every
frame copied, the next writer starts the WAL over, as SQLite does: writes to
conversations come in bursts, so that is the usual case, and no writer waits
for a checkpoint. Only when the WAL keeps growing (writes without a pause:
this checkpoint never catches up) does the one under the connection run, and
it then finds most frames copied and synced, with only the tail to copy.
"""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from .file import SqliteFile

#: Seconds between two checkpoints here: they go on until one finds no frame
#: added since the one before and every frame copied (the writers paused), so
#: that the last copies what a burst of writes left and the next writer
#: starts the WAL over.
AGAIN_AFTER = 0.02


class BackgroundCheckpoint:
    """At most one ``PASSIVE`` checkpoint at a time, on a thread of its own."""

    def __init__(self, file: SqliteFile) -> None:
        self.file = file
        # Named as the inline connection's thread: it does that connection's work.
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="makers-sqlite-inline-wal")
        self._conn: sqlite3.Connection | None = None
        self._running: Future[None] | None = None
        #: Frames in the WAL when the last checkpoint here ran (SQLite's count):
        #: small when the WAL starts over by itself, as it does whenever the
        #: writers pause while a checkpoint here is complete.
        self.wal_frames = 0
        self._lock = threading.Lock()
        #: Set to end the checkpoints here at once (the one under the
        #: connection is about to run, or the store closes).
        self._stop = threading.Event()
        self._closed = False

    def start(self) -> None:
        """Begin a checkpoint unless one is under way (or closed)."""
        with self._lock:
            if self._closed or (self._running is not None and not self._running.done()):
                return
            try:
                self._running = self._executor.submit(self._run)
            except RuntimeError:  # shut down
                self._running = None

    def wait(self) -> None:
        """End the checkpoints here: the one under way, if any, is the last
        (off the loop only)."""
        with self._lock:
            running = self._running
            if running is None or running.done():
                return
            self._stop.set()
        running.exception()  # waits; its errors are not the caller's
        with self._lock:
            if not self._closed:
                self._stop.clear()

    def _run(self) -> None:
        try:
            if self._conn is None:
                self._conn = self.file.connect(0)
            before = -1
            while not self._stop.is_set():
                row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                _, frames, copied = row
                if copied >= frames == before:  # the next writer starts the WAL over
                    self.wal_frames = 0
                    break
                self.wal_frames = before = max(frames, 0)
                if self._stop.wait(AGAIN_AFTER):
                    break
        except Exception:  # the checkpoint under the connection still runs
            pass

    def close(self) -> None:
        """After the checkpoint under way; on a thread that may block."""
        with self._lock:
            self._closed = True
            self._stop.set()
        self._executor.submit(self._close_conn)
        self._executor.shutdown(wait=True)

    def _close_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
