"""Copy a whole store between backends (``makers-store copy``).

Conversations are copied one at a time, each as an export of that
conversation imported into the destination: the destination's conversation
is *replaced* in one unit of work (:mod:`makers_store.maintenance.replacing`), so while a
copy runs, fails or is killed, every conversation in the destination reads as
it was or as in the source, never a mix, on every backend. A conversation
whose export is already equal in the destination is not written, so a second
run writes nothing and an interrupted run is finished by running it again.
Blobs outside conversations (the LangGraph store, Claude session listings)
are copied blob by blob where the destination's bytes differ. The recency
index is derived: each replaced conversation's entries are the
destination's own, as are all etags and generation names.

Copy a store nobody is writing to: data written to the source during a copy
may or may not be carried over. Conversations and blobs that exist only in
the destination are left alone and counted, or deleted with ``prune=True``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import tempfile
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .._core import adapter_keys, keys, paging
from .._core.codec import ConversationRecord, dumps_line, live_record
from .._core.programs import delete_conversation
from .._core.runner import UnitRunner
from ..blob_ops import Entry, Op, Program, delete, delete_many, each_batch, put, scan
from ..errors import MemoryValidationError
from ..models import fields_dict
from .exporting import FORMAT, OUTSIDE_RANGES, VERSION, TransferCounts, export_conversation
from .importing import import_jsonl
from .inventory import count_conversations, iter_conversations

if TYPE_CHECKING:
    from ..api.conversation_store import ConversationStore

PAGE = 500
#: concurrent units per page on backends that step one request at a time
PARALLEL_CHUNKS = 8
#: a conversation's export is kept in memory up to this size, then on disk
SPOOL_BYTES = 8 * 1024 * 1024
_HEADER = dumps_line({"type": "header", "format": FORMAT, "version": VERSION}) + "\n"


@dataclass(slots=True)
class CopyReport:
    """What a copy did: conversations, blobs outside them, bytes of what was written."""

    conversations: int = 0
    conversations_written: int = 0
    conversations_unchanged: int = 0
    blobs: int = 0
    blobs_written: int = 0
    blobs_unchanged: int = 0
    bytes_written: int = 0
    extra_conversations: int = 0
    extra_blobs: int = 0
    pruned_conversations: int = 0
    pruned_blobs: int = 0
    #: whether LangGraph store blobs changed (its index is then rebuilt on next use)
    langgraph_store_written: bool = False

    def to_dict(self) -> dict[str, int]:
        return fields_dict(self, leave_out=("langgraph_store_written",))


# --- conversations ------------------------------------------------------------------


class _Export:
    """One conversation's export lines: their digest and size and, with
    ``keep``, the lines themselves, in memory up to SPOOL_BYTES and then in a
    temporary file; :meth:`lines` can be read several times at once (the
    importer reads a conversation again when its unit is retried)."""

    def __init__(self, keep: bool) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self._keep = keep
        self._memory: list[bytes] = []
        self._file: IO[bytes] | None = None
        self.write(_HEADER)

    def write(self, line: str) -> None:
        data = line.encode("utf-8")
        self.digest.update(data)
        self.size += len(data)
        if not self._keep:
            return
        if self._file is None and self.size > SPOOL_BYTES:
            self._file = tempfile.NamedTemporaryFile(prefix="makers-store-copy-")
            self._file.writelines(self._memory)
            self._memory = []
        if self._file is not None:
            self._file.write(data)
        else:
            self._memory.append(data)

    def lines(self) -> Iterator[bytes]:
        if self._file is None:
            yield from list(self._memory)
            return
        self._file.flush()
        with open(self._file.name, "rb") as handle:
            yield from handle

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


async def _export(
    runner: UnitRunner, cid: str, record: ConversationRecord | None, *, keep: bool
) -> _Export:
    out = _Export(keep)
    live = live_record(record)

    def emit(line: dict[str, Any]) -> None:
        out.write(dumps_line(line) + "\n")

    await export_conversation(runner, cid, live, emit, TransferCounts())
    return out


class _Destination:
    """The destination's conversations, walked in key order next to the source's."""

    def __init__(self, runner: UnitRunner) -> None:
        self._walk: AsyncIterator[tuple[str, ConversationRecord | None]] = aiter(
            iter_conversations(runner)
        )
        self._head: tuple[str, ConversationRecord | None] | None = None
        self._done = False

    async def _peek(self) -> tuple[str, ConversationRecord | None] | None:
        if self._head is None and not self._done:
            self._head = await anext(self._walk, None)
            self._done = self._head is None
        return self._head

    async def before(self, cid: str | None) -> AsyncIterator[str]:
        """The destination's conversations that sort before ``cid`` (all if None)."""
        while (head := await self._peek()) is not None and (
            cid is None or keys.conversation_prefix(head[0]) < keys.conversation_prefix(cid)
        ):
            self._head = None
            yield head[0]

    async def take(self, cid: str) -> tuple[bool, ConversationRecord | None]:
        """(whether the destination holds ``cid``, its meta)."""
        head = await self._peek()
        if head is None or head[0] != cid:
            return False, None
        self._head = None
        return True, head[1]


