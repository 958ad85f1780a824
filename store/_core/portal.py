"""Run coroutines from synchronous code on one private event-loop thread.

The synchronous facade uses one portal per opened store: every call is
handed to the portal's loop and the caller's thread waits for the result, so
sync callers (cloud functions, the CLI, scripts) may run in any thread,
including one that already runs an event loop of its own.

A portal's loop is one more event loop the store is used from: what a
backend keeps per loop lives there until :meth:`Portal.stop`.

A call interrupted by Ctrl-C (KeyboardInterrupt in the waiting thread) is
cancelled and awaited before KeyboardInterrupt goes on, so that whatever the
caller then reports about the store no longer changes behind it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Generator
from typing import Any, TypeVar, cast

T = TypeVar("T")

#: How often a waiting caller wakes up (seconds): see :meth:`Portal.call`.
_WAKE = 0.05


class Portal:
    """One event-loop thread that blocking stores run their calls on. A
    :class:`~makers_store.SyncContextStore` made without one owns its own;
    stores used together (``store.admin.copy_to(other)``) share one:
    ``SyncContextStore(open_store(url), portal)``, closed by the caller."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._interrupted = threading.Event()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="makers-store-portal", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def running(self) -> bool:
        """Whether the loop thread is up (it starts on the first call)."""
        return self._loop is not None

    @property
    def interrupted(self) -> bool:
        """Whether a call was interrupted by Ctrl-C. Callbacks the library runs
        on the portal's thread (progress) check it to stop a unit that never
        yields to the event loop to be cancelled (a SQLite unit run inline)."""
        return self._interrupted.is_set()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the portal's loop and return its result."""
        loop = self._start()
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a synchronous store cannot be called from its own portal thread")
        started: list[asyncio.Task[T]] = []
        done = threading.Event()

        def start() -> None:
            task = loop.create_task(coro)
            task.add_done_callback(lambda _: done.set())
            started.append(task)

        def cancel() -> None:  # queued after ``start`` if that was queued: it has run
            if started:
                started[0].cancel()
            else:
                coro.close()
                done.set()

        try:
            loop.call_soon_threadsafe(start)
            # Waited in slices: SIGINT may be delivered to any thread, and only a
            # waiting thread that wakes up now and then runs Python's handler (in
            # the main thread) and sees KeyboardInterrupt at once.
            while not done.wait(_WAKE):
                pass
        except KeyboardInterrupt:
            self._interrupted.set()
            loop.call_soon_threadsafe(cancel)
            done.wait()  # a unit that runs inline ends before it sees the cancellation
            if started and not started[0].cancelled():
                started[0].exception()  # retrieved: the interrupt is what the caller sees
            raise
        return started[0].result()

    def iterate(self, items: AsyncIterator[T]) -> Generator[T, None, None]:
        """Walk an async iterator from synchronous code, one step per call;
        it is closed (``aclose``) when the walk ends or is abandoned."""

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(items)
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = self.call(step())
                if not more:
                    return
                yield cast(T, item)  # an item when ``more``
        finally:
            aclose = getattr(items, "aclose", None)
            if aclose is not None and self.running:
                self.call(aclose())

    def stop(self) -> None:
        """Stop the loop thread, first shutting down the loop's async
        generators as ``asyncio.run`` does: what backends keep per event
        loop (connections, clients) is released there, on its own loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
