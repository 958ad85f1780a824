"""An in-process feed of written keys, fanned out to every watcher.

The memory backends announce the keys each unit wrote here; every
:meth:`~makers_store.blob.BlobStore.watch_writes` iterator open on them gets
them on its own event loop (writers may run on other threads: the sync
facade's portal, a test's threads).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable


class WriteFeed:
    def __init__(self) -> None:
        self._watchers: list[Callable[[frozenset[str]], None]] = []
        self._lock = threading.Lock()

    @property
    def listening(self) -> bool:
        """Whether anyone watches (writers skip announcing when nobody does)."""
        return bool(self._watchers)

    def announce(self, written: Iterable[str]) -> None:
        keys = frozenset(written)
        if keys:
            with self._lock:
                watchers = list(self._watchers)
            for deliver in watchers:
                deliver(keys)

    async def watch(self) -> AsyncIterator[frozenset[str] | None]:
        """The :meth:`~makers_store.blob.BlobStore.watch_writes` iterator:
        an empty set first, then the keys of each write (merged when several
        came before the watcher looked)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[frozenset[str]] = asyncio.Queue()

        def deliver(keys: frozenset[str]) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, keys)
            except RuntimeError:  # the watcher's loop is closed: it is gone
                pass

        with self._lock:
            self._watchers.append(deliver)
        try:
            yield frozenset()
            while True:
                keys = await queue.get()
                while not queue.empty():
                    keys |= queue.get_nowait()
                yield keys
        finally:
            with self._lock:
                self._watchers.remove(deliver)
