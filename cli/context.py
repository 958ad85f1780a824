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
    thread the facade uses. ``create=False`` (readers, and writers that only
    change what exists) refuses a store that does not exist instead of
    creating an empty one.
    """

    def __init__(self, url: str | None, *, create: bool = False) -> None:
        import threading

        from makers_store import SyncContextStore, open_store
        from makers_store.portal import Portal

        self._portal: Portal = Portal()
        self._async: ContextStore = open_store(url, create=create)
        self.store: SyncContextStore = SyncContextStore(self._async, self._portal)
        self._interrupted = threading.Event()

    def checkpoint(self) -> None:
        """Called from a library callback (progress): after Ctrl-C, stop the
        running call here. Cancelling its task is not enough: a SQLite unit
        that runs inline never yields to the event loop to be cancelled."""
        if self._interrupted.is_set():
            import asyncio

            raise asyncio.CancelledError

    @property
    def blobs(self) -> BlobStore:
        return self._async.blobs

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end. On Ctrl-C it is cancelled and awaited
        before KeyboardInterrupt goes on, so that whatever the command then
        reports about the store no longer changes behind it."""
        import asyncio
        import threading

        task: list[asyncio.Task[T]] = []
        outcome: list[tuple[bool, Any]] = []
        finished = threading.Event()

        async def guarded() -> T:
            task.append(asyncio.current_task())  # type: ignore[arg-type]
            return await coro

        def run() -> None:
            try:
                outcome.append((True, self._portal.call(guarded())))
            except BaseException as exc:
                outcome.append((False, exc))
            finally:
                finished.set()

        # The portal is waited for from a helper thread: SIGINT may be delivered
        # to any thread, and only a main thread that wakes up now and then (the
        # timeout) runs Python's handler and sees KeyboardInterrupt at once.
        threading.Thread(target=run, name="makers-store-cli-call", daemon=True).start()
        try:
            while not finished.wait(0.05):
                pass
        except KeyboardInterrupt:
            self._interrupted.set()
            if task:
                task[0].get_loop().call_soon_threadsafe(task[0].cancel)
            finished.wait()
            raise
        ok, value = outcome[0]
        if not ok:
            raise value
        return cast(T, value)

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
def open_session(ctx: typer.Context, *, create: bool = False) -> Iterator[Session]:
    """Open the store named by ``--store`` / ``$MAKERS_STORE_URL`` / the default;
    only commands that add data pass ``create=True`` (see :class:`Session`)."""
    session = Session(cli_state(ctx).store_url, create=create)
    try:
        yield session
    finally:
        session.close()
