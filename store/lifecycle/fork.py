"""Forking a conversation: ``store.fork_conversation(source_id, new_id, up_to=None)``.

A fork copies a conversation into a new id: its messages (all, or up to and
including ``up_to``) with their ids, seqs, times and order; the client ids'
alias blobs; its metadata, with ``forked_from`` added; its state; and its
LangGraph thread up to the fork. It is the whole-conversation replacement of
:mod:`makers_store.maintenance.replacing` (write a generation where no reader looks, then
swap the pointer), done one unit of work per page so that a conversation of
any length is copied in bounded memory, with the deletion intent of
:mod:`makers_store._core.programs` (meta marked ``deleting``) reserving the new id
meanwhile:

1. **Plan** (a read): the source's meta, where the cut is (``up_to``'s seq, or
   the last message's), and that the new id is free.
2. **Reserve** the new id: its meta is created (if-none-match) *marked
   deleting*, naming a fresh generation. Readers take such a conversation for
   absent (``get_conversation``, ``get_messages``, listings and counts show
   nothing) and any writer of that id finishes the "deletion" first
   (``load_live_meta``), so whatever a fork cut short leaves behind is
   removed by the next write to the id: a fork's retry, an append,
   ``delete_conversation``.
3. **Copy**, one unit per page: messages with seq up to the cut, byte for
   byte under the same seqs (so generated ids still name their place), then
   the client ids' alias blobs of those seqs, then state, into the
   generation; then the
   LangGraph thread (:func:`~makers_store._core.checkpoint_programs.copy_checkpoints`,
   oldest checkpoint first). Each unit first checks that the reservation is
   still this fork's (a writer of the new id ends the fork with
   MemoryConflictError).
4. **Commit**, one unit: the source is read again; the new meta (live, with
   ``forked_from``) and its index entries are written, meta last, with
   if-match on the reservation: the swap. So the new conversation appears
   whole at once, on every backend, or not at all.

A consistent prefix, and a live one. The cut is a seq fixed by the plan:
messages appended to the source while the fork runs get later seqs and are
never copied. Changes after the cut never restart the fork: the commit
reads the source's meta, and only when its count fell short of its appends
(a deletion somewhere) counts the messages up to the cut that it shows
now (one listing per 1,000 keys), which equals the number copied exactly
when none of them was deleted (each was copied while visible). A message up
to the cut deleted meanwhile (or the source cleared, replaced or deleted)
makes the fork start again from the plan, under the store's retry policy;
so the fork holds exactly the source's messages up to the cut at the moment
of its commit check, and a source that is appended to and deleted from
after the cut meanwhile is forked in about the time of a quiet one. An update is a message's own
write, invisible in meta: each message is copied as it was when its page was
read. State and metadata are read as they are when copied.

The LangGraph thread. ``up_to=None`` copies every checkpoint; with
``up_to``, the checkpoints made at or before that message's ``created_at``
(a LangGraph checkpoint id is a UUIDv6, which carries its time), each with
its pending writes, which holds the complete parent chain DeltaChannel needs.
Until the commit, the checkpointer already sees the copied checkpoints under
the new id on SQLite, PostgreSQL and memory (it reads no meta there); on
object storage it reads meta first and sees nothing while the id is
reserved. A fork cut short leaves them, hidden from the store's readers,
until the next write to the id removes them.

What is not copied: Claude transcripts (a session is its own UUID, not a
fork), links, OpenAI sessions' own items beyond the messages, the recency
index entries (derived: the fork gets its own).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from .._core import checkpoint_programs as checkpoints
from .._core import keys, names, paging, validate
from .._core.activity import stamp
from .._core.codec import ConversationRecord, encode_json, pending_append
from .._core.message_lookup import locate
from .._core.message_programs import message_range
from .._core.programs import (
    add_index_entries,
    delete_conversation,
    delete_range,
    index_keys,
    load_live_meta,
    load_meta,
    save_meta,
    visible_meta,
)
from .._core.runner import UnitRunner
from .._core.value_chunks import value_chunk
from ..blob import Capabilities
from ..blob_ops import BlobInfo, Op, Program, each_batch, get, list_keys, put, segments_under
from ..clock import IdSource
from ..errors import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    PreconditionFailedError,
)
from ..models import ConversationMeta

#: Checkpoints copied per unit of work (each may carry its pending writes).
CHECKPOINT_PAGE = 50
#: Message keys listed per request when the commit counts the source's messages.
_COUNT_PAGE = 1000
#: The metadata key a fork adds: ``{"conversation_id": ..., "message_id": ...}``.
FORKED_FROM = "forked_from"


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one attempt copies: the source as read, and where it is cut."""

    source: ConversationRecord
    cut: int  # the last seq copied; -1: no message
    message_id: str | None  # forked_from's message: up_to, or the last message
    last_message_at: int  # the fork's: the cut message's created_at
    until_ms: int | None  # checkpoints made at or before this; None: all
    metadata: dict[str, Any]


