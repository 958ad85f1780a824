"""Maintenance over the stored data: counts, index inspection and repair,
reading one message.

The work is done by I/O-free programs over the blob operations (as in
:mod:`makers_store.programs`); the async functions here run them in bounded
batches, so a store of any size is walked with bounded memory and no unit of
work grows with the store. Conversations are enumerated by skip-scanning the
``c/`` prefix: list one key, then jump past that conversation's prefix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from . import keys, names
from .blob import BlobStore, Op, Program, delete, get, list_keys, prefix_end, put
from .codec import ConversationRecord, decode_message
from .layout import ensure_layout
from .models import Message
from .programs import entry_is_current, index_keys, load_meta, load_meta_at, visible_meta

#: Conversations per unit of work when walking the store.
CONVERSATION_BATCH = 100
#: Keys per listing when walking a prefix.
KEY_BATCH = 500

Found = tuple[str, ConversationRecord | None]


def is_live(record: ConversationRecord | None) -> bool:
    return record is not None and not record.deleting


# --- enumerating conversations --------------------------------------------


def conversation_page(
    start_after: str | None, limit: int, *, with_meta: bool = True
) -> Program[tuple[list[Found], str | None]]:
    """Up to ``limit`` conversations (every id owning a key under ``c/``,
    with or without meta) after the position ``start_after``; returns them
    and the position to continue from (None when the walk is over)."""
    found: list[Found] = []
    position = start_after
    while len(found) < limit:
        batch = yield from list_keys(keys.CONVERSATIONS, start_after=position, limit=1)
        if not batch:
            return found, None
        segment = keys.conversation_segment(batch[0].key)
        record = None
        if with_meta or keys.is_bounded(segment):  # a bounded id: meta holds it
            record = (yield from load_meta_at(keys.meta_key_of_segment(segment)))[0]
        found.append(((yield from names.conversation_id(segment, record)), record))
        position = prefix_end(f"{keys.CONVERSATIONS}{segment}/")  # never None: ends with "/"
    return found, position


async def iter_conversations(
    blobs: BlobStore, *, with_meta: bool = True
) -> AsyncIterator[tuple[str, ConversationRecord | None]]:
    """Every conversation id owning data, with its stored meta (possibly None,
    possibly marked deleting), one batch per unit of work."""
    await ensure_layout(blobs)
    position: str | None = None
    while True:
        page, position = await blobs.run(
            conversation_page(position, CONVERSATION_BATCH, with_meta=with_meta), write=False
        )
        for item in page:
            yield item
        if position is None:
            return


async def count_conversations(blobs: BlobStore) -> int:
    """How many conversation ids own data (a cheap walk: no meta is read)."""
    count = 0
    async for _ in iter_conversations(blobs, with_meta=False):
        count += 1
    return count


def count_keys(prefix: str, *, start_after: str | None = None) -> Generator[Op, Any, int]:
    count = 0
    while True:
        batch = yield from list_keys(prefix, start_after=start_after, limit=KEY_BATCH)
        count += len(batch)
        if len(batch) < KEY_BATCH:
            return count
        start_after = batch[-1].key


# --- counts -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreCounts:
    conversations: int
    messages: int
    state_entries: int
    index_entries: int

    def to_dict(self) -> dict[str, int]:
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "state_entries": self.state_entries,
            "index_entries": self.index_entries,
        }


def _state_counts(conversations: list[tuple[str, ConversationRecord | None]]) -> Program[int]:
    total = 0
    for cid, record in conversations:
        gen = "" if record is None else record.generation
        total += yield from count_keys(keys.state_prefix(cid, gen))
    return total


def _index_count() -> Program[int]:
    return (yield from count_keys(keys.INDEX_ALL)) + (yield from count_keys(keys.INDEX_USERS))


async def store_counts(blobs: BlobStore) -> StoreCounts:
    """Live conversations, their messages, state entries and index entries."""
    conversations = messages = state_entries = 0
    pending: list[tuple[str, ConversationRecord | None]] = []
    async for cid, record in iter_conversations(blobs):
        if record is not None and record.deleting:
            continue
        if record is not None:
            conversations += 1
            messages += record.message_count
        pending.append((cid, record))
        if len(pending) == CONVERSATION_BATCH:
            state_entries += await blobs.run(_state_counts(pending), write=False)
            pending = []
    if pending:
        state_entries += await blobs.run(_state_counts(pending), write=False)
    index_entries = await blobs.run(_index_count(), write=False)
    return StoreCounts(conversations, messages, state_entries, index_entries)


# --- one message --------------------------------------------------------------


def _read_message(cid: str, message_id: str) -> Program[Message | None]:
    record = yield from visible_meta(cid)
    seq = keys.seq_of_message_id(message_id)
    if record is None or seq is None or not record.visible(seq):
        return None
    blob = yield from get(keys.message_key(cid, seq, record.generation))
    if blob is None:
        return None
    message = decode_message(blob.data)
    return message if message.message_id == message_id else None


async def read_message(blobs: BlobStore, conversation_id: str, message_id: str) -> Message | None:
    """One visible message of a conversation, or None."""
    await ensure_layout(blobs)
    return await blobs.run(_read_message(conversation_id, message_id), write=False)


async def conversation_users(blobs: BlobStore, conversation_id: str) -> list[str] | None:
    """The user ids whose index lists the conversation (``user_id`` of its
    appends), or None when it does not exist. Not part of ConversationMeta,
    whose fields are the platform's; ``conv show`` prints them."""
    await ensure_layout(blobs)
    record = await blobs.run(visible_meta(conversation_id), write=False)
    return None if record is None else list(record.user_ids)


