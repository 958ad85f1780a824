"""makers-store Studio: every conversation, state entry and framework
checkpoint of a store in the browser, live.

``makers-store studio`` serves it on its own port (:func:`.server.run_studio`);
``makers-store serve`` serves it at ``/_studio/`` on its port (the front hands
those requests to :func:`studio_app`). Needs the ``studio`` extra (Starlette,
Jinja2, uvicorn; ``serve`` includes it), imported only here, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from makers_store.errors import missing_extra

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from .config import StudioConfig

#: What the Studio imports, each with the package name pip installs.
REQUIRED = (("starlette", "starlette"), ("jinja2", "jinja2"), ("uvicorn", "uvicorn"))
#: Where ``makers-store serve`` serves the Studio (no project route may start so).
SERVE_PREFIX = "/_studio"


def require_extra() -> None:
    """Raise MissingExtraError naming the ``studio`` extra when a part is missing."""
    for module, package in REQUIRED:
        try:
            __import__(module)
        except ImportError:
            raise missing_extra(package, "studio") from None


def studio_app(config: StudioConfig) -> ASGIApp:
    """The Studio's ASGI app for ``config`` (see :class:`.config.StudioConfig`)."""
    require_extra()
    from .app import create_app

    return create_app(config)
