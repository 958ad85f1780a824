"""What a :class:`~makers_store.ContextStore` and every store bound from it
share: the backend, the injectable clock and ids, the adapters built once,
and the one unit of work runner, which runs a unit again (under
:data:`~makers_store.retry.DEFAULT_RETRY`) when it loses a race with another
writer on a backend without transactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .blob import BlobStore, Program
from .clock import Clock, IdSource
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

    async def run(self, make: Callable[[], Program[T]], *, write: bool) -> T:
        """Run the program ``make()`` builds as one unit of work, with a fresh
        program for each attempt (raises MemoryConflictError when the retry
        budget runs out)."""
        return await self.retry.run(lambda: self.blobs.run(make(), write=write))
