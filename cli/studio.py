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

    from makers_store.emulator.studio import require_extra
    from makers_store.emulator.studio.server import bind_warning, run_studio

    require_extra()
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

    url = store or cli_state(ctx).store_url
    run_studio(url, host, port, open_browser=open_browser, on_ready=ready)
