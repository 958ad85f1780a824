"""What a store holds: its conversations, enumerated and counted.

The work is done by I/O-free programs over the blob operations (as in
:mod:`makers_store._core.programs`); the async functions here run them in bounded
batches, so a store of any size is walked with bounded memory and no unit of
work grows with the store. Conversations are enumerated by skip-scanning the
``c/`` prefix: list one key, then jump past that conversation's prefix.
Every unit runs through the store's :class:`~makers_store._core.runner.UnitRunner`
(which brings the store to the current layout first). The public way in is
:class:`makers_store.maintenance.admin.StoreAdmin` (``store.admin``).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from typing import Any

from .._core import adapter_keys, keys, names, paging, validate
from .._core.codec import ConversationRecord
from .._core.programs import load_meta_at, visible_meta
from .._core.runner import UnitRunner
from ..blob_ops import Blob, BlobInfo, Op, Program, each_batch, get, list_keys, prefix_end
from ..errors import MemoryValidationError
from ..models import fields_dict

#: Conversations per unit of work when walking the store.
CONVERSATION_BATCH = 100
#: Keys per listing when walking a prefix.
KEY_BATCH = 500
#: Keys per listing request of :func:`list_blobs`.
BLOB_PAGE = 500

Found = tuple[str, ConversationRecord | None]


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


def conversation_pages(runner: UnitRunner, *, with_meta: bool = True) -> AsyncIterator[list[Found]]:
    """Every conversation id owning data, with its stored meta (possibly None,
    possibly marked deleting), in batches of ``CONVERSATION_BATCH``, one per
    unit of work."""

    async def read(position: str | None) -> tuple[list[Found], str | None]:
        return await runner.run(
            lambda: conversation_page(position, CONVERSATION_BATCH, with_meta=with_meta),
            write=False,
        )

    return paging.pages(read)


async def iter_conversations(
    runner: UnitRunner, *, with_meta: bool = True
) -> AsyncIterator[tuple[str, ConversationRecord | None]]:
    """The conversations of :func:`conversation_pages`, one by one."""
    async for page in conversation_pages(runner, with_meta=with_meta):
        for item in page:
            yield item


async def count_conversations(runner: UnitRunner) -> int:
    """How many conversation ids own data (a cheap walk: no meta is read);
    the progress total of :meth:`rebuild_index` and :meth:`export_jsonl`."""
    count = 0
    async for _ in iter_conversations(runner, with_meta=False):
        count += 1
    return count


def count_keys(prefix: str, *, start_after: str | None = None) -> Generator[Op, Any, int]:
    sizes: list[int] = []
    yield from each_batch(
        prefix, lambda batch: sizes.append(len(batch)), size=KEY_BATCH, start_after=start_after
    )
    return sum(sizes)


# --- counts -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreCounts:
    conversations: int
    messages: int
    state_entries: int
    index_entries: int
    #: user ids with a per-user index (each ``user_id`` appends were made with)
    users: int = 0
    #: blobs the framework adapters keep (LangGraph checkpoints and writes,
    #: Claude transcripts, LangGraph store items) under conversation ids
    adapter_blobs: int = 0

    def to_dict(self) -> dict[str, int]:
        return fields_dict(self)


def _owned_counts(
    conversations: list[tuple[str, ConversationRecord | None]],
) -> Program[tuple[int, int]]:
    """(state entries, adapter blobs) of ``conversations``."""
    state = adapter = 0
    for cid, record in conversations:
        gen = "" if record is None else record.generation
        state += yield from count_keys(keys.state_prefix(cid, gen))
        adapter += yield from count_keys(keys.adapters_prefix(cid))
    return state, adapter


def user_page(start_after: str | None, limit: int) -> Program[tuple[list[str], str | None]]:
    """Up to ``limit`` user ids with a per-user index (``i/u/{user}/``), in key
    order, after the position ``start_after``: one listing per user (skip-scan);
    returns them and the position to continue from (None when the walk is
    over). A bounded user id is read from the meta of the conversation its
    first entry names."""
    found: list[str] = []
    position = start_after
    while len(found) < limit:
        batch = yield from list_keys(keys.INDEX_USERS, start_after=position, limit=1)
        if not batch:
            return found, None
        key = batch[0].key
        segment = key[len(keys.INDEX_USERS) :].split("/", 1)[0]
        uid = keys.id_of_segment(segment)
        parsed = keys.parse_any_index_key(key) if uid is None else None
        if parsed is not None:
            record = (yield from load_meta_at(keys.meta_key_of_segment(parsed[3])))[0]
            users = record.user_ids if record is not None else ()
            uid = next((u for u in users if keys.id_segment(u) == segment), None)
        found.append(segment if uid is None else uid)
        position = prefix_end(f"{keys.INDEX_USERS}{segment}/")  # never None: ends with "/"
    return found, position


async def iter_user_ids(runner: UnitRunner) -> AsyncIterator[str]:
    """Every user id the store has a per-user index of (the ``user_id`` of
    appends), in key order: one listing per user, in bounded units of
    work. ``list_conversations(user_id=...)`` lists each one's conversations."""
    # CONVERSATION_BATCH users per unit of work.

    async def read(position: str | None) -> tuple[list[str], str | None]:
        return await runner.run(lambda: user_page(position, CONVERSATION_BATCH), write=False)

    async for uid in paging.items(read):
        yield uid


