"""Listing conversations through the recency index (``i/all/``, ``i/u/{uid}/``).

Index keys sort newest first (their rank is ``RANK_MAX - last_message_at``),
so a ``desc`` page is a forward listing. An entry counts only while it agrees
with its conversation's meta (:func:`~makers_store.programs.entry_is_current`):
appends write the new entry before meta and remove the old one after it, and
on object storage they leave superseded entries for a later batch delete, so
a listing reads past entries that are not current. Each listing reads a
conversation's meta at most once, and the metas of a page of entries in one
batch read (:func:`~makers_store.blob.get_many`): a first page costs a listing
and a batch read (two round trips on PostgreSQL), a page after a cursor two
more for the probe beyond it. Superseded entries always sort behind the
current one in a ``desc`` page, so there they cost no extra read.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from . import keys
from .blob import Capabilities, Op, Program, get_many, list_keys
from .codec import ConversationRecord
from .models import ListConversationsResult
from .programs import STALE_INDEX_BATCH, entry_is_current, visible_record

#: The most keys one listing request returns on object storage.
MAX_PAGE = 1000

Metas = dict[str, ConversationRecord | None]


def list_conversations(
    limit: int,
    order: str,
    after: str | None,
    before: str | None,
    uid: str | None,
    caps: Capabilities,
) -> Program[ListConversationsResult]:
    prefix = keys.index_prefix(uid)
    cursor = after if after is not None else before
    # Index keys sort newest first: "desc" pages are forward listings.
    greater = (order == "desc") == (after is not None)
    reverse = (order == "asc") != (before is not None)
    metas: Metas = {}
    # Where each request costs, list enough keys in one to read past the
    # superseded entries a page may hold.
    spread = STALE_INDEX_BATCH if caps.costly_requests else 1
    found = yield from _current_entries(
        prefix,
        uid,
        metas,
        start_after=cursor if cursor is not None and greater else None,
        end_before=cursor if cursor is not None and not greater else None,
        reverse=reverse,
        want=limit + 1,
        page=min(MAX_PAGE, (limit + 1) * spread),
    )
    has_more = len(found) > limit
    found = found[:limit]
    if not found:
        return ListConversationsResult(items=[])
    # Whether anything lies on the far side of the cursor-side end of the page.
    beyond_cursor = False
    if cursor is not None:
        edge = found[0][0]
        probe = yield from _current_entries(
            prefix,
            uid,
            metas,
            start_after=edge if reverse else None,
            end_before=None if reverse else edge,
            # Any current entry will do: list forward where backward is costly.
            reverse=not reverse and caps.lists_backward,
            want=1,
            page=spread,
        )
        beyond_cursor = bool(probe)
    if before is not None:
        found.reverse()
        has_next, has_previous = beyond_cursor, has_more
    else:
        has_next, has_previous = has_more, beyond_cursor
    return ListConversationsResult(
        items=[record.public() for _, record in found],
        next_cursor=keys.cursor_of_index_key(prefix, found[-1][0]) if has_next else None,
        previous_cursor=keys.cursor_of_index_key(prefix, found[0][0]) if has_previous else None,
    )


def _current_entries(
    prefix: str,
    uid: str | None,
    metas: Metas,
    *,
    start_after: str | None,
    end_before: str | None,
    reverse: bool,
    want: int,
    page: int,
) -> Generator[Op, Any, list[tuple[str, ConversationRecord]]]:
    """Up to ``want`` index entries that agree with their conversation's meta,
    listing ``page`` keys at a time; ``metas`` caches the metas read."""
    found: list[tuple[str, ConversationRecord]] = []
    user_segment = None if uid is None else keys.id_segment(uid)
    while len(found) < want:
        batch = yield from list_keys(
            prefix, start_after=start_after, end_before=end_before, reverse=reverse, limit=page
        )
        segments = [keys.parse_index_key(prefix, info.key)[1] for info in batch]
        unread = list(dict.fromkeys(s for s in segments if s not in metas))
        blobs = yield from get_many(keys.meta_key_of_segment(s) for s in unread)
        metas.update(zip(unread, map(visible_record, blobs), strict=True))
        for info, segment in zip(batch, segments, strict=True):
            record = metas[segment]
            if record is not None and entry_is_current(info.key, prefix, user_segment, record):
                found.append((info.key, record))
                if len(found) == want:
                    break
        if len(batch) < page:
            break
        if reverse:
            end_before = batch[-1].key
        else:
            start_after = batch[-1].key
    return found
