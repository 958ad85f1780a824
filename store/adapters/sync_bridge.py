"""Run an adapter's coroutines for synchronous callers (LangGraph's ``invoke``).

Adapters are async at heart; frameworks also call their sync methods from
plain threads. Such a call runs on a private :class:`~makers_store._core.portal.Portal`
thread, started on first use: the one way this package runs coroutines for
blocking callers, as the synchronous facade does. Every backend works from any
event loop (docs/backends.md, "Event loops and threads"), so the call
needs no particular loop. One guard stays: a sync call made on the event loop
that runs the adapter's async methods would block that loop while it waits,
so it raises :class:`~makers_store.errors.SyncCallInEventLoopError` instead,
as LangGraph's own async savers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._core.portal import Portal
from ..errors import SyncCallInEventLoopError

T = TypeVar("T")


class SyncBridge:
    def __init__(self, owner: str, async_hint: str) -> None:
        #: for the error message: what was called, and what to use instead
        self._owner = owner
        self._async_hint = async_hint
        self._portal = Portal()
        self._home: weakref.ref[asyncio.AbstractEventLoop] | None = None
        with contextlib.suppress(RuntimeError):  # built outside any loop: none yet
            self.remember_loop()

    def remember_loop(self) -> None:
        """Call from async methods: the running loop is the one a sync call must not block."""
        self._home = weakref.ref(asyncio.get_running_loop())

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and self._home is not None and running is self._home():
            coro.close()
            raise SyncCallInEventLoopError(
                f"synchronous {self._owner} call on the event loop that runs its async "
                f"methods would block that loop; use the async methods there "
                f"({self._async_hint})"
            )
        return self._portal.call(coro)

    @property
    def portal_running(self) -> bool:
        """Whether the private portal thread is up (tests check it stops)."""
        return self._portal.running

    def stop(self) -> None:
        """Stop the private portal thread, if it ever started. Idempotent; a
        later sync call starts it again."""
        self._portal.stop()
