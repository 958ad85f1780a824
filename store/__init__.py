"""makers_store: the EdgeOne Makers ``context.store`` API, locally.

>>> import makers_store
>>> store = makers_store.open_store("memory://")

See docs/library.md for the API; :mod:`makers_store.errors` draws the error tree.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The release (pyproject.toml reads it from here).
__version__ = "0.1.0"

if TYPE_CHECKING:
    from .admin import StoreAdmin
    from .api import ContextStore
    from .blob import BlobStore
    from .blob_ops import Blob, BlobInfo
    from .clock import Clock, IdSource
    from .convert import to_anthropic_messages, to_anthropic_request, to_openai_input
    from .copying import CopyReport
    from .errors import (
        BackendError,
        InvalidHistoryError,
        MemoryConflictError,
        MemoryCorruptError,
        MemoryNotFoundError,
        MemoryQuotaExceededError,
        MemoryValidationError,
        MissingExtraError,
        PreconditionFailedError,
        StoreError,
        SyncCallInEventLoopError,
    )
    from .factory import open_blob_store, open_store
    from .index_repair import IndexCheck, IndexDrift, IndexEntry, RebuildSummary
    from .inventory import CheckpointName, StateOnlyConversation, StoreCounts
    from .lifecycle.context_window import ContextWindow
    from .lifecycle.doctor import HistoryRepair
    from .lifecycle.history_rules import HistoryFinding
    from .lifecycle.retention import CheckpointPruneReport, PruneReport
    from .lifecycle.vacuum import VacuumReport
    from .location import StoreLocation
    from .models import ConversationMeta, ListConversationsResult, Message
    from .portal import Portal
    from .runner import UnitRunner
    from .search import MessageHit
    from .snapshots import SnapshotInfo
    from .state_api import StateStore
    from .sync_api import SyncContextStore, SyncStateStore, SyncStoreAdmin
    from .transfer import TransferCounts
    from .watch import StoreChange, StoreWatch, SyncStoreWatch

# Imported on first use (PEP 562): importing any submodule, such as the CLI
# (makers_store.cli), runs this file first, and `makers-store --help` must not
# pay for the API and its backends (issue 12, item 22).
_SOURCES = {
    ".admin": ("StoreAdmin",),
    ".api": ("ContextStore",),
    ".blob": ("BlobStore",),
    ".blob_ops": ("Blob", "BlobInfo"),
    ".clock": ("Clock", "IdSource"),
    ".copying": ("CopyReport",),
    ".convert": ("to_anthropic_messages", "to_anthropic_request", "to_openai_input"),
    ".errors": (
        "BackendError",
        "InvalidHistoryError",
        "MemoryConflictError",
        "MemoryCorruptError",
        "MemoryNotFoundError",
        "MemoryQuotaExceededError",
        "MemoryValidationError",
        "MissingExtraError",
        "PreconditionFailedError",
        "StoreError",
        "SyncCallInEventLoopError",
    ),
    ".factory": ("open_blob_store", "open_store"),
    ".index_repair": ("IndexCheck", "IndexDrift", "IndexEntry", "RebuildSummary"),
    ".inventory": ("CheckpointName", "StateOnlyConversation", "StoreCounts"),
    ".lifecycle.context_window": ("ContextWindow",),
    ".lifecycle.doctor": ("HistoryRepair",),
    ".lifecycle.history_rules": ("HistoryFinding",),
    ".lifecycle.retention": ("CheckpointPruneReport", "PruneReport"),
    ".lifecycle.vacuum": ("VacuumReport",),
    ".location": ("StoreLocation",),
    ".models": ("ConversationMeta", "ListConversationsResult", "Message"),
    ".portal": ("Portal",),
    ".runner": ("UnitRunner",),
    ".search": ("MessageHit",),
    ".snapshots": ("SnapshotInfo",),
    ".state_api": ("StateStore",),
    ".sync_api": ("SyncContextStore", "SyncStateStore", "SyncStoreAdmin"),
    ".transfer": ("TransferCounts",),
    ".watch": ("StoreChange", "StoreWatch", "SyncStoreWatch"),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


#: Everything a user imports from ``makers_store`` (pinned by tests/test_public_api.py).
__all__ = [
    "BackendError",
    "Blob",
    "BlobInfo",
    "BlobStore",
    "CheckpointName",
    "CheckpointPruneReport",
    "Clock",
    "ContextStore",
    "ContextWindow",
    "ConversationMeta",
    "CopyReport",
    "HistoryFinding",
    "HistoryRepair",
    "IdSource",
    "IndexCheck",
    "IndexDrift",
    "IndexEntry",
    "InvalidHistoryError",
    "ListConversationsResult",
    "MemoryConflictError",
    "MemoryCorruptError",
    "MemoryNotFoundError",
    "MemoryQuotaExceededError",
    "MemoryValidationError",
    "Message",
    "MessageHit",
    "MissingExtraError",
    "Portal",
    "PreconditionFailedError",
    "PruneReport",
    "RebuildSummary",
    "SnapshotInfo",
    "StateOnlyConversation",
    "StateStore",
    "StoreAdmin",
    "StoreChange",
    "StoreCounts",
    "StoreError",
    "StoreLocation",
    "StoreWatch",
    "SyncCallInEventLoopError",
    "SyncContextStore",
    "SyncStateStore",
    "SyncStoreAdmin",
    "SyncStoreWatch",
    "TransferCounts",
    "UnitRunner",
    "VacuumReport",
    "open_blob_store",
    "open_store",
    "open_sync_store",
    "to_anthropic_messages",
    "to_anthropic_request",
    "to_openai_input",
]


def open_sync_store(
    url: str | None = None, *, clock: Clock | None = None, ids: IdSource | None = None
) -> SyncContextStore:
    """The blocking twin of :func:`open_store` (for cloud functions, scripts, the CLI)."""
    from .factory import open_store
    from .sync_api import SyncContextStore

    return SyncContextStore(open_store(url, clock=clock, ids=ids))
