"""``makers-store studio``: browse and edit a store in the browser, live.

Everything heavy (Starlette, Jinja2, uvicorn, the store) is imported inside
the command, so ``makers-store --help`` stays fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .context import cli_state
from .options import ListenHost, ListenPort


def studio_command(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="Store URL (wins over the global --store); default: see `makers-store info`.",
        ),
    ] = None,
    host: ListenHost = "127.0.0.1",
    port: ListenPort = 8089,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the Studio in the default browser.")
    ] = False,
) -> None:
    """Serve the Studio: conversations, transcripts, state and framework data, live."""
    from makers_store.errors import missing_extra

    from .context import check_store_url
    from .render import stdout
    from .serve import warn

    url = store or cli_state(ctx).store_url
    check_store_url(url, create=False)  # memory:// would show an empty store that no one can fill
    try:
        from makers_store.emulator.studio import require_extra
        from makers_store.emulator.studio.server import bind_warning, run_studio

        require_extra()
        # uvicorn serves the Studio over h11 (uvicorn_server's http="h11"), which it
        # imports only once the server starts: check it here, with the others
        import h11  # noqa: F401
    except ModuleNotFoundError as exc:
        # the same advice require_extra gives, naming the extra that brings the module
        raise missing_extra(exc.name or str(exc), "studio") from None
    warning = bind_warning(host)
    if warning:
        warn(warning)
    screen = stdout()  # the store's URL is the user's: through the one safe printer

    def ready(url: str, label: str) -> None:
        screen.print(f"Studio for {label or 'the store'}", whole=True)
        screen.print(f"  {url}", whole=True)
        screen.print("Ctrl+C stops", whole=True)

    run_studio(url, host, port, open_browser=open_browser, on_ready=ready)
    # said once every request has ended and the store is closed: the port is free
    screen.print("Studio stopped", whole=True)