async def _copy_conversation(
    src: UnitRunner,
    dst: UnitRunner,
    cid: str,
    record: ConversationRecord | None,
    theirs: tuple[bool, ConversationRecord | None],
    report: CopyReport,
) -> None:
    mine = await _export(src, cid, record, keep=True)
    try:
        held, their_record = theirs
        if held and (live_record(their_record) is None) == (live_record(record) is None):
            same = await _export(dst, cid, their_record, keep=False)
            if same.digest.digest() == mine.digest.digest():
                report.conversations_unchanged += 1
                return
        await import_jsonl(dst, mine.lines)
        report.conversations_written += 1
        report.bytes_written += mine.size
    finally:
        mine.close()


async def _drop(dst: UnitRunner, cid: str, prune: bool, report: CopyReport) -> None:
    report.extra_conversations += 1
    if prune:
        await dst.run(lambda: delete_conversation(cid), write=True)
        report.pruned_conversations += 1


async def _copy_conversations(
    src: UnitRunner,
    dst: UnitRunner,
    report: CopyReport,
    *,
    prune: bool,
    progress: Callable[[int], None] | None,
) -> None:
    theirs = _Destination(dst)
    async for cid, record in iter_conversations(src):
        if record is not None and not record.live:
            continue  # being deleted in the source: as if gone
        async for extra in theirs.before(cid):
            await _drop(dst, extra, prune, report)
        report.conversations += 1
        held = await theirs.take(cid)
        await _copy_conversation(src, dst, cid, record, held, report)
        if progress is not None:
            progress(1)
    async for extra in theirs.before(None):
        await _drop(dst, extra, prune, report)


# --- blobs outside conversations -----------------------------------------------------


def _count(start_after: str | None, end_before: str | None) -> Program[int]:
    sizes: list[int] = []
    yield from each_batch(
        "",
        lambda batch: sizes.append(len(batch)),
        size=1000,
        start_after=start_after,
        end_before=end_before,
    )
    return sum(sizes)


def _page(start_after: str | None, end_before: str | None) -> Program[list[Entry]]:
    return (yield from scan("", start_after=start_after, end_before=end_before, limit=PAGE))


def _range(start_after: str | None, end_before: str | None) -> Program[dict[str, bytes]]:
    """Every blob strictly between ``start_after`` and ``end_before``."""
    found: dict[str, bytes] = {}
    yield from each_batch(
        "",
        lambda batch: found.update((entry.key, entry.data) for entry in batch),
        size=PAGE,
        start_after=start_after,
        end_before=end_before,
        values=True,
    )
    return found


def _write_all(entries: list[Entry]) -> Generator[Op, Any, None]:
    for entry in entries:
        yield from put(entry.key, entry.data)


