"""``makers-store serve`` and ``makers-store init``.

Everything heavy (starlette, uvicorn, the runtime) is imported inside the
command functions, so ``makers-store --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from makers_store.emulator.runtime.routes import RouteTable


def _print_routes(routes: RouteTable) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="routes", title_justify="left")
    table.add_column("method")
    table.add_column("path")
    table.add_column("file")
    for route in routes.all:
        method = "POST" if route.runtime == "agent" else "do_*"
        table.add_row(method, escape(route.path), escape(route.relative))
    console = Console()
    if routes.all:
        console.print(table)
    else:
        console.print("no routes yet: add agents/<name>.py or cloud-functions/<path>.py")
    console.file.flush()


def _warn(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False)


def _require_serve_extra() -> None:
    from makers_store.errors import missing_extra

    for package in ("starlette", "uvicorn"):
        try:
            __import__(package)
        except ImportError:
            raise missing_extra(package, "serve") from None


def serve_command(
    ctx: typer.Context,
    project_dir: Annotated[
        Path,
        typer.Argument(help="The Makers project: a folder with agents/ and/or cloud-functions/."),
    ] = Path("."),
    host: Annotated[
        str,
        typer.Option(help="Interface to listen on; anything but loopback is reachable by others."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0 picks a free one).")
    ] = 8088,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL for the agents (wins over the global --store); "
            "default: .makers-store/store.db in the project.",
        ),
    ] = None,
    instances: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes; consecutive requests of a conversation go to different "
            "ones, exposing state kept in process memory.",
        ),
    ] = 1,
    recycle_every: Annotated[
        int | None,
        typer.Option(min=1, help="Replace a worker after it has served this many requests."),
    ] = None,
    reload: Annotated[
        bool, typer.Option("--reload", help="Restart the workers when a .py or .env file changes.")
    ] = False,
) -> None:
    """Run a Makers project's agents/ and cloud-functions/ locally, context injected."""
    _require_serve_extra()
    from makers_store.emulator.runtime import server

    store_url = store or getattr(ctx.obj, "store_url", None)
    prepared = server.prepare(
        server.ServeOptions(
            project_dir=project_dir,
            host=host,
            port=port,
            store_url=store_url,
            instances=instances,
            recycle_every=recycle_every,
            reload=reload,
        )
    )
    for warning in prepared.warnings:
        _warn(warning)
    _print_routes(prepared.routes)
    server.run(prepared, on_routes=_print_routes)


def init_command(
    directory: Annotated[Path, typer.Argument(help="Folder to create the project in.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite files the scaffold would write.")
    ] = False,
) -> None:
    """Create a runnable Makers project: chat, streaming and stop agents, a history API."""
    from rich.console import Console

    from makers_store.emulator.runtime.scaffold import scaffold

    written = scaffold(directory, force=force)
    console = Console()
    for path in written:
        console.print(f"  created {path}", highlight=False)
    console.print(
        f"\nnext:\n  makers-store serve {directory}\n"
        "  curl -s localhost:8088/chat -H 'makers-conversation-id: demo' "
        "-d '{\"message\": \"hi\"}'",
        highlight=False,
    )
