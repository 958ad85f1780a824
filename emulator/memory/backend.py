"""In-memory Blob stores: the reference backend the others are tested against.

:class:`MemoryBlobStore` runs each unit atomically (under a lock, undone on
error). :class:`StepwiseMemoryBlobStore` shares the same map but yields to the
event loop between operations, so concurrent units interleave exactly as they
would on object storage without transactions.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar, TypeVar, assert_never

from makers_store.blob import (
    MIN_QUERY,
    OBJECT_STORAGE,
    TRANSACTIONAL,
    BlobStore,
    Capabilities,
    SearchIndexCheck,
    StepwiseBlobStore,
    VacuumReport,
    drive_sync,
)
from makers_store.blob_ops import (
    Blob,
    BlobInfo,
    Delete,
    DeleteMany,
    Entry,
    Get,
    GetMany,
    ListKeys,
    ListMany,
    Op,
    Program,
    Put,
    Scan,
    keys_written,
    prefix_end,
)
from makers_store.errors import MemoryValidationError, PreconditionFailedError

from .search import TextCache
from .write_feed import WriteFeed

T = TypeVar("T")


class MemoryMap:
    """Sorted key -> Blob map applying blob operations synchronously."""

    def __init__(self) -> None:
        self.blobs: dict[str, Blob] = {}
        self.sorted_keys: list[str] = []
        self._etags = itertools.count(1)
        self.lock = threading.RLock()
        #: the keys each unit writes, for watchers (ContextStore.watch)
        self.writes = WriteFeed()

    def apply(self, op: Op, undo: list[tuple[str, Blob | None]] | None = None) -> object:
        match op:
            case Get():
                return self.blobs.get(op.key)
            case GetMany():
                return [self.blobs.get(key) for key in op.keys]
            case Put():
                return self._put(op, undo)
            case Delete():
                current = self.blobs.get(op.key)
                if op.if_match is not None and (current is None or current.etag != op.if_match):
                    raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
                if current is None:
                    return False
                self._store(op.key, None, undo)
                return True
            case DeleteMany():
                for key in op.keys:
                    if key in self.blobs:
                        self._store(key, None, undo)
                return None
            case ListKeys():
                return [BlobInfo(b.key, b.etag, b.size, b.updated_at) for b in self._range(op)]
            case Scan():
                return [Entry(b.key, b.data) for b in self._range(op)]
            case ListMany():
                return [[b.info for b in self._range(listing)] for listing in op.listings]
            case _:
                assert_never(op)

    def _put(self, op: Put, undo: list[tuple[str, Blob | None]] | None) -> BlobInfo | None:
        current = self.blobs.get(op.key)
        if op.if_none_match and current is not None:
            if op.quiet:
                return None
            raise PreconditionFailedError(f"{op.key!r} already exists", key=op.key)
        if op.if_match is not None and (current is None or current.etag != op.if_match):
            raise PreconditionFailedError(f"{op.key!r} changed (etag mismatch)", key=op.key)
        blob = Blob(
            op.key,
            f"m{next(self._etags)}",
            len(op.data),
            time.time_ns() // 1_000_000,
            bytes(op.data),
        )
        self._store(op.key, blob, undo)
        return None if op.quiet else blob.info

    def _store(
        self, key: str, blob: Blob | None, undo: list[tuple[str, Blob | None]] | None
    ) -> None:
        previous = self.blobs.get(key)
        if undo is not None:
            undo.append((key, previous))
        if blob is None:
            del self.blobs[key]
            del self.sorted_keys[bisect.bisect_left(self.sorted_keys, key)]
        else:
            if previous is None:
                bisect.insort(self.sorted_keys, key)
            self.blobs[key] = blob

    def rollback(self, undo: list[tuple[str, Blob | None]]) -> None:
        for key, previous in reversed(undo):
            self._store(key, previous, None)

    def _range(self, op: ListKeys | Scan) -> list[Blob]:
        keys = self.sorted_keys
        lo = bisect.bisect_left(keys, op.prefix)
        if op.start_after is not None:
            lo = max(lo, bisect.bisect_right(keys, op.start_after))
        hi = len(keys)
        end = prefix_end(op.prefix)
        if end is not None:
            hi = bisect.bisect_left(keys, end)
        if op.end_before is not None:
            hi = min(hi, bisect.bisect_left(keys, op.end_before))
        if lo >= hi:
            return []
        limit = op.limit if op.limit is not None else hi - lo
        if op.reverse:
            selected = keys[max(lo, hi - limit) : hi][::-1]
        else:
            selected = keys[lo : min(hi, lo + limit)]
        return [self.blobs[key] for key in selected]


class MemoryBlobStore(BlobStore):
    """Atomic in-process backend (``memory://``)."""

    capabilities: ClassVar[Capabilities] = TRANSACTIONAL

    def __init__(self, data: MemoryMap | None = None) -> None:
        self.data = data or MemoryMap()
        self._texts = TextCache()

    async def search_message_keys(self, folded: str, limit: int) -> list[str] | None:
        """In-process texts (:mod:`.memory_search`), read under the units' lock."""
        if len(folded) < MIN_QUERY:
            return None
        with self.data.lock:
            return self._texts.message_keys(self.data.blobs, folded, limit)

    async def check_search_index(self) -> SearchIndexCheck | None:
        with self.data.lock:
            return self._texts.check(self.data.blobs)

    async def rebuild_search_index(self) -> int | None:
        with self.data.lock:
            return self._texts.rebuild(self.data.blobs)

    async def run(self, program: Program[T], *, write: bool) -> T:
        with self.data.lock:
            undo: list[tuple[str, Blob | None]] = []
            try:
                result = drive_sync(program, lambda op: self.data.apply(op, undo))
            except BaseException:
                self.data.rollback(undo)
                raise
            if undo and self.data.writes.listening:
                self.data.writes.announce(key for key, _ in undo)
            return result

    def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """In-process: every unit announces the keys it wrote (no polling)."""
        return self.data.writes.watch()

    def describe(self) -> dict[str, Any]:
        return {"kind": "memory", "atomic": True, "blobs": len(self.data.blobs),
                "reclaimable_bytes": 0}  # fmt: skip

    async def vacuum(self) -> VacuumReport:
        return _nothing_to_vacuum()


class StepwiseMemoryBlobStore(StepwiseBlobStore):
    """Non-atomic in-process backend (``memory://?atomic=false``). It behaves
    like object storage, forward-only listings included, so the store's
    object-storage paths are tested without a server."""

    capabilities: ClassVar[Capabilities] = OBJECT_STORAGE

    def __init__(self, data: MemoryMap | None = None) -> None:
        self.data = data or MemoryMap()

    async def execute(self, op: Op) -> object:
        await asyncio.sleep(0)  # let other units interleave, as on object storage
        with self.data.lock:
            result = self.data.apply(op)
        if self.data.writes.listening:
            self.data.writes.announce(keys_written(op))
        return result

    def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """In-process: every write announces its keys (no polling)."""
        return self.data.writes.watch()

    def describe(self) -> dict[str, Any]:
        return {"kind": "memory", "atomic": False, "blobs": len(self.data.blobs),
                "reclaimable_bytes": 0}  # fmt: skip

    async def vacuum(self) -> VacuumReport:
        return _nothing_to_vacuum()


def _nothing_to_vacuum() -> VacuumReport:
    """Both memory backends: a deleted blob's bytes are gone with it."""
    return VacuumReport(
        backend="memory",
        bytes_before=None,
        bytes_after=None,
        note="nothing to do: an in-process store frees a blob's memory when it is deleted",
        nothing_to_do=True,
    )


def from_url(url: str, path: str, options: dict[str, str]) -> BlobStore:
    atomic = options.pop("atomic", "true").lower()
    if options or path:
        raise MemoryValidationError(f"url {url!r}: memory:// takes no path and only ?atomic=")
    if atomic in ("true", "1", "yes"):
        return MemoryBlobStore()
    if atomic in ("false", "0", "no"):
        return StepwiseMemoryBlobStore()
    raise MemoryValidationError(f"url {url!r}: atomic must be true or false")
