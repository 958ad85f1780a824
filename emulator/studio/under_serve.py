"""The Studio inside ``makers-store serve``, at ``/_studio/`` on serve's port.

The front answers ``/_studio`` and everything under it before routing, so no
project route shadows it; and no project route can be shadowed by it except
a catch-all (``[name].py``) asked for that exact path, since a file or
folder whose name starts with ``_`` is never routed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from makers_store import ContextStore, MissingExtraError, open_store

from . import SERVE_PREFIX, require_extra, security

if TYPE_CHECKING:
    from starlette.types import ASGIApp


@dataclass
class ServedStudio:
    app: ASGIApp
    store: ContextStore


def studio_for_serve(
    store_url: str,
    scheme: str,
    host: str,
    project: Path,
    agent_routes: tuple[str, ...],
    stopping: asyncio.Event,
) -> ServedStudio | str:
    """The Studio for a serve run, or why there is none (a warning to print);
    ``stopping``: set when serve stops."""
    if scheme == "memory":
        return (
            "no Studio at /_studio/: a memory:// store lives inside the instance, "
            "where the Studio cannot see it; use a sqlite:/// store"
        )
    try:
        require_extra()
    except MissingExtraError as exc:
        return f"no Studio at /_studio/: {exc}"
    from .app import create_app
    from .config import StudioConfig

    store = open_store(store_url)
    config = StudioConfig(
        store=store,
        token=security.new_token(),
        prefix=SERVE_PREFIX,
        hosts=security.allowed_hosts(host),
        project=project,
        agent_routes=agent_routes,
        store_label=store_url,
        stopping=stopping,
    )
    return ServedStudio(create_app(config), store)
