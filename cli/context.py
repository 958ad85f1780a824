"""What every command shares: the global options and the open store.

Kept import-light (``makers-store --help`` loads this module): the library is
imported only when a command opens the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from makers_store import Portal, SyncContextStore, SyncStateStore


@dataclass(frozen=True, slots=True)
class CliState:
    """The global options. ``store_url`` is None unless ``--store`` was given:
    the library then resolves ``$MAKERS_STORE_URL`` or the default location
    itself, and can say why it chose it."""

    store_url: str | None = None
    debug: bool = False


class Session:
    """One open store for the duration of a command.

    ``store`` is the blocking public API, and ``store.admin`` its maintenance
    API: commands use nothing else. A call interrupted by Ctrl-C is cancelled
    and awaited by the portal before KeyboardInterrupt goes on (see
    :mod:`makers_store.portal`). ``create=False`` (readers, and writers that
    only change what exists) refuses a store that does not exist instead of
    creating an empty one. Two stores used together (``copy``) share one
    ``portal``, which the caller then stops.
    """

    def __init__(
        self, url: str | None, *, create: bool = False, portal: Portal | None = None
    ) -> None:
        from makers_store import Portal, SyncContextStore, open_store

        self._portal: Portal = portal or Portal()
        self._owns_portal = portal is None
        self.store: SyncContextStore = SyncContextStore(
            open_store(url, create=create), self._portal
        )

    def checkpoint(self) -> None:
        """Called from a library callback (progress): after Ctrl-C, stop the
        running call here. Cancelling its task is not enough: a SQLite unit
        that runs inline never yields to the event loop to be cancelled."""
        if self._portal.interrupted:
            import asyncio

            raise asyncio.CancelledError

    def state(self, conversation_id: str) -> SyncStateStore:
        """The blocking ``state`` of one conversation."""
        return self.store.bind(conversation_id).state

    def close(self) -> None:
        try:
            self._portal.call(self.store.async_store.close())
        finally:
            if self._owns_portal:
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