def _index_count() -> Program[int]:
    return (yield from count_keys(keys.INDEX_ALL)) + (yield from count_keys(keys.INDEX_USERS))


async def store_counts(runner: UnitRunner) -> StoreCounts:
    """Live conversations, their messages, state entries and index
    entries, the users (ids with a per-user index) and the blobs the
    framework adapters keep."""
    conversations = messages = state_entries = adapter_blobs = 0
    pending: list[tuple[str, ConversationRecord | None]] = []
    async for cid, record in iter_conversations(runner):
        if record is not None and not record.live:
            continue
        if record is not None:
            conversations += 1
            messages += record.message_count
        pending.append((cid, record))
        if len(pending) == CONVERSATION_BATCH:
            count = functools.partial(_owned_counts, pending)
            state, adapter = await runner.run(count, write=False)
            state_entries, adapter_blobs = state_entries + state, adapter_blobs + adapter
            pending = []
    if pending:
        state, adapter = await runner.run(lambda: _owned_counts(pending), write=False)
        state_entries, adapter_blobs = state_entries + state, adapter_blobs + adapter
    index_entries = await runner.run(_index_count, write=False)
    users = 0
    async for _ in iter_user_ids(runner):
        users += 1
    return StoreCounts(conversations, messages, state_entries, index_entries, users, adapter_blobs)


# --- conversations that hold only state ------------------------------------


@dataclass(frozen=True, slots=True)
class StateOnlyConversation:
    """A conversation id that owns state entries but no meta: ``state.set``
    on a conversation nobody appended to. No recency index lists it (entries
    are made by appends and metadata updates), so ``list_conversations``
    never returns it; :meth:`StoreAdmin.iter_state_only_conversations` finds it."""

    conversation_id: str
    state_entries: int

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


def _state_only(found: list[Found]) -> Program[list[StateOnlyConversation]]:
    """Of ``found``, those without meta that own state, with their entry count
    (one listing per candidate; a conversation with meta costs nothing more)."""
    out: list[StateOnlyConversation] = []
    for cid, record in found:
        if record is not None:
            continue
        entries = yield from count_keys(keys.state_prefix(cid))
        if entries:
            out.append(StateOnlyConversation(cid, entries))
    return out


