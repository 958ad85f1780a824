"""A conversation's messages as I/O-free programs: reading a page, changing
or deleting one, clearing them all.

A message blob is visible only below meta's ``next_seq`` and at or above its
``cleared_below``, and not in its ``tombstones`` (see
:mod:`makers_store._core.programs` for the write order that keeps it so).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator
from typing import Any

from ..blob import Capabilities
from ..blob_ops import BlobInfo, Entry, Op, Program, delete_many, each_batch, put, scan
from ..errors import MemoryNotFoundError, PreconditionFailedError
from ..models import Message
from . import keys, validate
from .activity import stamp, touch
from .codec import ConversationRecord, decode_message, decode_messages, encode_json, encode_message
from .message_lookup import cursor_seq, locate
from .programs import delete_range, load_live_meta, save_meta, visible_meta


def _seq_bounds(
    record: ConversationRecord, order: str, after: int | None, before: int | None
) -> tuple[int, int]:
    low, high = record.cleared_below, record.next_seq
    cursor = after if after is not None else before
    if cursor is not None:
        if (order == "asc") == (after is not None):
            low = max(low, cursor + 1)
        else:
            high = min(high, cursor)
    return low, high


def get_messages(
    cid: str,
    limit: int,
    order: str,
    after_id: str | None,
    before_id: str | None,
    caps: Capabilities,
) -> Program[list[Message]]:
    record = yield from visible_meta(cid)
    if record is None:
        return []
    after = yield from cursor_seq(cid, record, after_id, "after")
    before = yield from cursor_seq(cid, record, before_id, "before")
    low, high = _seq_bounds(record, order, after, before)
    reverse = (order == "desc") != (before is not None)
    blobs = yield from message_range(cid, record, low, high, limit, reverse=reverse, caps=caps)
    messages = decode_messages([blob.data for blob in blobs])
    if before is not None:
        messages.reverse()
    return messages


def message_range(
    cid: str,
    record: ConversationRecord,
    low: int,
    high: int,
    limit: int,
    *,
    reverse: bool,
    caps: Capabilities,
) -> Generator[Op, Any, list[Entry]]:
    """The first ``limit`` visible message blobs with seqs in [low, high),
    oldest first, or with ``reverse`` the last ``limit``, newest first: the one
    reader of a range of messages (``get_messages``, the OpenAI session). On a
    backend that cannot list backward cheaply (``caps.lists_backward``), the
    newest are read through forward listings of a computed window, never a
    listing of the whole range. Fewer than ``limit`` means the range holds no
    more."""
    if low >= high:
        return []
    if reverse and not caps.lists_backward:
        blobs = yield from _last_messages(cid, record, low, high, limit)
    else:
        gen = record.generation
        page = functools.partial(
            scan,
            keys.messages_prefix(cid, gen),
            start_after=keys.message_key(cid, low - 1, gen) if low > 0 else None,
            end_before=keys.message_key(cid, high, gen),
            reverse=reverse,
        )
        # Hidden seqs rarely hold a blob (an emptied slot, issue 35, holds one
        # only after a race without transactions): read ``limit`` first, and
        # the ``limit + hidden`` that a hidden blob among them needs only
        # then (issue 36: 32 emptied slots made every page read 82 rows).
        blobs = yield from page(limit=limit)
        if record.hidden:
            shown = _visible(record, blobs)
            if len(blobs) == limit and not all(shown):
                blobs = yield from page(limit=limit + record.hidden)
                shown = _visible(record, blobs)
            blobs = [blob for blob, visible in zip(blobs, shown, strict=True) if visible]
        return blobs[:limit]
    if record.hidden:
        blobs = [b for b in blobs if record.visible(keys.seq_from_message_key(b.key))]
    return blobs[:limit]


def _visible(record: ConversationRecord, blobs: list[Entry]) -> list[bool]:
    """``record.visible`` of each blob's seq, the hidden seqs looked up in a set."""
    hidden = {*record.tombstones, *record.emptied}
    low, high = record.cleared_below, record.next_seq
    return [
        low <= seq < high and seq not in hidden
        for seq in (keys.seq_from_message_key(blob.key) for blob in blobs)
    ]


def _last_messages(
    cid: str, record: ConversationRecord, low: int, high: int, limit: int
) -> Generator[Op, Any, list[Entry]]:
    """The newest ``limit`` (+ tombstoned) message blobs in seqs [low, high),
    newest first, through forward listings only. Deleted messages leave gaps
    in the seqs; meta knows how many (``next_seq - cleared_below -
    message_count``), so a window that many seqs wider holds the page. Without
    transactions a message can be deleted after this meta was read (a
    concurrent ``pop_item``): a window that then holds too few is widened to
    the whole range once, so a page is never cut short by such a race."""
    gen = record.generation
    want = limit + record.hidden
    gaps = record.next_seq - record.cleared_below - record.message_count
    start = max(low, high - want - gaps)
    blobs = yield from _newest_from(cid, gen, start, high, want, gaps > record.hidden)
    if len(blobs) < want and start > low:
        blobs = yield from _newest_from(cid, gen, low, high, want, True)
    return blobs


