"""Run coroutines from synchronous code on one private event-loop thread.

The synchronous facade uses one portal per opened store: every call is
handed to the portal's loop and the caller's thread waits for the result, so
sync callers (cloud functions, the CLI, scripts) may run in any thread,
including one that already runs an event loop of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Portal:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

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

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._start()
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a synchronous store cannot be called from its own portal thread")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
