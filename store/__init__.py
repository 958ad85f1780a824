"""makers_store: the EdgeOne Makers ``context.store`` API, locally.

>>> import makers_store
>>> store = makers_store.open_store("memory://")

See docs/library.md for the API; :mod:`makers_store.errors` draws the error tree.

The package is in rooms, in layers; a folder is an import path. Lowest first:

==================  ==============================================================
room                what is in it
==================  ==============================================================
foundation          ``errors.py`` (the error tree), ``models.py`` (Message,
                    ConversationMeta...), ``clock.py`` (clocks, id sources),
                    ``text.py`` (user data made safe to print),
                    ``limits.py`` (what a value may hold: ids, nesting,
                    lone surrogates)
core                ``_core/`` (private: the key layout, the records, the
                    I/O-free programs, the unit runner; its map is its
                    ``__init__``), with the public seam beside it:
                    ``blob_ops.py`` (what a program speaks), ``blob.py`` (what
                    a backend implements), ``blob_conformance.py`` (the
                    backends' test kit, and the search index's rule, which
                    it re-exports from ``_core/search_text.py``), ``retry.py``
                    (the one retry policy)
``lifecycle/``      a conversation's life after it is written: forks, context
                    windows and conversions, retention, the history rules
``api/``            ``ConversationStore``: the store's own API (messages,
                    conversations, state, watch), over the two rooms below;
                    where a store lives and which backend a URL names
``adapters/``       the agent frameworks' storage protocols
                    (``claude/``, ``openai/``, ``langgraph/``), optional extras
``maintenance/``    ``store.admin``: inventory, index repair, search (and its
                    index), the history doctor, export, import, copy,
                    snapshots, reset and seed
facade              this file (``__all__``, resolved on first use),
                    ``context_store.py`` (``ContextStore``: ``ConversationStore``
                    plus the entries to ``adapters/`` and ``maintenance/``),
                    ``factory.py`` (``open_store(url)``), ``sync_api.py`` (the
                    blocking twins, generated)
==================  ==============================================================

Which room imports which: a room imports its own modules and the rooms
listed before it (lower), never one listed after it (higher), whether at
import time, inside a function or for type checkers only
(``tests/test_rooms.py``). So the core
imports nothing of ``api/``, ``lifecycle/``, ``adapters/`` or
``maintenance/``; the adapters and the maintenance room take the store (a
``ConversationStore``) or its runner from outside; only the facade knows
``ContextStore``, and builds ``store.admin`` and the adapters on first use.
No module imports another that imports it back, not even for types
(``tests/test_store_imports.py``).

Outside the store, ``cli/`` and ``emulator/`` import what ``__all__`` exports
and the documented internal interface: for a backend, ``blob``, ``blob_ops``,
``retry`` (its queue allowance) and ``errors``; for the CLI, the runtime and
the Studio, also ``text``, ``models``, ``clock``, ``factory.split_url``,
:mod:`makers_store.api.location`, the history rules' vocabulary
(:mod:`makers_store.lifecycle.history_rules`), the search's matching
(:mod:`makers_store.maintenance.search`), the export format's names
(:mod:`makers_store.maintenance.exporting`, ``importing.validate_jsonl``),
the adapters' accessors, and the limits of a value
(:mod:`makers_store.limits`: ``MAX_NESTING``, ``has_surrogate``,
``find_surrogate``, ``identifier``). Nothing outside the store imports a
private module (``_core/`` or any ``_`` name; ``tests/test_rooms.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The release (pyproject.toml reads it from here).
__version__ = "0.1.0"

if TYPE_CHECKING:
    from ._core.portal import Portal
    from ._core.runner import UnitRunner
    from ._core.vacuum import VacuumReport
    from .api.location import StoreLocation
    from .api.state import StateStore
    from .api.watch import StoreChange, StoreWatch, SyncStoreWatch
    from .blob import BlobStore
    from .blob_ops import Blob, BlobInfo
    from .clock import Clock, IdSource
    from .context_store import ContextStore
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
    from .lifecycle.context_window import ContextWindow
    from .lifecycle.convert import to_anthropic_messages, to_anthropic_request, to_openai_input
    from .lifecycle.history_rules import HistoryFinding
    from .lifecycle.retention import CheckpointPruneReport, PruneReport
    from .maintenance.admin import StoreAdmin
    from .maintenance.copying import CopyReport
    from .maintenance.doctor import HistoryRepair
    from .maintenance.exporting import TransferCounts
    from .maintenance.index_repair import IndexCheck, IndexDrift, IndexEntry, RebuildSummary
    from .maintenance.inventory import CheckpointName, StateOnlyConversation, StoreCounts
    from .maintenance.search import MessageHit
    from .maintenance.snapshots import SnapshotInfo
    from .models import ConversationMeta, ListConversationsResult, Message
    from .sync_api import SyncContextStore, SyncStateStore, SyncStoreAdmin

# Imported on first use (PEP 562): importing any submodule, such as the CLI
# (makers_store.cli), runs this file first, and `makers-store --help` must not
# pay for the API and its backends (issue 12, item 22).
_SOURCES = {
    ".maintenance.admin": ("StoreAdmin",),
    ".context_store": ("ContextStore",),
    ".blob": ("BlobStore",),
    ".blob_ops": ("Blob", "BlobInfo"),
    ".clock": ("Clock", "IdSource"),
    ".maintenance.copying": ("CopyReport",),
    ".lifecycle.convert": ("to_anthropic_messages", "to_anthropic_request", "to_openai_input"),
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
    ".maintenance.index_repair": ("IndexCheck", "IndexDrift", "IndexEntry", "RebuildSummary"),
    ".maintenance.inventory": ("CheckpointName", "StateOnlyConversation", "StoreCounts"),
    ".lifecycle.context_window": ("ContextWindow",),
    ".maintenance.doctor": ("HistoryRepair",),
    ".lifecycle.history_rules": ("HistoryFinding",),
    ".lifecycle.retention": ("CheckpointPruneReport", "PruneReport"),
    "._core.vacuum": ("VacuumReport",),
    ".api.location": ("StoreLocation",),
    ".models": ("ConversationMeta", "ListConversationsResult", "Message"),
    "._core.portal": ("Portal",),
    "._core.runner": ("UnitRunner",),
    ".maintenance.search": ("MessageHit",),
    ".maintenance.snapshots": ("SnapshotInfo",),
    ".api.state": ("StateStore",),
    ".sync_api": ("SyncContextStore", "SyncStateStore", "SyncStoreAdmin"),
    ".maintenance.exporting": ("TransferCounts",),
    ".api.watch": ("StoreChange", "StoreWatch", "SyncStoreWatch"),
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
