"""Run an adapter's coroutines for synchronous callers (LangGraph's ``invoke``).

Adapters are async at heart; frameworks also call their sync methods from
plain threads. :class:`SyncBridge` runs such a call on the adapter's *home*
event loop (the one that built it or last ran its async methods) while that
loop is running in another thread, so a backend bound to that loop (a
PostgreSQL pool, an HTTP session) keeps working; otherwise on a private
:class:`~makers_store.portal.Portal` thread, started on first use. A sync
call made on the home loop itself would block it, and raises
:class:`~makers_store.errors.SyncCallInEventLoopError` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..errors import SyncCallInEventLoopError
from ..portal import Portal

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
        """Call from async methods: the running loop becomes the home loop."""
        self._home = weakref.ref(asyncio.get_running_loop())

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        home = None if self._home is None else self._home()
        if running is not None and running is home:
            coro.close()
            raise SyncCallInEventLoopError(
                f"synchronous {self._owner} call on the event loop that runs its async "
                f"methods would block that loop; use the async methods there "
                f"({self._async_hint})"
            )
        if home is not None and home.is_running():
            return asyncio.run_coroutine_threadsafe(coro, home).result()
        return self._portal.call(coro)

    @property
    def portal_running(self) -> bool:
        """Whether the private portal thread is up (tests check it stops)."""
        return self._portal.running

    def stop(self) -> None:
        """Stop the private portal thread, if it ever started. Idempotent; a
        later sync call starts it again."""
        self._portal.stop()
