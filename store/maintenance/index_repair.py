"""The recency indexes, checked against the conversations and rebuilt.

Each index entry is judged against its conversation's meta (the source of
truth); a check reports entries that should not exist and entries that are
missing, a rebuild creates the missing ones and deletes the others. Both walk
the store in bounded batches (:mod:`makers_store.maintenance.inventory`). The public way
in is :class:`makers_store.maintenance.admin.StoreAdmin` (``store.admin``).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from .._core import keys, paging, validate
from .._core.codec import ConversationRecord, live_record
from .._core.programs import entry_is_current, index_keys, load_meta, load_meta_at
from .._core.runner import UnitRunner
from ..blob_ops import Op, Program, delete, get, list_keys, put
from ..models import fields_dict
from .inventory import KEY_BATCH, Found, conversation_pages


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One raw index entry and whether it agrees with its conversation's meta."""

    key: str
    user_id: str | None
    last_message_at: int | None  # None when the key is malformed
    conversation_id: str | None
    current: bool
    reason: str = ""  # why the entry is not current
    owed: bool = False  # superseded, and meta owes its (batched) deletion

    def to_dict(self) -> dict[str, Any]:
        index = "all" if self.user_id is None else "user"  # which index: derived, shown second
        return {"key": self.key, "index": index, **fields_dict(self, leave_out=("key",))}


def _judge(key: str, metas: dict[str, ConversationRecord | None]) -> Generator[Op, Any, IndexEntry]:
    parsed = keys.parse_any_index_key(key)
    if parsed is None:
        return IndexEntry(key, None, None, None, False, "not a valid index key")
    prefix, user_segment, position, segment = parsed
    at = position[0]
    if segment not in metas:
        metas[segment] = (yield from load_meta_at(keys.meta_key_of_segment(segment)))[0]
    record = metas[segment]
    cid, uid = _ids(segment, user_segment, record)
    if entry_is_current(key, prefix, user_segment, record):
        return IndexEntry(key, uid, at, cid, True)
    if record is None:
        reason = "the conversation does not exist"
    elif not record.live:
        reason = "the conversation is being deleted"
    elif position in record.superseded_at:
        reason = "superseded; meta owes its deletion (batched)"
        return IndexEntry(key, uid, at, cid, False, reason, owed=True)
    elif at != keys.clamp_time(record.last_message_at):
        reason = f"rank {at} but last_message_at is {record.last_message_at}"
    elif position[1] != record.last_tie:
        reason = f"tie {position[1]} but the last write's is {record.last_tie}"
    else:
        reason = f"user {uid!r} is not among the conversation's users"
    return IndexEntry(key, uid, at, cid, False, reason)


def _ids(
    segment: str, user_segment: str | None, record: ConversationRecord | None
) -> tuple[str, str | None]:
    """The conversation and user ids an entry's segments name, as far as they
    can be read (a bounded one from meta, else it is shown as the segment)."""
    cid = record.conversation_id if record is not None else keys.id_of_segment(segment)
    uid = None if user_segment is None else keys.id_of_segment(user_segment)
    if user_segment is not None and uid is None and record is not None:
        uid = next((u for u in record.user_ids if keys.id_segment(u) == user_segment), None)
    return (segment if cid is None else cid), (user_segment if uid is None else uid)


def _entry_page(prefix: str, start_after: str | None) -> Program[list[IndexEntry]]:
    batch = yield from list_keys(prefix, start_after=start_after, limit=KEY_BATCH)
    metas: dict[str, ConversationRecord | None] = {}
    entries = []
    for info in batch:
        entries.append((yield from _judge(info.key, metas)))
    return entries


def _index_prefixes(user_id: str | None) -> list[str]:
    if user_id is None:
        return [keys.INDEX_ALL, keys.INDEX_USERS]
    return [keys.user_index_prefix(user_id)]


async def _read_entries(
    runner: UnitRunner, prefix: str, start_after: str | None
) -> tuple[list[IndexEntry], str | None]:
    page = await runner.run(lambda: _entry_page(prefix, start_after), write=False)
    return page, paging.after_full(page, KEY_BATCH, lambda entry: entry.key)


async def iter_index_entries(
    runner: UnitRunner, *, user_id: str | None = None
) -> AsyncIterator[IndexEntry]:
    """Every raw index entry (the recency index, then the per-user ones),
    or only ``user_id``'s, each judged against its conversation's meta."""
    for prefix in _index_prefixes(validate.optional_user_id(user_id)):
        async for entry in paging.items(functools.partial(_read_entries, runner, prefix)):
            yield entry


