"""makers_store: the EdgeOne Makers ``context.store`` API, locally.

>>> import makers_store
>>> store = makers_store.open_store("memory://")

See README.md for the API; :mod:`makers_store.errors` draws the error tree.
"""

from __future__ import annotations

from .api import ContextStore, StateStore
from .blob import Blob, BlobInfo, BlobStore
from .clock import Clock, IdSource
from .convert import to_anthropic_messages, to_openai_input
from .errors import (
    BackendError,
    MemoryConflictError,
    MemoryCorruptError,
    MemoryNotFoundError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MissingExtraError,
    PreconditionFailedError,
    StoreError,
)
from .factory import open_blob_store, open_store
from .location import StoreLocation
from .models import ConversationMeta, ListConversationsResult, Message
from .sync_api import SyncContextStore, SyncStateStore

__all__ = [
    "BackendError",
    "Blob",
    "BlobInfo",
    "BlobStore",
    "ContextStore",
    "ConversationMeta",
    "ListConversationsResult",
    "MemoryConflictError",
    "MemoryCorruptError",
    "MemoryNotFoundError",
    "MemoryQuotaExceededError",
    "MemoryValidationError",
    "Message",
    "MissingExtraError",
    "PreconditionFailedError",
    "StateStore",
    "StoreError",
    "StoreLocation",
    "SyncContextStore",
    "SyncStateStore",
    "open_blob_store",
    "open_store",
    "open_sync_store",
    "to_anthropic_messages",
    "to_openai_input",
]


def open_sync_store(
    url: str | None = None, *, clock: Clock | None = None, ids: IdSource | None = None
) -> SyncContextStore:
    """The blocking twin of :func:`open_store` (for cloud functions, scripts, the CLI)."""
    return SyncContextStore(open_store(url, clock=clock, ids=ids))