async def iter_state_only(runner: UnitRunner) -> AsyncIterator[StateOnlyConversation]:
    """The conversations that hold state and no meta (``state.set`` with
    no message ever appended), with how many state entries each holds.
    No recency index lists them, so this walks the store's conversation
    ids (one listing per conversation, in bounded units of work; never
    one per key): a maintenance read, not a per-request one."""
    # The walk is the skip-scan of conversation_pages (one listing per
    # conversation, never one per message or state entry), in bounded units.
    async for page in conversation_pages(runner):
        for item in await runner.run(functools.partial(_state_only, page), write=False):
            yield item


# --- a conversation's LangGraph checkpoints ---------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointName:
    """One LangGraph checkpoint of a conversation's thread: its namespace
    (``""`` for the root graph) and id."""

    checkpoint_ns: str
    checkpoint_id: str

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


def _checkpoint_names(cid: str) -> Program[list[CheckpointName]]:
    prefix = adapter_keys.langgraph_prefix(cid)
    found: list[CheckpointName] = []

    def take(batch: list[BlobInfo]) -> None:
        for info in batch:
            parts = info.key[len(prefix) :].split("/")
            if len(parts) == 3 and parts[1] == "c" and parts[0].startswith("n"):
                found.append(
                    CheckpointName(
                        adapter_keys.langgraph_ns_of_segment(parts[0]),
                        adapter_keys.restore_checkpoint_id(parts[2]),
                    )
                )

    yield from each_batch(prefix, take, size=KEY_BATCH)
    return found


async def checkpoint_names(runner: UnitRunner, conversation_id: str) -> list[CheckpointName]:
    """The names (namespace and id) of the LangGraph checkpoints of the
    conversation's thread, newest first within each namespace; read from
    the keys, so without LangGraph installed (``conv show`` names them)."""
    cid = validate.conversation_id(conversation_id)
    return await runner.run(lambda: _checkpoint_names(cid), write=False)


async def conversation_users(runner: UnitRunner, conversation_id: str) -> list[str] | None:
    """The user ids whose index lists the conversation (the ``user_id`` of
    its appends), or None when it does not exist. Not a field of
    ConversationMeta, whose fields are the platform's."""
    cid = validate.conversation_id(conversation_id)
    record = await runner.run(lambda: visible_meta(cid), write=False)
    return None if record is None else list(record.user_ids)


# --- raw blobs ------------------------------------------------------------


async def list_blobs(
    runner: UnitRunner,
    prefix: str = "",
    *,
    start_after: str | None = None,
    limit: int | None = None,
) -> AsyncIterator[BlobInfo]:
    """The raw blobs under ``prefix`` in key order (key, size, etag,
    updated time), after the key ``start_after``, at most ``limit``:
    what ``makers-store blob ls`` shows. Listed in pages of 500 keys."""
    if not isinstance(prefix, str):
        raise MemoryValidationError(f"prefix must be a string, not {type(prefix).__name__}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise MemoryValidationError(f"limit must be an int or None, got {limit!r}")
    if limit is not None and limit < 1:
        raise MemoryValidationError(f"limit must be at least 1, got {limit}")
    shown = 0

    async def read(after: str | None) -> tuple[list[BlobInfo], str | None]:
        nonlocal shown
        size = BLOB_PAGE if limit is None else min(BLOB_PAGE, limit - shown)
        page = await runner.run(
            lambda: list_keys(prefix, start_after=after, limit=size), write=False
        )
        shown += len(page)
        if limit is not None and shown >= limit:
            return page, None
        return page, paging.after_full(page, size, lambda info: info.key)

    async for info in paging.items(read, start_after):
        yield info


async def get_blob(runner: UnitRunner, key: str) -> Blob | None:
    """The raw blob under ``key`` (its value and info), or None: what
    ``makers-store blob get`` shows."""
    if not isinstance(key, str) or not key:
        raise MemoryValidationError(f"key must be a non-empty string, got {key!r}")
    return await runner.run(lambda: get(key), write=False)
