"""Export a store as JSON lines, streaming (the format
:mod:`makers_store.maintenance.importing` reads).

One JSON object per line, each with a ``type``; field names are the public
API's (see the spec), plus what the API does not show but a faithful copy
needs (``user_ids``, adapter data)::

    {"type":"header","format":"makers-store-export","version":1}
    {"type":"conversation","conversation_id":..,"created_at":..,"last_message_at":..,
     "message_count":..,"metadata":{..},"user_ids":[..],"last_tie":..,
     "next_seq":..,"cleared_below":..,"touched_at":..}
                        (last_tie, cleared_below, touched_at only if set)
    {"type":"message","conversation_id":..,"message_id":..,"role":..,"content":..,
     "created_at":..,"metadata":..,"updated_at":..,"seq":..}
                        (updated_at only if set; seq only for a caller's own id,
                         which does not name its place as msg_<seq>_... does)
    {"type":"alias","conversation_id":..,"message_id":..,"seq":..}
                        (a caller's id whose message was deleted: still a place)
    {"type":"state","conversation_id":..,"key":..,"value":..}
    {"type":"adapter","conversation_id":..,"path":..,"data_base64":..}
    {"type":"blob","key":..,"data_base64":..}            (data outside conversations)

Besides what the API shows, a conversation carries what its later behaviour
depends on: ``next_seq`` (the seq the next append gets: never one a deleted
message had, so marks and cursors naming deleted messages keep their place),
``cleared_below`` (where ``clear_messages`` cut), ``touched_at`` (its last
write other than an append, which retention judges idleness by) and the
aliases of caller ids whose messages were deleted (marks and cursors naming
them keep their place too). Files written before these fields existed still
import (:mod:`makers_store.maintenance.replacing` derives them).

Export walks the store conversation by conversation, reading values in
chunks of at most :data:`CHUNK_BYTES` (or one value), so memory never grows
with the store. A conversation's records are contiguous.

Import: see :mod:`makers_store.maintenance.importing`.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._core import keys, names, paging, validate
from .._core.codec import ConversationRecord, decode_message, decode_state, dumps_line, live_record
from .._core.programs import load_meta
from .._core.runner import UnitRunner
from .._core.value_chunks import CHUNK_BYTES as CHUNK_BYTES
from .._core.value_chunks import value_chunk
from ..blob_ops import Entry, Program, list_keys, scan
from ..errors import MemoryNotFoundError
from ..models import fields_dict
from .inventory import iter_conversations

FORMAT = "makers-store-export"
VERSION = 1
_LIST_BATCH = 500
#: Key ranges outside conversations and indexes (escaped keys are ASCII, so
#: nothing under ``c/`` or ``i/`` sorts after ``c/\U0010ffff`` / ``i/\U0010ffff``).
OUTSIDE_RANGES = (
    (None, "c/"),
    ("c/\U0010ffff", "i/"),
    # ``v/`` is the store's own (the layout marker, a snapshot's manifest):
    # neither exported nor copied
    ("i/\U0010ffff", "v/"),
    ("v/\U0010ffff", None),
)


@dataclass(slots=True)
class TransferCounts:
    conversations: int = 0
    messages: int = 0
    state_entries: int = 0
    adapter_blobs: int = 0
    blobs: int = 0

    def to_dict(self) -> dict[str, int]:
        return fields_dict(self)


# --- export ------------------------------------------------------------------


#: A key range to export: (prefix, start_after, end_before).
Range = tuple[str, str | None, str | None]


def _values(
    runner: UnitRunner, prefix: str, start_after: str | None = None, end_before: str | None = None
) -> AsyncIterator[Entry]:
    async def read(after: str | None) -> tuple[list[Entry], str | None]:
        chunk, last = await runner.run(lambda: value_chunk(prefix, after, end_before), write=False)
        return chunk, (None if last or not chunk else chunk[-1].key)

    return paging.items(read, start_after)


def _small(ranges: list[Range]) -> Program[list[list[Entry]] | None]:
    """Every value of ``ranges`` when they hold at most CHUNK_BYTES in all (one
    unit of work: most conversations), else None."""
    sizes = 0
    found: list[bool] = []
    for prefix, start_after, end_before in ranges:
        infos = yield from list_keys(
            prefix, start_after=start_after, end_before=end_before, limit=_LIST_BATCH
        )
        sizes += sum(info.size for info in infos)
        if len(infos) == _LIST_BATCH or sizes > CHUNK_BYTES:
            return None
        found.append(bool(infos))
    values = []
    for (prefix, start_after, end_before), any_found in zip(ranges, found, strict=True):
        values.append(
            (yield from scan(prefix, start_after=start_after, end_before=end_before))
            if any_found
            else []
        )
    return values


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _ranges(cid: str, record: ConversationRecord | None) -> list[Range]:
    """A conversation's messages and aliases (only with meta), state and adapter data."""
    gen = "" if record is None else record.generation
    found: list[Range] = []
    if record is not None:
        low, high = record.cleared_below, record.next_seq
        start = keys.message_key(cid, low - 1, gen) if low > 0 else None
        found.append((keys.messages_prefix(cid, gen), start, keys.message_key(cid, high, gen)))
        found.append((keys.aliases_prefix(cid, gen), None, None))
    found.append((keys.state_prefix(cid, gen), None, None))
    found.append((keys.adapters_prefix(cid), None, None))
    return found


