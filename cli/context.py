"""What every command shares: the global options and the open store.

Kept import-light (``makers-store --help`` loads this module): the library is
imported only when a command opens the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .errors import StoreNotFound

if TYPE_CHECKING:
    from makers_store import Portal, SyncContextStore, SyncStateStore


@dataclass(slots=True)
class CliState:
    """The global options. ``store_url`` is None unless ``--store`` was given:
    the library then resolves ``$MAKERS_STORE_URL`` or the default location
    itself, and can say why it chose it. Set by the root command, then by
    the same options given after the command (:func:`accept_global_options_after`),
    which is why it is mutable: every context holds this one object."""

    store_url: str | None = None
    debug: bool = False


class Session:
    """One open store for the duration of a command.

    ``store`` is the blocking public API, and ``store.admin`` its maintenance
    API: commands use nothing else. A call interrupted by Ctrl-C is cancelled
    and awaited by the portal before KeyboardInterrupt goes on (see
    :mod:`makers_store._core.portal`). ``create=False`` (readers, and writers that
    only change what exists) refuses a store that does not exist instead of
    creating an empty one. Two stores used together (``copy``) share one
    ``portal``, which the caller then stops.
    """

    def __init__(
        self, url: str | None, *, create: bool = False, portal: Portal | None = None
    ) -> None:
        from makers_store import Portal, SyncContextStore, open_store
        from makers_store.errors import MemoryNotFoundError

        hint = check_store_url(url, create=create)
        try:
            opened = open_store(url, create=create)
        except MemoryNotFoundError as exc:
            raise StoreNotFound(_not_found_wording(str(exc)) + hint) from None
        self._portal: Portal = portal or Portal()
        self._owns_portal = portal is None
        self.store: SyncContextStore = SyncContextStore(opened, self._portal)

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


def _not_found_wording(message: str) -> str:
    """The library's ``no store at PATH; writes create it`` in the words every
    other "not found" of the CLI uses."""
    prefix, suffix = "no store at ", "; writes create it"
    if message.startswith(prefix) and message.endswith(suffix):
        path = message[len(prefix) : -len(suffix)]
        return f"store {path!r} not found (commands that add data create it)"
    return message


def check_store_url(url: str | None, *, create: bool) -> str:
    """Refuse a store URL no command can use, before anything is opened or
    created: ``memory://`` (a store that lives and dies with one process, so
    with one command), or a SQLite path below a file. Returns a hint for a
    store that is not found: ``sqlite:///tmp/x.db`` names ``./tmp/x.db``
    (three slashes and a relative path) where ``/tmp`` was probably meant;
    a write that creates such a store says so on stderr."""
    from pathlib import Path

    from makers_store.api.location import resolve
    from makers_store.factory import split_url

    from .errors import UsageProblem

    location = resolve(url)
    scheme, path, _ = split_url(location.url)
    if scheme == "memory":
        raise UsageProblem(
            f"store {location.display_url!r} keeps data only inside one process, so it "
            "ends with this command; use a file, e.g. --store sqlite:///dev.db"
        )
    if scheme != "sqlite":
        return ""
    target = Path(path)
    for above in target.parents:
        if above.exists():
            if not above.is_dir():
                raise UsageProblem(
                    f"store {str(target)!r} cannot be created: {str(above)!r} is a file, "
                    "not a directory"
                )
            break
    if target.exists() or target.is_absolute() or "://" not in location.url:
        return ""
    first = target.parts[0]
    if Path(first).exists() or not Path("/", first).is_dir():
        return ""
    hint = (
        f"; sqlite:/// takes a path relative to the current directory: "
        f"for /{target} write sqlite:////{target}"
    )
    if create:
        from .render import stderr

        stderr().print(f"note: creating a new store at {target} (relative){hint}")
    return hint


def cli_state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        # completion makes contexts without running the root's callback
        root.obj = CliState()
    return root.obj


def complete_store_path(incomplete: str) -> list[str]:
    """--store completes as a file path (a bare path is a SQLite store)."""
    import glob
    import os

    found = sorted(glob.glob(glob.escape(os.path.expanduser(incomplete)) + "*"))
    return [path + ("/" if os.path.isdir(path) else "") for path in found[:200]]


@contextmanager
def open_session(ctx: typer.Context, *, create: bool = False) -> Iterator[Session]:
    """Open the store named by ``--store`` / ``$MAKERS_STORE_URL`` / the default;
    only commands that add data pass ``create=True`` (see :class:`Session`)."""
    url = cli_state(ctx).store_url
    if url is None:
        note_projects_below()
    session = Session(url, create=create)
    try:
        yield session
    finally:
        session.close()


def note_projects_below() -> None:
    """When the default store is the per-user one (no ``--store``, no
    ``$MAKERS_STORE_URL``, no Makers project here or above) but a folder right
    here is a Makers project, say on stderr which store is read and name the
    project's: after ``makers-store init demo`` the project's store is
    ``demo/.makers-store/store.db``, read from inside ``demo``."""
    import os
    from pathlib import Path

    from makers_store.api.location import (
        ENV_VAR,
        PROJECT_STORE,
        find_project,
        projects_below,
        resolve,
    )

    if os.environ.get(ENV_VAR):
        return
    here = Path.cwd()
    if find_project(here.resolve()) is not None:
        return
    below = projects_below(here)
    if not below:
        return
    from .render import stderr

    location = resolve(None)
    names = ", ".join(f"{path.name}/" for path in below)
    first = below[0].name
    stderr().print(
        f"note: reading the per-user store {location.display_url} (no Makers project here); "
        f"{names} {'is a Makers project' if len(below) == 1 else 'are Makers projects'}: "
        f"cd {first} to read its store, or --store sqlite:///{first}/{PROJECT_STORE}",
        whole=True,
    )


def _given_after(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """A global option given after the command: it wins over one given before."""
    from typer import _click as click

    if ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.COMMANDLINE:
        state = cli_state(ctx)
        if param.name == "store":
            state.store_url = value
        elif param.name == "debug":
            state.debug = state.debug or bool(value)
    return value


def _global_options_after(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="Store URL, as before the command (see `makers-store --help`).",
            expose_value=False,
            callback=_given_after,
            autocompletion=complete_store_path,
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show tracebacks on errors.",
            expose_value=False,
            callback=_given_after,
        ),
    ] = False,
) -> None:
    """The global options as every command also takes them (never run)."""


def accept_global_options_after(command: Any) -> None:
    """Let every command below ``command`` take the global options after its
    name too (``makers-store conv list --store s1.db``), as the root takes them
    before it: one set of options, declared once above and added to each
    command that does not declare an option of that name itself (``serve``
    and ``studio`` have a ``--store`` of their own)."""
    import typer.main

    template = typer.Typer(add_completion=False)
    template.command()(_global_options_after)
    shared = typer.main.get_command(template).params
    for sub in getattr(command, "commands", {}).values():
        if hasattr(sub, "commands"):
            accept_global_options_after(sub)
            continue
        taken = {name for param in sub.params for name in param.opts}
        sub.params.extend(param for param in shared if not taken & set(param.opts))
