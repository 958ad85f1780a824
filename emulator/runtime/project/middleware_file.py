"""A project's middleware file, and whether the project leaves middleware to Next.js.

The platform's CLI (edgeone 1.4.9) looks for ``middleware.js``,
``middleware.ts``, ``proxy.js`` and ``proxy.ts``, in that order, in the
project folder and then in ``src/`` (its dev server looks only for the
``middleware.*`` names; its build, what the platform runs, takes all four, so
serve does). A Next.js project's ``middleware.ts`` is Next's own: the
platform does not run it as a platform middleware, and neither does serve.
"""

from __future__ import annotations

import json
from pathlib import Path

MIDDLEWARE_NAMES = ("middleware.js", "middleware.ts", "proxy.js", "proxy.ts")
MIDDLEWARE_FOLDERS = (".", "src")
_NEXT_CONFIGS = ("next.config.ts", "next.config.js", "next.config.mjs")
#: With ``next`` among the dependencies, one of these makes a Next.js project.
_NEXT_FOLDERS = ("app", "pages", "src")


def find_middleware(project: Path) -> Path | None:
    """The middleware file the platform would run (None: there is none)."""
    for folder in MIDDLEWARE_FOLDERS:
        for name in MIDDLEWARE_NAMES:
            path = project / folder / name
            if path.is_file():
                return path
    return None


def is_middleware_file(project: Path, relative: str) -> bool:
    """Whether ``relative`` (a path under ``project``) is a place a middleware file goes."""
    path = Path(relative)
    return path.name in MIDDLEWARE_NAMES and str(path.parent) in MIDDLEWARE_FOLDERS


def uses_nextjs(project: Path) -> bool:
    """Whether the platform treats ``project`` as a Next.js app (as its CLI decides:
    a next.config file, or ``next`` in package.json beside app/, pages/ or src/)."""
    if any((project / name).is_file() for name in _NEXT_CONFIGS):
        return True
    try:
        manifest = json.loads((project / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict):
        return False
    declared = [manifest.get(key) for key in ("dependencies", "devDependencies")]
    has_next = any(isinstance(deps, dict) and deps.get("next") for deps in declared)
    return has_next and any((project / name).exists() for name in _NEXT_FOLDERS)