async def _apply(dst: UnitRunner, entries: list[Entry]) -> None:
    """One unit on a transactional destination; concurrent chunks on object storage."""
    if not entries:
        return
    if dst.blobs.capabilities.atomic:
        await dst.run(lambda: _write_all(entries), write=True)
        return
    size = -(-len(entries) // PARALLEL_CHUNKS)
    chunks = [entries[i : i + size] for i in range(0, len(entries), size)]
    # partial, not a lambda: each unit must keep its own chunk
    units = [functools.partial(_write_all, chunk) for chunk in chunks]
    await asyncio.gather(*(dst.run(unit, write=True) for unit in units))


async def _copy_range(
    src: UnitRunner,
    dst: UnitRunner,
    start: str | None,
    end: str | None,
    report: CopyReport,
    *,
    prune: bool,
    progress: Callable[[int], None] | None,
) -> None:
    async def read(after: str | None) -> tuple[tuple[str | None, list[Entry]], str | None]:
        """A page of the source's blobs, with the key it starts after."""
        page = await src.run(lambda: _page(after, end), write=False)
        return (after, page), paging.after_full(page, PAGE, lambda entry: entry.key)

    async for after, page in paging.pages(read, start):
        # The destination's blobs in the same key range, to skip equal ones
        # and find keys the source lacks.
        upto = page[-1].key + "\0" if len(page) == PAGE else end
        theirs = await dst.run(functools.partial(_range, after, upto), write=False)
        mine = {entry.key for entry in page}
        changed = [entry for entry in page if theirs.get(entry.key) != entry.data]
        await _apply(dst, changed)
        extra = [key for key in theirs if key not in mine]
        report.extra_blobs += len(extra)
        if prune and extra:  # one batch, one request per 1,000 keys on object storage
            await dst.run(functools.partial(delete_many, extra), write=True)
            report.pruned_blobs += len(extra)
        report.blobs += len(page)
        report.blobs_written += len(changed)
        report.blobs_unchanged += len(page) - len(changed)
        report.bytes_written += sum(len(entry.data) for entry in changed)
        report.langgraph_store_written |= any(
            adapter_keys.is_langgraph_store_key(key)
            for key in [entry.key for entry in changed] + (extra if prune else [])
        )
        if progress is not None:
            progress(len(page))


# --- the copy -------------------------------------------------------------------------


async def count_units(runner: UnitRunner) -> int:
    """How many conversations and blobs outside them the store holds: the
    progress total of :meth:`copy_to`."""
    outside = 0
    for start, end in OUTSIDE_RANGES:
        outside += await runner.run(functools.partial(_count, start, end), write=False)
    return await count_conversations(runner) + outside


async def copy_to(
    runner: UnitRunner,
    destination: ConversationStore,
    *,
    prune: bool = False,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every conversation and every blob outside them into
    ``destination`` (another store, on any backend). Each conversation
    there is replaced at once; conversations already equal are not
    written again, so a second run writes nothing. ``prune=True`` deletes
    what exists only in the destination. ``progress(n)`` runs after each
    conversation and page of blobs. Copy a store nobody is writing to. In
    blocking code both stores share one :class:`~makers_store.Portal`
    (the copy uses the destination from the source's event loop). The
    destination's writes run through its own runner: its clock, ids and
    retry policy hold there."""
    target = destination.runner
    if target.blobs is runner.blobs:
        raise MemoryValidationError("destination is this store: copy_to needs another one")
    return await copy_store(runner, target, prune=prune, progress=progress)


async def copy_store(
    src: UnitRunner,
    dst: UnitRunner,
    *,
    prune: bool = False,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every conversation and every blob outside them from ``src``'s store
    into ``dst``'s; ``progress(n)`` after each conversation and page of blobs.
    Each side's units run through its own runner, so the destination's ids
    name its new generations and its retry policy reruns a unit that lost a
    race there."""
    report = CopyReport()
    await _copy_conversations(src, dst, report, prune=prune, progress=progress)
    for start, end in OUTSIDE_RANGES:
        await _copy_range(src, dst, start, end, report, prune=prune, progress=progress)
    if report.langgraph_store_written:  # items blob by blob: the next use reindexes
        reindex = functools.partial(delete, adapter_keys.LANGGRAPH_INDEX_VERSION, quiet=True)
        await dst.run(reindex, write=True)
    return report