async def export_conversation(
    runner: UnitRunner,
    cid: str,
    record: ConversationRecord | None,
    emit: Callable[[dict[str, Any]], None],
    counts: TransferCounts,
) -> None:
    """Emit one conversation's records (``record``: its live meta or None)."""
    ranges = _ranges(cid, record)
    small = await runner.run(lambda: _small(ranges), write=False)

    async def values(index: int) -> AsyncIterator[Entry]:
        if small is not None:
            for entry in small[index]:
                yield entry
        else:
            async for entry in _values(runner, *ranges[index]):
                yield entry

    section = 0
    if record is not None:
        counts.conversations += 1
        line = {"type": "conversation", **record.public().to_dict(), "user_ids": record.user_ids}
        if record.last_tie is not None:  # keeps the listing order of one millisecond
            line["last_tie"] = record.last_tie
        line["next_seq"] = record.next_seq
        if record.cleared_below:
            line["cleared_below"] = record.cleared_below
        if record.touched_at is not None:
            line["touched_at"] = record.touched_at
        emit(line)
        held: dict[str, int] = {}  # caller ids of the messages exported, and their seqs
        async for blob in values(section):
            seq = keys.seq_from_message_key(blob.key)
            if seq in record.tombstones or seq in record.emptied:
                continue
            counts.messages += 1
            message = decode_message(blob.data)
            line = {"type": "message", "conversation_id": cid, **message.to_dict()}
            if keys.seq_of_message_id(message.message_id) is None:
                line["seq"] = seq
                held[message.message_id] = seq
            emit(line)
        prefix = keys.aliases_prefix(cid, record.generation)
        async for blob in values(section + 1):
            place = _stale_alias(prefix, blob, record, held)
            if place is not None:
                emit(
                    {
                        "type": "alias",
                        "conversation_id": cid,
                        "message_id": place[0],
                        "seq": place[1],
                    }
                )
        section += 2
    async for blob in values(section):
        counts.state_entries += 1
        segment = keys.state_segment_of_key(blob.key)
        name = keys.id_of_segment(segment)
        if name is None:  # a bounded one: its name blob says
            resolve = functools.partial(names.resolve, keys.id_segment(cid), segment)
            name = await runner.run(resolve, write=False)
        value = decode_state(blob.data)
        emit({"type": "state", "conversation_id": cid, "key": name, "value": value})
    adapters = keys.adapters_prefix(cid)
    async for blob in values(section + 1):
        counts.adapter_blobs += 1
        path, data = blob.key[len(adapters) :], _b64(blob.data)
        emit({"type": "adapter", "conversation_id": cid, "path": path, "data_base64": data})


def _stale_alias(
    prefix: str, blob: Entry, record: ConversationRecord, held: dict[str, int]
) -> tuple[str, int] | None:
    """(caller id, seq) when the alias ``blob`` names a place in the
    conversation that no exported message with that id holds (its message
    was deleted): a mark or cursor naming the id keeps that place
    (:mod:`makers_store._core.message_lookup`), so the import keeps the alias."""
    seq = keys.decode_alias(blob.data)
    mid = keys.id_of_segment(blob.key[len(prefix) :])
    if mid is None or seq is None or held.get(mid) == seq:
        return None  # (a bounded id's text is no longer known: its message is gone)
    return (mid, seq) if record.cleared_below <= seq < record.next_seq else None


def _exists(cid: str) -> Program[bool]:
    return bool((yield from list_keys(keys.conversation_prefix(cid), limit=1)))


def _meta_of(cid: str) -> Program[ConversationRecord | None]:
    return (yield from load_meta(cid))[0]


async def _selected(
    runner: UnitRunner, conversation_ids: Sequence[str]
) -> AsyncIterator[tuple[str, ConversationRecord | None]]:
    for cid in conversation_ids:
        yield cid, await runner.run(functools.partial(_meta_of, cid), write=False)


async def export_jsonl(
    runner: UnitRunner,
    write: Callable[[str], object],
    *,
    conversation_ids: Sequence[str] | None = None,
    user_id: str | None = None,
    on_conversation: Callable[[], None] | None = None,
) -> TransferCounts:
    """Write the store (or the conversations selected by id and/or user)
    as JSON lines through ``write``; ``on_conversation()`` runs after each
    conversation walked. Blobs outside conversations (framework data) are
    exported only when nothing is selected. The format:
    :mod:`makers_store.maintenance.exporting`."""
    ids = list(dict.fromkeys(validate.conversation_id(cid) for cid in conversation_ids or ()))
    uid = validate.optional_user_id(user_id)
    for cid in ids:
        if not await runner.run(functools.partial(_exists, cid), write=False):
            raise MemoryNotFoundError(f"conversation_id {cid!r} does not exist")

    def emit(record: dict[str, Any]) -> None:
        write(dumps_line(record) + "\n")

    counts = TransferCounts()
    emit({"type": "header", "format": FORMAT, "version": VERSION})
    walk = _selected(runner, ids) if ids else iter_conversations(runner)
    async for cid, record in walk:
        if record is None or record.live:
            live = live_record(record)
            if uid is None or (live is not None and uid in live.user_ids):
                await export_conversation(runner, cid, live, emit, counts)
        if on_conversation is not None:
            on_conversation()
    if not ids and uid is None:
        for start, end in OUTSIDE_RANGES:
            async for blob in _values(runner, "", start, end):
                counts.blobs += 1
                emit({"type": "blob", "key": blob.key, "data_base64": _b64(blob.data)})
    return counts
