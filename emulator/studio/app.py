"""Assembling the Studio: its configuration, templates and routes.

The Studio is a Starlette app with server-rendered Jinja2 pages and one
small hand-written script (``static/studio.js``) for live updates, paging and
edits; no bundle and no CDN, every file ships in the wheel. Every route is
under ``config.prefix`` ("" for ``makers-store studio``, ``/_studio`` under
``makers-store serve``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from makers_store import (
    ContextStore,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    StoreError,
)

from .security import Guard

HERE = Path(__file__).parent


@dataclasses.dataclass
class StudioConfig:
    """What one Studio serves and how."""

    store: ContextStore
    token: str
    #: where every route lives ("" standalone, "/_studio" under serve)
    prefix: str = ""
    #: ``Host`` names accepted (None: any; see :func:`.security.allowed_hosts`)
    hosts: frozenset[str] | None = None
    #: under serve: the project (its traces) and its agent routes (the playground)
    project: Path | None = None
    agent_routes: tuple[str, ...] = ()
    #: what the header says the store is
    store_label: str = ""

    @property
    def under_serve(self) -> bool:
        return self.project is not None


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every string a template prints is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


class Renderer:
    def __init__(self, config: StudioConfig) -> None:
        self.config = config
        self.env = templates()

    def page(self, request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.text(name, **values), status_code=status)

    def text(self, name: str, **values: Any) -> str:
        config = self.config
        return self.env.get_template(name).render(
            base=config.prefix,
            token=config.token,
            under_serve=config.under_serve,
            store_label=config.store_label,
            **values,
        )


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
    from . import actions, live, pages, serve_pages

    render = Renderer(config)
    p = config.prefix
    routes = [
        *pages.routes(p, config, render),
        *actions.routes(p, config),
        *live.routes(p, config),
        *(serve_pages.routes(p, config, render) if config.under_serve else []),
        Mount(f"{p}/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={StoreError: error_handler(render)})
    return Guard(app, config.token, config.hosts)
