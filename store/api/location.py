"""Where the default store lives, and why.

Order: an explicit url; else ``$MAKERS_STORE_URL``; else
``.makers-store/store.db`` in the nearest enclosing Makers project (a
directory holding ``edgeone.json``, ``agents/`` or ``cloud-functions/``);
else ``store.db`` in the per-user data directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "MAKERS_STORE_URL"
PROJECT_MARKERS = ("edgeone.json", "agents", "cloud-functions")
PROJECT_STORE = Path(".makers-store") / "store.db"


@dataclass(frozen=True, slots=True)
class StoreLocation:
    url: str
    reason: str

    @property
    def display_url(self) -> str:
        """The URL with any password replaced by ``***`` (for printing)."""
        return redact_url(self.url)

    def __str__(self) -> str:
        return f"{self.display_url} ({self.reason})"


def redact_url(url: str) -> str:
    """``url`` without the password of its ``user:password@`` part."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}{slash}{tail}"


def find_project(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that looks like a Makers project."""
    for directory in (start, *start.parents):
        for marker in PROJECT_MARKERS:
            if (directory / marker).exists():
                return directory
    return None


def projects_below(start: Path, *, limit: int = 3) -> list[Path]:
    """Up to ``limit`` folders directly inside ``start`` that are Makers
    projects (sorted by name; hidden folders skipped): what a person who ran
    ``makers-store init demo`` and stayed in the parent folder meant."""
    found: list[Path] = []
    try:
        children = sorted(start.iterdir())
    except OSError:
        return found
    for child in children:
        if child.name.startswith(".") or not child.is_dir():
            continue
        if any((child / marker).exists() for marker in PROJECT_MARKERS):
            found.append(child)
            if len(found) == limit:
                break
    return found


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def resolve(
    url: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> StoreLocation:
    if url:
        return StoreLocation(url, "given explicitly")
    environ = os.environ if env is None else env
    if environ.get(ENV_VAR):
        return StoreLocation(environ[ENV_VAR], f"from ${ENV_VAR}")
    here = (cwd or Path.cwd()).resolve()
    project = find_project(here)
    if project is not None:
        return StoreLocation(
            sqlite_url(project / PROJECT_STORE), f"inside the Makers project at {project}"
        )
    import platformdirs

    data_dir = Path(platformdirs.user_data_dir("makers-store"))
    return StoreLocation(
        sqlite_url(data_dir / "store.db"), "no Makers project here; the per-user data directory"
    )