class _SourceChanged(Exception):
    """Messages up to the cut changed under the fork: plan again. Not a
    PreconditionFailedError, which would have the runner retry the commit
    unit alone: the whole fork starts again (:func:`fork_conversation`)."""


def _conflict(new_id: str) -> MemoryConflictError:
    return MemoryConflictError(f"new_id {new_id!r} already exists")


# --- programs -------------------------------------------------------------------


def _plan(source_id: str, new_id: str, up_to: str | None, caps: Capabilities) -> Program[_Plan]:
    record = yield from visible_meta(source_id)
    if record is None:
        raise MemoryNotFoundError(f"source_id {source_id!r} not found")
    if up_to is not None:
        found = yield from locate(source_id, record, up_to)
        if found is None:
            raise MemoryNotFoundError(
                f"up_to {up_to!r} is not a message of conversation {source_id!r}"
            )
        cut, blob = found
        message_id: str | None = up_to
        at = pending_append(blob.data)[1]
    else:
        last = yield from message_range(
            source_id, record, record.cleared_below, record.next_seq, 1, reverse=True, caps=caps
        )
        cut = keys.seq_from_message_key(last[0].key) if last else -1
        message_id, at = pending_append(last[0].data)[:2] if last else (None, record.created_at)
    metadata = {
        **record.metadata,
        FORKED_FROM: {"conversation_id": source_id, "message_id": message_id},
    }
    encode_json(
        metadata,
        argument="metadata (the source's, with forked_from)",
        max_bytes=validate.MAX_CONVERSATION_METADATA_BYTES,
    )
    yield from _check_free(new_id)
    until = None if up_to is None else at
    return _Plan(record, cut, message_id, at, until, metadata)


def _check_free(new_id: str) -> Generator[Op, Any, None]:
    """Raise MemoryConflictError unless ``new_id`` holds no conversation, no
    state and no adapter data (a conversation being deleted, or a fork cut
    short, counts as free: the reservation finishes it)."""
    blob = yield from get(keys.meta_key(new_id))
    if blob is not None:
        if ConversationRecord.decode(blob.data).live:
            raise _conflict(new_id)
        return
    if (yield from list_keys(keys.state_prefix(new_id), limit=1)):
        raise _conflict(new_id)
    adapters = set((yield from segments_under(keys.adapters_prefix(new_id))))
    if adapters - {"names"}:
        raise _conflict(new_id)


def _reserve(new_id: str, plan: _Plan, new_generation: IdSource) -> Program[tuple[str, str]]:
    """Create the new id's meta marked deleting, naming a fresh generation;
    returns (generation, the meta's etag)."""
    yield from _check_free(new_id)
    record, etag = yield from load_live_meta(new_id)  # finishes what a cut-short fork left
    if record is not None:
        raise _conflict(new_id)
    existing = set((yield from segments_under(keys.generations_prefix(new_id))))
    gen = new_generation()
    while gen in existing or not keys.is_generation(gen):
        gen = new_generation()
    source = plan.source
    pending = ConversationRecord(
        conversation_id=new_id,
        created_at=source.created_at,
        last_message_at=plan.last_message_at,
        deleting=True,
        generation=gen,
    )
    etag = yield from save_meta(new_id, pending, None)
    yield from names.remember(new_id)  # a bounded id's name, for its thread's keys
    return gen, etag


def _still_reserved(new_id: str, etag: str) -> Generator[Op, Any, None]:
    blob = yield from get(keys.meta_key(new_id))
    if blob is None or blob.etag != etag:
        raise MemoryConflictError(
            f"new_id {new_id!r} was written by another writer while the fork ran"
        )


