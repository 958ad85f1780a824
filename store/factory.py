"""``open_store(url)``: turn a URL into a store, importing backends lazily.

Schemes: ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` (SQLAlchemy
style; a bare filesystem path means the same), ``memory://`` (a fresh
in-process store; ``memory://?atomic=false`` steps through units one
operation at a time, like object storage), ``postgresql://user@host/db``
(extra ``postgres``) and ``s3://bucket/prefix?endpoint_url=...`` (extra ``s3``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .api import ContextStore
from .blob import BlobStore
from .clock import Clock, IdSource
from .errors import MemoryValidationError
from .location import StoreLocation, resolve

# scheme -> "module:factory"; each factory takes (url, path, options) and returns a BlobStore.
BACKENDS: dict[str, str] = {
    "sqlite": "makers_store.emulator.sqlite:from_url",
    "memory": "makers_store.emulator.memory:from_url",
    "postgresql": "makers_store.emulator.postgres:from_url",
    "postgres": "makers_store.emulator.postgres:from_url",
    "s3": "makers_store.emulator.s3:from_url",
}


def split_url(url: str) -> tuple[str, str, dict[str, str]]:
    """(scheme, path, options) of a store URL; a bare path is a SQLite file."""
    if "://" not in url:
        return "sqlite", str(Path(url).expanduser()), {}
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw = url.split("://", 1)[1].split("?", 1)[0]
        if not raw.startswith("/"):
            raise MemoryValidationError(
                f"url {url!r}: write sqlite:///relative/path.db or sqlite:////absolute/path.db"
            )
        path = raw[1:]
        if not path:
            raise MemoryValidationError(f"url {url!r} names no database file")
        path = str(Path(path).expanduser())
    else:
        path = parts.netloc + parts.path
    return scheme, path, dict(parse_qsl(parts.query))


def open_blob_store(url: str) -> BlobStore:
    scheme, path, options = split_url(url)
    target = BACKENDS.get(scheme)
    if target is None:
        known = ", ".join(f"{name}://" for name in sorted(BACKENDS))
        raise MemoryValidationError(f"url {url!r}: unknown scheme {scheme!r}; known: {known}")
    module_name, _, attr = target.partition(":")
    factory: Any = getattr(importlib.import_module(module_name), attr)
    store: BlobStore = factory(url, path, options)
    return store


def open_store(
    url: str | None = None, *, clock: Clock | None = None, ids: IdSource | None = None
) -> ContextStore:
    """Open the store at ``url`` (see :mod:`makers_store.location` for the default)."""
    location: StoreLocation = resolve(url)
    return ContextStore(open_blob_store(location.url), clock=clock, ids=ids, location=location)
