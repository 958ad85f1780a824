"""A unit of work of the SQLite emulator that can leave the event loop part-way.

A unit starts inline, on the event loop's thread, because most units are a
few statements and a thread hop would cost more than they do. A unit that
turns out large must not hold the loop (every other request of a ``serve``
worker waits meanwhile), so it carries a deadline: when the deadline passes,
or the next operation is known to be large, the unit stops between two
operations, or in the middle of a long listing or batch delete, and the
rest, the same transaction on the same connection, runs on a worker thread.

That move is safe because a SQLite transaction belongs to its connection, not
to a thread: the connection is opened with ``check_same_thread=False`` and
its owner hands it over with the lock that guards it, so it is never used by
two threads at once. The program (a generator) is resumed on the worker
thread where it stopped.

:class:`Unit` is the program as :func:`makers_store.blob.drive_sync` sees it.
Its ``send`` and ``throw`` are the generator's own (no Python call in
between on the hot path); the operation callback checks the deadline and
raises :class:`Stopped` to stop, after which ``drive_sync``'s ``close`` leaves
the program suspended, and ``drive_sync`` drives it again to the end on the
worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NoReturn

from makers_store.blob_ops import Op, Program

#: Seconds a unit may run on the event loop before the rest moves off it.
#: Measured (tests/bench/bench_sqlite.py): an append or a 100-message read takes
#: 0.1-0.7 ms, so they stay inline; a 1,000-message batch or a 10,000-message
#: delete takes 20-90 ms and leaves after about this long.
INLINE_BUDGET = 0.002
#: Off the loop, a unit sleeps this long every INLINE_BUDGET: Python code on
#: two threads takes turns only every ``sys.getswitchinterval()`` (5 ms), so
#: without the pause a unit busy in Python code would keep the event loop's
#: thread waiting for the GIL that long; with it the loop gets it at once.
GIL_PAUSE = 0.000_05
_clock = time.perf_counter
_NEVER = float("inf")


class Stopped(Exception):
    """Raised through ``drive_sync`` when a unit stops to move off the loop."""


class Partial:
    """An operation begun inline that the worker thread finishes: the rest of
    a listing (an open cursor), of a batch delete, or a large Put."""

    def __init__(self, finish: Callable[[], Any]) -> None:
        self.finish = finish


def _keep_open() -> None:
    """``close`` of a stopped unit: it is resumed, not closed."""


class Unit:
    """``program`` on its way through ``drive_sync``, and where it stands.

    Inline (``inline`` True), :meth:`at_deadline` (called before an operation
    once ``deadline`` has passed) stops the unit, and :meth:`stop` stops it
    at an operation that answered with a :class:`Partial`. Driven again off
    the loop, the unit first finishes what it stopped at, then forwards the
    program's operations to the end, letting go of the GIL for a moment every
    ``INLINE_BUDGET`` (see :data:`GIL_PAUSE`).
    """

    __slots__ = (
        "close",
        "deadline",
        "done",
        "inline",
        "program",
        "result",
        "search_marks",
        "send",
        "stopped_at",
        "throw",
        "write",
    )

    def __init__(self, program: Program[Any], write: bool) -> None:
        self.program = program
        self.send = program.send
        self.throw = program.throw
        self.close: Callable[[], None] = program.close
        self.write = write
        self.inline = False
        self.deadline = _NEVER
        self.stopped_at: Op | Partial | None = None
        self.done = False  # the program has returned ``result``
        self.result: Any = None
        #: messages prefix -> the lowest key this unit marked for the search
        #: index there (:func:`.search.mark_created`): its next messages under
        #: the prefix need no mark (the mark lives and dies with its work)
        self.search_marks: dict[str, str] = {}

    def __iter__(self) -> Unit:
        return self

    def __next__(self) -> Op:
        """``drive_sync``'s first step: the program's, or where it stopped."""
        stopped_at, self.stopped_at = self.stopped_at, None
        if stopped_at is None:
            return self.send(None)
        self.close = self.program.close  # resumed: an error closes it again
        if isinstance(stopped_at, Partial):
            return self.send(stopped_at.finish())
        return stopped_at  # the operation it stopped before

    def start(self, inline: bool) -> None:
        """Drive it from now on inline (with a deadline) or off the loop."""
        self.inline = inline
        self.deadline = _clock() + INLINE_BUDGET

    def at_deadline(self, op: Op) -> None:
        """Called before ``op`` once ``deadline`` has passed: inline, stop;
        off the loop, pause for the GIL's sake, until the next deadline."""
        if self.inline:
            self.stop(op)
        time.sleep(GIL_PAUSE)
        self.deadline = _clock() + INLINE_BUDGET

    def stop(self, at: Op | Partial) -> NoReturn:
        self.stopped_at = at
        self.close = _keep_open
        raise Stopped

    def abandon(self) -> None:
        """Close the program of a unit that will not be resumed."""
        self.stopped_at = None
        self.close = self.program.close
        self.program.close()