def _copy_messages(
    source_id: str, new_id: str, plan: _Plan, gen: str, etag: str, after: int
) -> Program[tuple[int, int | None]]:
    """One page of messages with seqs in (after, cut] into generation ``gen``;
    returns (messages copied, the seq to continue after or None when done)."""
    yield from _still_reserved(new_id, etag)
    source_gen = plan.source.generation
    start = keys.message_key(source_id, after, source_gen) if after >= 0 else None
    end = keys.message_key(source_id, plan.cut + 1, source_gen)
    entries, last = yield from value_chunk(keys.messages_prefix(source_id, source_gen), start, end)
    copied = 0
    for entry in entries:
        seq = keys.seq_from_message_key(entry.key)
        if plan.source.visible(seq):  # not a deletion in flight when planned
            yield from put(keys.message_key(new_id, seq, gen), entry.data)
            copied += 1
    if last or not entries:
        return copied, None
    return copied, keys.seq_from_message_key(entries[-1].key)


def _copy_aliases(
    source_id: str, new_id: str, plan: _Plan, gen: str, etag: str, after: str | None
) -> Program[str | None]:
    """One page of the client ids' alias blobs of messages up to the cut
    (an alias only points at a seq: one that is stale there stays as
    harmless as in the source); returns the key to continue after, None when done."""
    yield from _still_reserved(new_id, etag)
    prefix = keys.aliases_prefix(source_id, plan.source.generation)
    entries, last = yield from value_chunk(prefix, after, None)
    target = keys.aliases_prefix(new_id, gen)
    for entry in entries:
        seq = keys.decode_alias(entry.data)
        if seq is not None and seq <= plan.cut and plan.source.visible(seq):
            yield from put(target + entry.key[len(prefix) :], entry.data)
    return None if last or not entries else entries[-1].key


def _copy_state(
    source_id: str, new_id: str, plan: _Plan, gen: str, etag: str, after: str | None
) -> Program[str | None]:
    """One page of state values into generation ``gen`` (with the names of
    bounded keys); returns the key to continue after, None when done."""
    yield from _still_reserved(new_id, etag)
    prefix = keys.state_prefix(source_id, plan.source.generation)
    entries, last = yield from value_chunk(prefix, after, None)
    owner, new_owner = keys.id_segment(source_id), keys.id_segment(new_id)
    for entry in entries:
        segment = keys.state_segment_of_key(entry.key)
        if keys.is_bounded(segment):
            name = yield from get(keys.name_key(owner, segment))
            if name is not None:
                yield from put(keys.name_key(new_owner, segment), name.data)
        yield from put(keys.state_prefix(new_id, gen) + segment, entry.data)
    return None if last or not entries else entries[-1].key


#: A unit that copies one page of keys (:func:`_copy_aliases`, :func:`_copy_state`).
CopyPage = Callable[[str, str, _Plan, str, str, str | None], Program[str | None]]


def _copy_checkpoints(
    source_id: str, new_id: str, plan: _Plan, etag: str, namespace: str, before: str | None
) -> Program[str | None]:
    yield from _still_reserved(new_id, etag)
    return (
        yield from checkpoints.copy_checkpoints(
            source_id, new_id, namespace, before, plan.until_ms, CHECKPOINT_PAGE
        )
    )


def _commit(
    source_id: str, new_id: str, plan: _Plan, gen: str, etag: str, copied: int, now: int
) -> Program[ConversationMeta]:
    """The swap: check the source's messages up to the cut are as planned,
    then write the new conversation's index entries and its live meta."""
    current = yield from visible_meta(source_id)
    before = plan.source
    if (
        current is None
        or current.created_at != before.created_at  # deleted and created again
        or current.next_seq < before.next_seq
        or current.generation != before.generation
        or current.cleared_below != before.cleared_below
    ):
        raise _SourceChanged  # deleted, cleared or replaced since the plan
    if current.message_count - before.message_count != current.next_seq - before.next_seq:
        # Messages were deleted since the plan: only those up to the cut matter.
        count, last = yield from _visible_up_to(source_id, current, plan.cut)
        if count != copied or last != plan.cut:
            raise _SourceChanged
    pending, stored_etag = yield from load_meta(new_id)
    if pending is None or stored_etag != etag:
        raise MemoryConflictError(
            f"new_id {new_id!r} was written by another writer while the fork ran"
        )
    record = ConversationRecord(
        conversation_id=new_id,
        created_at=before.created_at,
        last_message_at=plan.last_message_at,
        message_count=copied,
        metadata=plan.metadata,
        next_seq=plan.cut + 1,
        cleared_below=min(before.cleared_below, plan.cut + 1),
        user_ids=list(before.user_ids),
        generation=gen,
    )
    # Created now, whatever its last message's time: retention judges by this.
    stamp(record, now)
    yield from add_index_entries([], index_keys(new_id, record))
    yield from save_meta(new_id, record, etag)  # the swap
    return record.public()


