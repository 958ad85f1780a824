"""What one Studio serves and how its pages are rendered: the :class:`StudioConfig`
every page module is given, and the :class:`Renderer` that fills the templates.

Apart from ``app.py`` because the page modules (``pages``, ``actions``,
``live``, ``serve_pages``) need these and ``app.py`` assembles the page
modules: with these in ``app.py`` the two imported each other.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from makers_store import ContextStore

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
