"""What a network backend keeps per event loop: its connections or client.

psycopg's async connections carry an ``asyncio.Lock`` and aiobotocore's
client an aiohttp session, and both belong to the loop that made them: used
from another loop they fail (``... is bound to a different event loop``,
``Future attached to a different loop``) or hang. A store object, though, is
used from any loop and any thread: ``asyncio.run`` per call, one loop per
thread, the sync facade's portal thread, the adapters' sync methods.
:class:`PerLoop` gives each loop a resource of its own, made on first use
there.

Invariants:

* A resource is made and used only on its own loop. Nothing loop-bound is
  shared between loops: the map from loop to resource is guarded by a thread
  lock, and a loop's opening is a task on that loop.
* A resource is released exactly once, on the first of:

  - its loop shutting down its asynchronous generators, which
    ``asyncio.run``, ``asyncio.Runner``, pytest-asyncio and
    :meth:`makers_store._core.portal.Portal.stop` do before closing the loop (the
    OpenAI SDK's ``run_sync`` after every run): a watcher generator started
    on the loop releases it there, while the loop still runs, so a program
    that forgot to close the store still ends promptly and cleanly;
  - the store closing (:meth:`PerLoop.aclose`, from any loop);
  - its loop found closed, at the store's first use from another new loop
    or its close (a loop closed with a bare ``loop.close()``).

* Released on its own loop when that loop can run it (it is the caller's, it
  runs in another thread, or it is idle and can be run for a moment);
  otherwise (the loop is closed) ``abandon`` releases it without a loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from makers_store.errors import BackendError

R = TypeVar("R")

#: Seconds the store's close waits for another running loop to release its
#: resource there. That loop may be blocked waiting for this one (a sync
#: call made from a coroutine): then close goes on, and the release is
#: queued on that loop (it runs when the loop does, or at its shutdown).
OTHER_LOOP_WAIT = 2.0


class _Entry(Generic[R]):
    """One loop's resource, and how it is opened and watched."""

    __slots__ = ("loop", "opening", "released", "resource", "watcher")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.resource: R | None = None
        self.opening: asyncio.Task[R] | None = None
        self.watcher: AsyncIterator[None] | None = None
        self.released = False