@dataclass(frozen=True, slots=True)
class IndexDrift:
    """An index entry that should not exist (stale) or one that is missing."""

    kind: str  # "stale" | "missing"
    key: str
    conversation_id: str | None
    user_id: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


#: the names of IndexCheck's fields in its ``to_dict()`` (what the counts count)
_CHECK_KEYS = {
    "entries": "entries_checked",
    "conversations": "conversations_checked",
    "owed": "owed_deletions",
}


@dataclass(slots=True)
class IndexCheck:
    entries: int = 0
    conversations: int = 0
    owed: int = 0  # superseded entries awaiting their batched deletion: not drift
    drift: list[IndexDrift] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drift

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, **fields_dict(self, nested=("drift",), keys=_CHECK_KEYS)}


def _missing_entries(found: list[Found]) -> Program[list[IndexDrift]]:
    missing = []
    for cid, found_record in found:
        if (record := live_record(found_record)) is None:
            continue
        for key in index_keys(cid, record):
            if (yield from get(key)) is None:
                parsed = keys.parse_any_index_key(key)
                uid = _ids(parsed[3], parsed[1], record)[1] if parsed else None
                reason = "the conversation's meta implies it but it is absent"
                missing.append(IndexDrift("missing", key, cid, uid, reason))
    return missing


async def check_indexes(runner: UnitRunner) -> IndexCheck:
    """Compare every index entry with the conversations' metas, and every
    meta with the entries it implies; ``.ok`` when nothing drifted.
    Read-only."""
    report = IndexCheck()
    async for entry in iter_index_entries(runner):
        report.entries += 1
        if entry.owed:
            report.owed += 1
        elif not entry.current:
            report.drift.append(
                IndexDrift("stale", entry.key, entry.conversation_id, entry.user_id, entry.reason)
            )
    async for page in conversation_pages(runner):
        report.conversations += sum(1 for _, record in page if live_record(record))
        missing = functools.partial(_missing_entries, page)
        report.drift.extend(await runner.run(missing, write=False))
    return report


@dataclass(frozen=True, slots=True)
class RebuildSummary:
    conversations: int
    created: int
    removed: int

    def to_dict(self) -> dict[str, int]:
        return fields_dict(self)


def _create_entries(cids: list[str]) -> Program[tuple[int, int]]:
    """Write the missing entries of each live conversation; (live, created)."""
    live = created = 0
    for cid in cids:
        if (record := live_record((yield from load_meta(cid))[0])) is None:
            continue
        live += 1
        for key in index_keys(cid, record):
            if (yield from get(key)) is None:
                yield from put(key, b"")
                created += 1
    return live, created


def _remove_stale(prefix: str, start_after: str | None) -> Program[tuple[int, str | None]]:
    """Delete the entries of one listing batch that are not current; returns
    (removed, position to continue from or None)."""
    batch = yield from list_keys(prefix, start_after=start_after, limit=KEY_BATCH)
    metas: dict[str, ConversationRecord | None] = {}
    removed = 0
    for info in batch:
        entry = yield from _judge(info.key, metas)
        if not entry.current:
            removed += yield from delete(info.key)
    return removed, (batch[-1].key if len(batch) == KEY_BATCH else None)


async def _remove_page(
    runner: UnitRunner, prefix: str, start_after: str | None
) -> tuple[int, str | None]:
    return await runner.run(lambda: _remove_stale(prefix, start_after), write=True)


async def rebuild_indexes(
    runner: UnitRunner, *, on_conversation: Callable[[int], None] | None = None
) -> RebuildSummary:
    """Recreate every index entry from the conversations' metas, then
    delete the entries that are not current. ``on_conversation(n)``
    reports progress after each batch of ``n`` conversations."""
    live = created = removed = 0
    async for page in conversation_pages(runner, with_meta=False):
        create = functools.partial(_create_entries, [cid for cid, _ in page])
        done, made = await runner.run(create, write=True)
        live, created = live + done, created + made
        if on_conversation is not None:
            on_conversation(len(page))
    for prefix in _index_prefixes(None):
        async for gone in paging.pages(functools.partial(_remove_page, runner, prefix)):
            removed += gone
    return RebuildSummary(live, created, removed)