# --- index entries --------------------------------------------------------


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
        return {
            "key": self.key,
            "index": "all" if self.user_id is None else "user",
            "user_id": self.user_id,
            "last_message_at": self.last_message_at,
            "conversation_id": self.conversation_id,
            "current": self.current,
            "reason": self.reason,
            "owed": self.owed,
        }


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
    elif record.deleting:
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


async def iter_index_entries(
    blobs: BlobStore, *, user_id: str | None = None
) -> AsyncIterator[IndexEntry]:
    """Every raw index entry (the recency index, then the per-user ones), or
    only ``user_id``'s, each judged against its conversation's meta."""
    await ensure_layout(blobs)
    for prefix in _index_prefixes(user_id):
        start_after: str | None = None
        while True:
            page = await blobs.run(_entry_page(prefix, start_after), write=False)
            for entry in page:
                yield entry
            if len(page) < KEY_BATCH:
                break
            start_after = page[-1].key


@dataclass(frozen=True, slots=True)
class IndexDrift:
    """An index entry that should not exist (stale) or one that is missing."""

    kind: str  # "stale" | "missing"
    key: str
    conversation_id: str | None
    user_id: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "conversation_id": self.conversation_id,
            "user_id": self.user_id,
            "reason": self.reason,
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
        return {
            "ok": self.ok,
            "entries_checked": self.entries,
            "conversations_checked": self.conversations,
            "owed_deletions": self.owed,
            "drift": [item.to_dict() for item in self.drift],
        }


def _missing_entries(found: list[Found]) -> Program[list[IndexDrift]]:
    missing = []
    for cid, record in found:
        if record is None or record.deleting:
            continue
        for key in index_keys(cid, record):
            if (yield from get(key)) is None:
                parsed = keys.parse_any_index_key(key)
                uid = _ids(parsed[3], parsed[1], record)[1] if parsed else None
                reason = "the conversation's meta implies it but it is absent"
                missing.append(IndexDrift("missing", key, cid, uid, reason))
    return missing


async def check_indexes(blobs: BlobStore) -> IndexCheck:
    """Compare every index entry with the metas, and every meta with the
    entries it implies."""
    report = IndexCheck()
    async for entry in iter_index_entries(blobs):
        report.entries += 1
        if entry.owed:
            report.owed += 1
        elif not entry.current:
            report.drift.append(
                IndexDrift("stale", entry.key, entry.conversation_id, entry.user_id, entry.reason)
            )
    position: str | None = None
    while True:
        program = conversation_page(position, CONVERSATION_BATCH)
        page, position = await blobs.run(program, write=False)
        report.conversations += sum(1 for _, record in page if is_live(record))
        report.drift.extend(await blobs.run(_missing_entries(page), write=False))
        if position is None:
            return report


@dataclass(frozen=True, slots=True)
class RebuildSummary:
    conversations: int
    created: int
    removed: int

    def to_dict(self) -> dict[str, int]:
        return {
            "conversations": self.conversations,
            "created": self.created,
            "removed": self.removed,
        }


def _create_entries(cids: list[str]) -> Program[tuple[int, int]]:
    """Write the missing entries of each live conversation; (live, created)."""
    live = created = 0
    for cid in cids:
        record, _ = yield from load_meta(cid)
        if record is None or record.deleting:
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


async def rebuild_indexes(
    blobs: BlobStore, *, on_conversation: Callable[[int], None] | None = None
) -> RebuildSummary:
    """Recreate every index entry from the conversations' metas, then delete
    the entries that are not current. ``on_conversation(n)`` reports progress
    after each batch of ``n`` conversations."""
    await ensure_layout(blobs, write=True)
    live = created = removed = 0
    position: str | None = None
    while True:
        page, position = await blobs.run(
            conversation_page(position, CONVERSATION_BATCH, with_meta=False), write=False
        )
        done, made = await blobs.run(_create_entries([cid for cid, _ in page]), write=True)
        live, created = live + done, created + made
        if on_conversation is not None:
            on_conversation(len(page))
        if position is None:
            break
    for prefix in _index_prefixes(None):
        start_after: str | None = None
        while True:
            gone, start_after = await blobs.run(_remove_stale(prefix, start_after), write=True)
            removed += gone
            if start_after is None:
                break
    return RebuildSummary(live, created, removed)
