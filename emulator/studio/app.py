"""Assembling the Studio: its page modules' routes, its error pages, its guard.

The Studio is a Starlette app with server-rendered Jinja2 pages and one
small hand-written script (``static/studio.js``) for live updates, paging and
edits; no bundle and no CDN, every file ships in the wheel. Every route is
under ``config.prefix`` ("" for ``makers-store studio``, ``/_studio`` under
``makers-store serve``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from makers_store import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    StoreError,
)

from . import actions, live, pages, rerun, serve_pages, snapshots_page
from .config import Renderer, StudioConfig
from .security import Guard

HERE = Path(__file__).parent


#: The HTTP status of each kind of store error (the rest: 500).
STATUS_OF_ERROR: dict[type[StoreError], int] = {
    MemoryValidationError: 400,
    MemoryNotFoundError: 404,
    MemoryConflictError: 409,
}


def error_handler(render: Renderer) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        status = next(
            (code for kind, code in STATUS_OF_ERROR.items() if isinstance(exc, kind)), 500
        )
        if request.method != "GET" or request.url.path.endswith(".part"):
            return JSONResponse({"error": str(exc)}, status_code=status)
        return render.page(request, "error.html", status=status, message=str(exc))

    return handle


def create_app(config: StudioConfig) -> ASGIApp:
    """The Studio's ASGI app, behind its :class:`.security.Guard`."""
    render = Renderer(config)
    p = config.prefix
    routes = [
        *pages.routes(p, config, render),
        *actions.routes(p, config, render),
        *live.routes(p, config),
        *snapshots_page.routes(p, config, render),
        *(serve_pages.routes(p, config, render) if config.under_serve else []),
        *(rerun.routes(p, config, render) if config.under_serve else []),
        Mount(f"{p}/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={StoreError: error_handler(render)})
    return Guard(app, config.token, config.hosts)