def _newest_from(
    cid: str, gen: str, start: int, high: int, want: int, find_start: bool
) -> Generator[Op, Any, list[Entry]]:
    """The newest ``want`` message blobs in seqs [start, high), newest first;
    ``find_start``: list keys first to skip to the ``want`` newest (there are gaps)."""
    prefix = keys.messages_prefix(cid, gen)
    if find_start:  # find where the page starts: keys only
        found: list[str] = []

        def keep_last(batch: list[BlobInfo]) -> None:
            found[:] = (found + [info.key for info in batch])[-want:]

        yield from each_batch(
            prefix,
            keep_last,
            size=1000,
            start_after=keys.message_key(cid, start - 1, gen) if start > 0 else None,
            end_before=keys.message_key(cid, high, gen),
        )
        if not found:
            return []
        start = keys.seq_from_message_key(found[0])
    blobs = yield from scan(
        prefix,
        start_after=keys.message_key(cid, start - 1, gen) if start > 0 else None,
        end_before=keys.message_key(cid, high, gen),
    )
    blobs.reverse()
    return blobs[:want]


def _find_message(
    cid: str, message_id: str
) -> Generator[Op, Any, tuple[ConversationRecord, str | None, int, Message, str]]:
    record, etag = yield from load_live_meta(cid)
    found = None if record is None else (yield from locate(cid, record, message_id))
    if record is None or found is None:
        raise MemoryNotFoundError(f"message_id {message_id!r} not found in conversation_id {cid!r}")
    seq, blob = found
    return record, etag, seq, decode_message(blob.data), blob.etag


def update_message(
    cid: str,
    message_id: str,
    content_json: str | None,
    metadata_json: str | None,
    now: int,
) -> Program[Message]:
    return (yield from _rewrite(cid, message_id, now, content_json, lambda _: metadata_json))


def merge_message_metadata(
    cid: str, message_id: str, patch: dict[str, Any], now: int
) -> Program[Message]:
    """Shallow-merge ``patch`` into one message's metadata (a value of None
    deletes its key), read and written in one unit: the write is conditional
    on the message blob read, so a concurrent change makes the unit run again
    on the new metadata instead of being overwritten."""

    def merged(message: Message) -> str:
        metadata = dict(message.metadata or {})
        for key, value in patch.items():
            if value is None:
                metadata.pop(key, None)
            else:
                metadata[key] = value
        if not metadata and message.metadata is None:
            return validate.metadata_json(None)
        return validate.metadata_json(metadata, argument="metadata (merged with the stored)")

    return (yield from _rewrite(cid, message_id, now, None, merged))


def _rewrite(
    cid: str,
    message_id: str,
    now: int,
    content_json: str | None,
    metadata_of: Callable[[Message], str | None],
) -> Program[Message]:
    """Write one message again with new content (None: the same) and the
    metadata ``metadata_of(message)`` gives (None: the same)."""
    record, meta_etag, seq, message, blob_etag = yield from _find_message(cid, message_id)
    metadata_json = metadata_of(message)  # checked before anything is written
    yield from touch(cid, record, meta_etag, now)  # the last write (lifecycle.activity)
    if content_json is None:
        content_json = encode_json(message.content, argument="content")
    if metadata_json is None:
        metadata_json = encode_json(message.metadata, argument="metadata")
    data = encode_message(
        message_id=message_id,
        role=message.role,
        content_json=content_json,
        created_at=message.created_at,
        metadata_json=metadata_json,
        updated_at=now,
    )
    yield from put(keys.message_key(cid, seq, record.generation), data, if_match=blob_etag)
    return decode_message(data)


def delete_message(cid: str, message_id: str, now: int | None = None) -> Program[None]:
    """Delete one message. A client id's alias stays: like a generated id, it
    remains a page cursor, and a later append of the id overwrites it.
    ``now`` stamps the write (:mod:`makers_store._core.activity`)."""
    record, etag, seq, _, _ = yield from _find_message(cid, message_id)
    stamp(record, now)
    yield from remove_messages(cid, record, etag, [seq])


def remove_messages(
    cid: str, record: ConversationRecord, etag: str | None, seqs: list[int]
) -> Generator[Op, Any, None]:
    """Delete the visible messages at ``seqs``: commit the intent to meta
    (tombstones, count), remove the blobs, drop the tombstones."""
    gone = sorted(set(seqs))
    if not gone:
        return
    record.message_count -= len(gone)
    record.tombstones.extend(gone)
    etag = yield from save_meta(cid, record, etag)  # the commit point
    yield from delete_many(keys.message_key(cid, seq, record.generation) for seq in gone)
    record.drop_tombstones(gone)
    # Clean-up only: when another writer wrote meta since, it read the
    # tombstones and drops them itself (load_live_meta). Failing here would
    # run the deletion again, which finds no message and says so.
    with contextlib.suppress(PreconditionFailedError):
        yield from save_meta(cid, record, etag)


def clear_messages(cid: str, now: int | None = None) -> Program[None]:
    record, etag = yield from load_live_meta(cid)
    if record is None:
        return
    stamp(record, now)
    record.cleared_below = record.next_seq
    record.message_count = 0
    yield from save_meta(cid, record, etag)
    gen = record.generation
    yield from delete_range(
        keys.messages_prefix(cid, gen), end_before=keys.message_key(cid, record.next_seq, gen)
    )
    yield from _drop_aliases_below(cid, gen, record.cleared_below)


_ALIAS_BATCH = 500


def _drop_aliases_below(cid: str, gen: str, seq: int) -> Generator[Op, Any, None]:
    """Delete the aliases of cleared messages. One at or above ``seq`` belongs
    to an append in flight, whose message a helper may commit: it stays."""

    def drop(batch: list[Entry]) -> Generator[Op, Any, None]:
        yield from delete_many(
            entry.key for entry in batch if (keys.decode_alias(entry.data) or 0) < seq
        )

    yield from each_batch(keys.aliases_prefix(cid, gen), drop, size=_ALIAS_BATCH, values=True)
