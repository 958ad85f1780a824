"""What a :class:`~makers_store.ContextStore` and every store bound from it
share: the backend, the injectable clock and ids, the adapters built once,
and the one unit of work runner, which runs a unit again (under
:data:`~makers_store.retry.DEFAULT_RETRY`) when it loses a race with another
writer on a backend without transactions."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from . import keys
from .blob import BlobStore, Program
from .clock import Clock, IdSource, system_clock
from .layout import ensure_layout
from .location import StoreLocation
from .retry import DEFAULT_RETRY, RetryPolicy

T = TypeVar("T")


class Shared:
    def __init__(
        self,
        blobs: BlobStore,
        clock: Clock,
        ids: IdSource,
        location: StoreLocation | None,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.blobs = blobs
        self.clock = clock
        self.ids = ids
        self.location = location
        self.retry = retry
        self.closed = False
        #: adapters built once per store (``langgraph_checkpointer``, ...)
        self.adapters: dict[str, Any] = {}
        self._stamped: tuple[int, int] = (-1, -1)

    def stamp(self) -> tuple[int, int]:
        """(now in ms, tie) for an append. The tie orders appends within one
        millisecond, so the conversation written last lists first: the
        microsecond of the wall clock (comparable across processes whose
        clocks agree), made strictly increasing for this store's writes in
        one millisecond, at most ``keys.TIE_MAX`` (beyond that, by id). With
        an injected clock it counts from 0 in each millisecond."""
        if self.clock is system_clock:
            nanos = time.time_ns()
            now, micro = nanos // 1_000_000, nanos // 1000 % 1000
        else:
            now, micro = self.clock(), 0
        last_ms, last_tie = self._stamped
        tie = min(max(micro, last_tie + 1), keys.TIE_MAX) if now == last_ms else micro
        self._stamped = (now, tie)
        return now, tie

    async def run(self, make: Callable[[], Program[T]], *, write: bool) -> T:
        """Run the program ``make()`` builds as one unit of work, with a fresh
        program for each attempt (raises MemoryConflictError when the retry
        budget runs out)."""
        await ensure_layout(self.blobs, write=write)  # once per backend object: one read
        return await self.retry.run(lambda: self.blobs.run(make(), write=write))
