"""``makers-store serve`` and ``makers-store init``.

Everything heavy (starlette, uvicorn, the runtime) is imported inside the
command functions, so ``makers-store --help`` stays fast.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .options import ListenHost, ListenPort

if TYPE_CHECKING:
    from makers_store.emulator.runtime import server
    from makers_store.emulator.runtime.project.routes import RouteTable


#: Helper modules the route table names before it only counts the rest.
SHOWN_HELPERS = 5


def _route_lines(routes: RouteTable) -> list[str]:
    """``  ANY   /api/**   cloud-functions/api/index.py (Flask app)``, one per route
    (file names are the project's: escaped before the padding is measured)."""
    from .text import printable_line

    paths = [printable_line(route.shown_path) for route in routes.all]
    width = max((len(path) for path in paths), default=0)
    lines = []
    for route, path in zip(routes.all, paths, strict=True):
        kind = "" if route.runtime == "agent" else f" ({route.entry_label})"
        file = printable_line(route.relative)
        lines.append(f"  {route.methods:<4}  {path:<{width}}  {file}{kind}")
    return lines


def _print_routes(routes: RouteTable) -> None:
    """The route table, then the cloud-function helper modules (which are not routed)."""
    from .render import stdout
    from .text import printable_line

    screen = stdout()

    def say(line: str) -> None:  # through the one safe printer, never re-wrapped
        screen.print(line, whole=True)

    if routes.all:
        say("routes")
        for line in _route_lines(routes):
            say(line)
    else:
        say("no routes yet: add agents/<name>.py or cloud-functions/<path>.py")
    if routes.helpers:
        shown = ", ".join(printable_line(helper) for helper in routes.helpers[:SHOWN_HELPERS])
        more = len(routes.helpers) - SHOWN_HELPERS
        say(
            f"helpers (not routed: no entry pattern): {shown}"
            + (f" and {more} more" if more > 0 else "")
        )


def _print_app(prepared: server.PreparedServe, port: int) -> None:
    """``app http://127.0.0.1:8088/ (frontend: npx vite, package.json scripts.dev)``:
    the address to open, before the routes, when the project has a frontend."""
    from makers_store.emulator.runtime.listening import local_url
    from makers_store.emulator.runtime.project.frontend import describe

    from .render import stdout

    if prepared.frontend is not None:
        url = local_url(prepared.options.host, port)
        stdout().print(f"app {url}/ (frontend: {describe(prepared.frontend)})", whole=True)


def warn(message: str) -> None:
    """``warning: ...`` on stderr, one line whatever the width (scripts read it);
    ``serve`` and ``studio`` alike."""
    from .render import stderr, text

    stderr().print(text("warning: ", style="yellow") + text(message), whole=True)


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
    host: ListenHost = "127.0.0.1",
    port: ListenPort = 8088,
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
        bool,
        typer.Option(
            "--reload", help="Restart the workers when a .py, .env or edgeone.json file changes."
        ),
    ] = False,
    sticky: Annotated[
        bool,
        typer.Option(
            "--sticky",
            help="Keep each conversation on one instance (the platform's usual case) instead "
            "of rotating it.",
        ),
    ] = False,
    no_tools: Annotated[
        bool,
        typer.Option(
            "--no-tools",
            help="ctx.tools and ctx.sandbox run nothing (no local commands, files or code).",
        ),
    ] = False,
    no_function_limits: Annotated[
        bool,
        typer.Option(
            "--no-function-limits",
            help="Lift the platform's cloud-function limits (6 MB body, 120 s per request).",
        ),
    ] = False,
    no_frontend: Annotated[
        bool,
        typer.Option(
            "--no-frontend",
            help="Do not start or serve the project's frontend (its dev command, or its built "
            "outputDirectory); only agents and cloud functions answer.",
        ),
    ] = False,
    seed: Annotated[
        Path | None,
        typer.Option(
            "--seed",
            metavar="PATH",
            help="Load these fixtures before serving (an export file, or a folder of them; "
            "a relative path not found here is looked for in the project): their "
            "conversations replace the ones with their ids, as makers-store seed does.",
        ),
    ] = None,
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
            sticky=sticky,
            tools_enabled=not no_tools,
            function_limits=not no_function_limits,
            frontend=not no_frontend,
        )
    )
    listeners = server.listen(prepared)  # a port in use fails here, before the route table
    if seed is not None:
        in_project = prepared.project / seed
        _seed(prepared.store.url, in_project if not seed.exists() and in_project.exists() else seed)
    for warning in prepared.warnings:
        warn(warning)
    _print_app(prepared, listeners.public.getsockname()[1])
    _print_routes(prepared.routes)
    server.run(prepared, listeners, on_routes=_print_routes)


def _seed(url: str, path: Path) -> None:
    """``serve --seed``: the fixtures, loaded into the served store before any
    worker starts (a store inside one process cannot be seeded from here)."""
    from makers_store import open_sync_store
    from makers_store.errors import MemoryValidationError
    from makers_store.factory import split_url

    from .render import stdout
    from .text import counted

    if split_url(url)[0] == "memory":
        raise MemoryValidationError(
            "--seed needs a store the workers share: memory:// lives inside one worker; "
            "use a sqlite:/// store (the default)"
        )
    with open_sync_store(url) as store:
        counts = store.admin.seed(path)
    stdout().print(
        f"seeded {counted(counts.conversations, 'conversation')}, "
        f"{counted(counts.messages, 'message')} from {path}",
        whole=True,
    )


def init_command(
    directory: Annotated[Path, typer.Argument(help="Folder to create the project in.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite files the scaffold would write.")
    ] = False,
) -> None:
    """Create a runnable Makers project: chat, streaming and stop agents, a history API."""
    from makers_store.emulator.runtime.project.scaffold import scaffold

    from .render import stdout

    written = scaffold(directory, force=force)
    screen = stdout()  # paths are user data: printed as text, control characters escaped
    for path in written:
        screen.print(f"  created {path}", whole=True)
    # whole: commands to copy stay one line on a terminal too, and their JSON in one piece
    screen.print("\nnext:", whole=True)
    if directory.resolve() != Path.cwd().resolve():
        # from inside the project the CLI reads the project's store (.makers-store/)
        screen.print(f"  cd {shlex.quote(str(directory))}", whole=True)
    screen.print("  makers-store serve", whole=True)
    screen.print(
        "  curl -s localhost:8088/chat -H 'makers-conversation-id: demo' "
        '-d \'{"message": "hi"}\'',
        whole=True,
    )
    screen.print("  makers-store chat /chat/stream -c demo", whole=True)
