"""Store URLs and the backends they name: ``open_blob_store(url)``, importing
backends lazily (the URL forms: :mod:`makers_store.factory`).

Apart from :mod:`makers_store.factory` because it needs no public API: the
store's own modules that open a second store (a snapshot file,
:mod:`makers_store.maintenance.snapshots`) open its blobs here without importing the
API that imports them.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..blob import BlobStore
from ..errors import MemoryNotFoundError, MemoryValidationError

# scheme -> "module:factory"; each factory takes (url, path, options) and returns a BlobStore.
BACKENDS: dict[str, str] = {
    "sqlite": "makers_store.emulator.sqlite.backend:from_url",
    "memory": "makers_store.emulator.memory.backend:from_url",
    "postgresql": "makers_store.emulator.postgres.backend:from_url",
    "postgres": "makers_store.emulator.postgres.backend:from_url",
    "s3": "makers_store.emulator.s3.backend:from_url",
}


# ``sqlite:/x.db``, ``s3:bucket``: a scheme without ``//`` is a mistyped URL, not
# a file name (one letter before the colon may be a Windows drive).
_SCHEME_WITHOUT_SLASHES = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def split_url(url: str) -> tuple[str, str, dict[str, str]]:
    """(scheme, path, options) of a store URL; a bare path is a SQLite file."""
    if "://" not in url:
        if _SCHEME_WITHOUT_SLASHES.match(url):
            raise MemoryValidationError(
                f"url {url!r} is not a store URL: write scheme://..., e.g. "
                "sqlite:///relative.db or sqlite:////absolute.db (a file name "
                "with a colon: ./name)"
            )
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


def open_blob_store(url: str, *, create: bool = True) -> BlobStore:
    """The Blob store at ``url``. With ``create=False`` a store that does not
    exist yet is refused (MemoryNotFoundError) instead of being created: for
    readers, so that a mistyped path is reported, not made."""
    scheme, path, options = split_url(url)
    if not create and scheme == "sqlite" and not Path(path).is_file():
        raise MemoryNotFoundError(f"no store at {path}; writes create it")
    target = BACKENDS.get(scheme)
    if target is None:
        known = ", ".join(f"{name}://" for name in sorted(BACKENDS))
        raise MemoryValidationError(f"url {url!r}: unknown scheme {scheme!r}; known: {known}")
    module_name, _, attr = target.partition(":")
    factory: Any = getattr(importlib.import_module(module_name), attr)
    store: BlobStore = factory(url, path, options)
    return store