class PerLoop(Generic[R]):
    """One resource per event loop: ``open()`` makes it on the running loop,
    ``aclose(resource)`` releases it on its loop, ``abandon(resource)``
    without one (its loop is closed: close what can be closed synchronously).
    Without ``aclose``, ``abandon`` is safe from any thread and is used
    everywhere. ``what`` names the store in errors."""

    def __init__(
        self,
        what: str,
        open: Callable[[], Awaitable[R]],
        abandon: Callable[[R], None],
        aclose: Callable[[R], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self._what = what
        self._open = open
        self._aclose = aclose
        self._abandon = abandon
        self._entries: dict[asyncio.AbstractEventLoop, _Entry[R]] = {}
        self._lock = threading.Lock()
        self.closed = False

    def current(self) -> R | None:
        """The running loop's resource if it is open (the hot path: one dict
        lookup); None otherwise: call :meth:`get`."""
        entry = self._entries.get(asyncio.get_running_loop())
        return None if entry is None else entry.resource

    async def get(self) -> R:
        """The running loop's resource, opened on first use."""
        loop = asyncio.get_running_loop()
        entry = self._entries.get(loop)
        if entry is None:
            with self._lock:
                if self.closed:
                    raise BackendError(f"{self._what} is closed")
                entry = self._entries.get(loop)
                dead: list[_Entry[R]] = []
                if entry is None:
                    entry = self._entries[loop] = _Entry(loop)
                    entry.opening = loop.create_task(self._open_entry(entry))
                    # A new loop: drop what loops closed with a bare
                    # loop.close() left behind, so they do not pile up.
                    dead = [e for e in self._entries.values() if e.loop.is_closed()]
            for stale in dead:
                await self._release(stale)
        if entry.resource is not None:
            return entry.resource
        assert entry.opening is not None
        # Shielded: a caller cancelled here leaves the opening to the others.
        return await asyncio.shield(entry.opening)

    async def _open_entry(self, entry: _Entry[R]) -> R:
        try:
            resource = await self._open()
        except BaseException:
            with self._lock:
                if self._entries.get(entry.loop) is entry:
                    del self._entries[entry.loop]  # the next call tries again
            raise
        with self._lock:
            entry.resource = resource
            closed = self.closed or entry.released
        if closed:  # the store closed while this opened
            await self._release_on_its_loop(entry.loop, resource)
            raise BackendError(f"{self._what} is closed")
        # asyncio warns about generators started after shutdown_asyncgens();
        # such a loop (run_sync's, between runs) is released by close instead.
        if not getattr(entry.loop, "_asyncgens_shutdown_called", False):
            watcher = self._watch(entry)
            await anext(watcher)
            entry.watcher = watcher
        return resource

    async def _watch(self, entry: _Entry[R]) -> AsyncIterator[None]:
        """Suspended until the loop shuts down its async generators, then
        releases the loop's resource there."""
        try:
            yield
        finally:
            entry.watcher = None  # it is the one finishing: nothing to close
            await self._release(entry)

    async def aclose(self) -> None:
        """Release every loop's resource (the store's close, from any loop).
        Idempotent; ``get`` refuses from now on."""
        with self._lock:
            self.closed = True
            entries = list(self._entries.values())
        for entry in entries:
            await self._release(entry)

    async def _release(self, entry: _Entry[R]) -> None:
        with self._lock:
            if entry.released:
                return
            entry.released = True
            if self._entries.get(entry.loop) is entry:
                del self._entries[entry.loop]
            resource = entry.resource
        try:
            if resource is not None:
                await self._release_on_its_loop(entry.loop, resource)
        finally:
            _finish(entry.watcher)
            entry.watcher = None

    async def _release_on_its_loop(self, loop: asyncio.AbstractEventLoop, resource: R) -> None:
        aclose = self._aclose
        if aclose is None:
            self._abandon(resource)
            return
        if loop is asyncio.get_running_loop():
            await aclose(resource)
            return
        if not loop.is_running() and not loop.is_closed():
            # Idle (not closed, not running: the loop of a finished
            # run_until_complete): run it a moment in a thread of ours.
            if await asyncio.to_thread(_run_idle, loop, lambda: aclose(resource)):
                return
        if loop.is_running():
            closing = aclose(resource)
            try:
                done: Future[None] = asyncio.run_coroutine_threadsafe(closing, loop)
            except RuntimeError:  # closed meanwhile
                closing.close()
            else:
                await asyncio.wait([asyncio.wrap_future(done)], timeout=OTHER_LOOP_WAIT)
                return
        self._abandon(resource)


def _run_idle(
    loop: asyncio.AbstractEventLoop, make: Callable[[], Coroutine[Any, Any, None]]
) -> bool:
    """Run ``make()`` on idle ``loop`` in this thread; False when the loop
    was started or closed by its owner meanwhile."""
    started = False

    async def run() -> None:
        nonlocal started
        started = True
        await make()

    task = run()
    try:
        loop.run_until_complete(task)
    except RuntimeError:
        if started:  # the release itself failed: nothing else to try
            return True
        task.close()  # its owner runs or closed it: the caller goes another way
        return False
    return True


def _finish(watcher: AsyncIterator[None] | None) -> None:
    """Finish a watcher whose resource is released: left suspended, the
    garbage collector would ask its loop, maybe closed by then, to close it.
    Its ``finally`` finds the resource released and returns at once."""
    aclose = getattr(watcher, "aclose", None)
    if aclose is None:
        return
    closing = aclose()
    try:
        closing.send(None)
    except StopIteration:
        pass
    except RuntimeError:  # being closed on its loop at this moment
        closing.close()
    else:  # it awaited something: cannot happen, see _watch
        closing.close()