def _visible_up_to(
    cid: str, record: ConversationRecord, cut: int
) -> Generator[Op, Any, tuple[int, int]]:
    """How many messages with seqs up to ``cut`` ``record`` shows now, and
    the last one's seq (-1: none). Only deletions can change them since the
    plan (the seqs were handed out), and every message the fork copied was
    visible when its page was read, so the count equals the number copied,
    and the last seq the cut, exactly when the fork holds the source's
    messages up to the cut as they are now, the cut message included."""
    prefix = keys.messages_prefix(cid, record.generation)
    end = keys.message_key(cid, cut + 1, record.generation)
    low = record.cleared_below
    start = keys.message_key(cid, low - 1, record.generation) if low else None
    count, last = 0, -1

    def tally(infos: list[BlobInfo]) -> None:
        nonlocal count, last
        for info in infos:
            seq = keys.seq_from_message_key(info.key)
            if record.visible(seq):
                count, last = count + 1, seq

    yield from each_batch(prefix, tally, size=_COUNT_PAGE, start_after=start, end_before=end)
    return count, last


def _abandon(new_id: str, gen: str, etag: str) -> Program[None]:
    """Remove a reservation that is still this fork's, and what it copied;
    when another writer took the id meanwhile, only this fork's generation
    (its name is this fork's alone), never the writer's data."""
    pending, stored_etag = yield from load_meta(new_id)
    if pending is not None and stored_etag == etag and not pending.live:
        yield from delete_conversation(new_id)
    elif pending is None or pending.generation != gen:
        yield from delete_range(keys.generation_prefix(new_id, gen))


# --- the fork -----------------------------------------------------------------------


async def _attempt(
    runner: UnitRunner, source_id: str, new_id: str, up_to: str | None
) -> ConversationMeta:
    caps = runner.blobs.capabilities
    plan = await runner.run(lambda: _plan(source_id, new_id, up_to, caps), write=False)
    gen, etag = await runner.run(lambda: _reserve(new_id, plan, runner.ids), write=True)
    try:

        async def copy_messages(after: int | None) -> tuple[int, int | None]:
            first = plan.source.cleared_below - 1 if after is None else after
            page = functools.partial(_copy_messages, source_id, new_id, plan, gen, etag, first)
            return await runner.run(page, write=True)

        copied = 0
        async for count in paging.pages(copy_messages):
            copied += count
        for copy in (_copy_aliases, _copy_state):

            async def copy_keys(key_after: str | None, copy: CopyPage = copy) -> str | None:
                unit = functools.partial(copy, source_id, new_id, plan, gen, etag, key_after)
                return await runner.run(unit, write=True)

            await paging.run_pages(copy_keys)
        spaces = await runner.run(lambda: checkpoints.namespaces(source_id), write=False)
        for namespace in spaces:

            async def copy_checkpoints(
                before: str | None, namespace: str = namespace
            ) -> str | None:
                unit = functools.partial(
                    _copy_checkpoints, source_id, new_id, plan, etag, namespace, before
                )
                return await runner.run(unit, write=True)

            await paging.run_pages(copy_checkpoints)
        now = runner.clock()
        commit = functools.partial(_commit, source_id, new_id, plan, gen, etag, copied, now)
        try:
            return await runner.run(commit, write=True)
        except _SourceChanged:  # under the retry policy: abandoned below, then again
            raise PreconditionFailedError(
                f"conversation {source_id!r} changed during the fork",
                key=keys.meta_key(source_id),
            ) from None
    except Exception:
        # Best effort: a reservation left behind is finished by the next write
        # of the id anyway (a cancelled or killed fork leaves it to that).
        with contextlib.suppress(Exception):  # the first error is the one to report
            await runner.run(functools.partial(_abandon, new_id, gen, etag), write=True)
        raise


async def fork_conversation(
    runner: UnitRunner, source_id: Any, new_id: Any, up_to: Any = None
) -> ConversationMeta:
    """Copy conversation ``source_id`` into ``new_id`` (see the module
    docstring); returns the new conversation's meta. Raises
    MemoryValidationError (bad ids, ``source_id == new_id``),
    MemoryNotFoundError (no source, ``up_to`` not in it) and
    MemoryConflictError (``new_id`` exists, or is created while the fork
    runs), with nothing written."""
    source = validate.identifier(source_id, "source_id")
    new = validate.identifier(new_id, "new_id")
    cut = None if up_to is None else validate.identifier(up_to, "up_to")
    if source == new:
        raise MemoryValidationError(f"new_id must differ from source_id (both {source!r})")
    return await runner.retry.run(lambda: _attempt(runner, source, new, cut))
