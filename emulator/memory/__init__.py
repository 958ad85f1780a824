"""The in-process backends (``memory://``): a map.

==================  ==========================================================
module              what is in it
==================  ==========================================================
:mod:`.backend`     ``MemoryBlobStore`` (one lock, units run whole) and
                    ``StepwiseMemoryBlobStore`` (units stepped through one
                    operation at a time, as S3 runs them), ``from_url``
:mod:`.write_feed`  the feed of written keys behind ``ContextStore.watch``
:mod:`.search`      the search index: each message's folded text
==================  ==========================================================

Imports: the store's blob interface (:mod:`makers_store.blob`,
:mod:`makers_store.blob_ops`) and :mod:`makers_store.errors`, nothing else of
the store and no other backend.
"""

from __future__ import annotations

from .backend import MemoryBlobStore, StepwiseMemoryBlobStore, from_url

__all__ = ["MemoryBlobStore", "StepwiseMemoryBlobStore", "from_url"]
