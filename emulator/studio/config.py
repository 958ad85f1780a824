"""What one Studio serves and how its pages are rendered: the :class:`StudioConfig`
every page module is given, and the :class:`Renderer` that fills the templates
(every value they print made visible by :func:`shown`; times by :func:`moment`).

Apart from ``app.py`` because the page modules (``pages``, ``actions``,
``live``, ``serve_pages``) need these and ``app.py`` assembles the page
modules: with these in ``app.py`` the two imported each other.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from makers_store import ContextStore
from makers_store.lifecycle.history_rules import REPAIR_WORDS
from makers_store.text import printable

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
    #: set when the server begins to stop: the event streams end then, so an
    #: open tab does not hold the stop for the whole graceful period
    stopping: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    @property
    def under_serve(self) -> bool:
        return self.project is not None


class Exact(str):
    """A value a template prints exactly (``{{ key|exact }}``): data the page's
    script sends back (a state key, a message id) or a field's value, where a
    visible escape would change what is sent. Still HTML-escaped."""


def shown(value: Any) -> Any:
    """Every value a template prints (Jinja2's ``finalize``): control and bidi
    characters shown as visible escapes, as the CLI shows them (one
    implementation, :func:`makers_store.text.printable`), so U+202E cannot
    reverse the text after it and ESC is ``\\x1b``, not a blank box. The one
    place the templates do this; the script's own text goes through its
    ``shown``."""
    if isinstance(value, Exact):
        return value
    if isinstance(value, Markup):  # made by a filter (tojson): its text escaped the same way
        return Markup(printable(str(value)))
    if isinstance(value, str):
        return printable(value)
    return value


def moment(value: int | str | None, relative: bool = False) -> Markup:
    """``<time>`` for a millisecond timestamp (or an ISO time): UTC text that
    the page's script shows in the browser's local time, the UTC time on
    hover (``relative``: "3 min ago", for lists). '' for None."""
    if value is None or value == "":
        return Markup("")
    if isinstance(value, str):
        try:
            moment_ = datetime.fromisoformat(value)
        except ValueError:  # not a time after all: shown as the text it is
            return escape(printable(value))
        if moment_.tzinfo is None:
            moment_ = moment_.replace(tzinfo=UTC)
    else:
        moment_ = datetime.fromtimestamp(value / 1000, UTC)
    utc = moment_.astimezone(UTC)
    iso = utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    flag = " data-relative" if relative else ""
    # only digits and punctuation made here: nothing of the user's in this markup
    return Markup(f'<time datetime="{iso}"{flag}>{utc:%Y-%m-%d %H:%M:%S} UTC</time>')


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every string a template prints is text, never markup
        finalize=shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["exact"] = Exact
    env.globals["moment"] = moment
    env.globals["repair_words"] = REPAIR_WORDS  # the doctor's repairs, in its words
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
