"""``open_store(url)``: turn a URL into a store, importing backends lazily.

Schemes: ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` (SQLAlchemy
style; a bare filesystem path means the same), ``memory://`` (a fresh
in-process store; ``memory://?atomic=false`` steps through units one
operation at a time, like object storage), ``postgresql://user@host/db``
(extra ``postgres``) and ``s3://bucket/prefix?endpoint_url=...`` (extra ``s3``).
"""

from __future__ import annotations

from .api.backend_urls import BACKENDS, open_blob_store, split_url
from .api.location import StoreLocation, resolve
from .clock import Clock, IdSource
from .context_store import ContextStore

__all__ = ["BACKENDS", "open_blob_store", "open_store", "split_url"]


def open_store(
    url: str | None = None,
    *,
    clock: Clock | None = None,
    ids: IdSource | None = None,
    create: bool = True,
) -> ContextStore:
    """Open the store at ``url`` (see :mod:`makers_store.api.location` for the
    default); ``create=False``: see :func:`open_blob_store`."""
    location: StoreLocation = resolve(url)
    blobs = open_blob_store(location.url, create=create)
    return ContextStore(blobs, clock=clock, ids=ids, location=location)
