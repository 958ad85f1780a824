"""What every command shares: the global options and the open store.

Kept import-light (``makers-store --help`` loads this module): the library is
imported only when a command opens the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import typer

if TYPE_CHECKING:
    from makers_store import BlobStore, ContextStore, SyncContextStore, SyncStateStore
    from makers_store.portal import Portal

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CliState:
    """The global options. ``store_url`` is None unless ``--store`` was given:
    the library then resolves ``$MAKERS_STORE_URL`` or the default location
    itself, and can say why it chose it."""

    store_url: str | None = None
    debug: bool = False


class Session:
    """One open store for the duration of a command.

    ``store`` is the blocking public API; :meth:`call` runs the library's
    async maintenance functions (admin, transfer) on the same event-loop
    thread the facade uses.
    """

    def __init__(self, url: str | None) -> None:
        from makers_store import SyncContextStore, open_store
        from makers_store.portal import Portal

        self._portal: Portal = Portal()
        self._async: ContextStore = open_store(url)
        self.store: SyncContextStore = SyncContextStore(self._async, self._portal)

    @property
    def blobs(self) -> BlobStore:
        return self._async.blobs

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._portal.call(coro)

    def iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        """Walk an async iterator of the library from this (synchronous) thread."""

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
                yield cast(T, item)
        finally:
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                self.call(aclose())

    def state(self, conversation_id: str) -> SyncStateStore:
        """The blocking ``state`` of one conversation."""
        return self.store.bind(conversation_id).state

    def close(self) -> None:
        try:
            self._portal.call(self._async.close())
        finally:
            self._portal.stop()


def cli_state(ctx: typer.Context) -> CliState:
    state = ctx.find_root().obj
    return state if isinstance(state, CliState) else CliState()


@contextmanager
def open_session(ctx: typer.Context) -> Iterator[Session]:
    """Open the store named by ``--store`` / ``$MAKERS_STORE_URL`` / the default."""
    session = Session(cli_state(ctx).store_url)
    try:
        yield session
    finally:
        session.close()
