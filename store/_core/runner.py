"""The unit runner: how every program of the store reaches its backend.

A :class:`UnitRunner` owns what running a unit of work needs: the backend
(:class:`~makers_store.blob.BlobStore`), the injectable clock and ids, and
the one retry policy (:mod:`makers_store.retry`), under which it runs a unit
again when it loses a race with another writer on a backend without
transactions. A :class:`~makers_store.ContextStore` and every store bound
from it share one runner (``store.runner``); the framework adapters and the
maintenance API (``store.admin``) run their programs through it too, so a
clock, ids or retry policy injected into the store holds for all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ..blob import BlobStore
from ..blob_ops import Program
from ..clock import Clock, IdSource, random_suffix, system_clock
from ..retry import DEFAULT_RETRY, RetryPolicy
from . import keys
from .layout import ensure_layout, is_current

T = TypeVar("T")


class UnitRunner:
    """Runs programs over one backend as units of work, with the store's
    clock, ids and retry policy (each an attribute tests may replace)."""

    def __init__(
        self,
        blobs: BlobStore,
        *,
        clock: Clock = system_clock,
        ids: IdSource = random_suffix,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.blobs = blobs
        self.clock = clock
        self.ids = ids
        self.retry = retry
        self._stamped: tuple[int, int] = (-1, -1)
        #: the backend object :func:`ensure_layout` has found current (a
        #: check per unit otherwise; ``blobs`` may be replaced)
        self._current: BlobStore | None = None

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
        blobs = self.blobs
        if blobs is not self._current:
            await ensure_layout(blobs, write=write)  # once per backend object: one read
            if is_current(blobs):
                self._current = blobs
        return await self.retry.run(lambda: blobs.run(make(), write=write))
