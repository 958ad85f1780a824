"""Copy a whole store between backends, blob by blob (``makers-store copy``).

Every blob of the source is read in key order, a page at a time, and written
to the destination only where the destination's bytes differ, so a second
run writes nothing and an interrupted run is finished by running it again.
Key order is also a safe write order: within a conversation, message blobs
(``c/{cid}/m/...``) sort before ``c/{cid}/meta``, the commit point, and the
derived index entries (``i/...``) come after all conversations, so a copy cut
short leaves nothing visible that its meta does not vouch for (``makers-store
index check`` confirms it). Etags are the destination's own.

Copy a store nobody is writing to: blobs written to the source during a copy
may or may not be carried over. Keys that exist only in the destination are
left alone and counted, or deleted with ``prune=True``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass
from typing import Any

from .blob import BlobStore, Entry, Op, Program, delete_many, list_keys, put, scan

PAGE = 500
#: concurrent units per page on backends that step one request at a time
PARALLEL_CHUNKS = 8


@dataclass(slots=True)
class CopyReport:
    """What a copy did, in blobs and bytes."""

    source_blobs: int = 0
    written: int = 0
    unchanged: int = 0
    bytes_written: int = 0
    extra_in_destination: int = 0
    pruned: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _count(prefix: str) -> Program[int]:
    total, after = 0, None
    while True:
        batch = yield from list_keys(prefix, start_after=after, limit=1000)
        total += len(batch)
        if len(batch) < 1000:
            return total
        after = batch[-1].key


def _page(after: str | None) -> Program[list[Entry]]:
    return (yield from scan("", start_after=after, limit=PAGE))


def _write_all(entries: list[Entry]) -> Generator[Op, Any, None]:
    for entry in entries:
        yield from put(entry.key, entry.data)


async def _apply(
    dst: BlobStore, make: Callable[[list[Any]], Program[None]], items: list[Any]
) -> None:
    """One unit on a transactional destination; concurrent chunks on object storage."""
    if not items:
        return
    if dst.atomic:
        await dst.run(make(items), write=True)
        return
    size = -(-len(items) // PARALLEL_CHUNKS)
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    await asyncio.gather(*(dst.run(make(chunk), write=True) for chunk in chunks))


async def count_blobs(blobs: BlobStore) -> int:
    """How many blobs a store holds (the copy's progress total)."""
    return await blobs.run(_count(""), write=False)


async def copy_store(
    src: BlobStore,
    dst: BlobStore,
    *,
    prune: bool = False,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every blob of ``src`` into ``dst``; ``progress(n)`` after each page."""
    report = CopyReport()
    after: str | None = None
    while True:
        page = await src.run(_page(after), write=False)
        # The destination's blobs in the same key range, to skip equal ones
        # and find keys the source lacks.
        end = page[-1].key + "\0" if len(page) == PAGE else None
        theirs = await dst.run(_range(after, end), write=False)
        mine = {entry.key: entry.data for entry in page}
        changed = [entry for entry in page if theirs.get(entry.key) != entry.data]
        await _apply(dst, _write_all, changed)
        extra = [key for key in theirs if key not in mine]
        report.extra_in_destination += len(extra)
        if prune and extra:  # one batch, one request per 1,000 keys on object storage
            await dst.run(delete_many(extra), write=True)
            report.pruned += len(extra)
        report.source_blobs += len(page)
        report.written += len(changed)
        report.unchanged += len(page) - len(changed)
        report.bytes_written += sum(len(entry.data) for entry in changed)
        if progress is not None:
            progress(len(page))
        if len(page) < PAGE:
            return report
        after = page[-1].key


def _range(after: str | None, end_before: str | None) -> Program[dict[str, bytes]]:
    """Every blob of the destination strictly between ``after`` and ``end_before``."""
    found: dict[str, bytes] = {}
    while True:
        batch = yield from scan("", start_after=after, end_before=end_before, limit=PAGE)
        found.update((entry.key, entry.data) for entry in batch)
        if len(batch) < PAGE:
            return found
        after = batch[-1].key
