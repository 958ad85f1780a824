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
    from rich.console import Console
    from rich.text import Text

    from makers_store.errors import missing_extra

    from .context import check_store_url

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
    err = Console(stderr=True)
    warning = bind_warning(host)
    if warning:
        # one line, whatever the width: scripts read it
        warned = Text("warning: ", style="yellow") + Text(warning)
        err.print(warned, highlight=False, soft_wrap=True)

    def ready(url: str, label: str) -> None:
        out = Console()
        out.print(Text(f"Studio for {label or 'the store'}"), highlight=False, soft_wrap=True)
        out.print(Text(f"  {url}"), highlight=False, soft_wrap=True)
        out.print(Text("Ctrl+C stops"), highlight=False)
        out.file.flush()

    run_studio(url, host, port, open_browser=open_browser, on_ready=ready)
