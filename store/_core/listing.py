"""Listing conversations through the recency index (``i/all/``, ``i/u/{uid}/``).

Index keys sort newest first (their rank is ``RANK_MAX - last_message_at``),
so a ``desc`` page is a forward listing. An entry counts only while it agrees
with its conversation's meta (:func:`~makers_store._core.programs.entry_is_current`):
appends write the new entry before meta and remove the old one after it, and
on object storage they leave superseded entries for a later batch delete, so
a listing reads past entries that are not current. Each listing reads a
conversation's meta at most once, and the metas of a page of entries in one
batch read (:func:`~makers_store.blob_ops.get_many`). A page after a cursor also
probes behind the cursor (for ``previous_cursor`` / ``next_cursor``), listed
together with the page (:func:`~makers_store.blob_ops.list_many`): a page costs a
listing round and a batch read, two round trips on PostgreSQL, unless
superseded entries fill it. Superseded entries always sort behind the
current one in a ``desc`` page, so there they cost no extra read.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ..blob import Capabilities
from ..blob_ops import BlobInfo, ListKeys, Op, Program, get_many, list_many
from ..models import ListConversationsResult
from . import keys
from .codec import ConversationRecord
from .programs import STALE_INDEX_BATCH, entry_is_current, visible_record

#: The most keys one listing request returns on object storage.
MAX_PAGE = 1000


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
    # Where each request costs, list enough keys in one to read past the
    # superseded entries a page may hold.
    spread = STALE_INDEX_BATCH if caps.costly_requests else 1
    page = _Walk(
        start_after=cursor if cursor is not None and greater else None,
        end_before=cursor if cursor is not None and not greater else None,
        reverse=reverse,
        want=limit + 1,
        page=min(MAX_PAGE, (limit + 1) * spread),
    )
    walks = [page]
    if cursor is not None:
        # Whether anything lies on the far side of the cursor: any current
        # entry at the cursor or beyond it will do, so the probe is listed
        # with the page (entries between the cursor and the page are not
        # current: the page would hold them). Forward where backward is costly.
        behind = (
            _Walk(None, _just_above(cursor), caps.lists_backward, 1, spread)
            if greater
            else _Walk(_just_below(cursor), None, False, 1, spread)
        )
        walks.append(behind)
    yield from _walk(prefix, uid, walks)
    found = page.found
    has_more = len(found) > limit
    found = found[:limit]
    if not found:
        return ListConversationsResult(items=[])
    beyond_cursor = cursor is not None and bool(walks[-1].found)
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


# Bounds with no stored key between them and ``key``, so that a listing
# after or before them includes ``key`` itself: index keys are escaped
# printable ASCII, so they hold neither U+0001 nor U+10FFFF (and PostgreSQL
# text cannot hold U+0000).


def _just_below(key: str) -> str:
    return key[:-1] + chr(ord(key[-1]) - 1) + "\U0010ffff"


def _just_above(key: str) -> str:
    return key + "\x01"


class _Walk:
    """Up to ``want`` index entries that agree with their conversation's
    meta, from one end of a key window, ``page`` keys per listing."""

    def __init__(
        self,
        start_after: str | None,
        end_before: str | None,
        reverse: bool,
        want: int,
        page: int,
    ) -> None:
        self.start_after, self.end_before, self.reverse = start_after, end_before, reverse
        self.want, self.page = want, page
        self.found: list[tuple[str, ConversationRecord]] = []
        self.done = False
        self.batch: list[tuple[str, str]] = []  # (entry key, meta segment) listed, not yet judged

    def listing(self, prefix: str) -> ListKeys | None:
        """The next listing, when the entries listed are all judged."""
        if self.done or self.batch:
            return None
        return ListKeys(prefix, self.start_after, self.end_before, self.reverse, self.page)

    def listed(self, prefix: str, infos: list[BlobInfo]) -> None:
        self.batch = [(info.key, keys.parse_index_key(prefix, info.key)[1]) for info in infos]
        self.done = len(infos) < self.page  # the window ends with this batch
        if infos and self.reverse:
            self.end_before = infos[-1].key
        elif infos:
            self.start_after = infos[-1].key

    def unread(self, metas: dict[str, ConversationRecord | None]) -> list[str]:
        """The metas to read next: those of the next entries, as many
        conversations as the walk still wants (each gives at most one)."""
        needed: dict[str, None] = {}
        for _, segment in self.batch:
            if len(needed) == self.want - len(self.found):
                break
            if segment not in metas:
                needed[segment] = None
        return list(needed)

    def judge(self, metas: dict[str, ConversationRecord | None], current: Judge) -> None:
        """Keep the entries whose meta is read and vouches for them, up to
        the first whose meta is not read yet."""
        while self.batch and len(self.found) < self.want:
            key, segment = self.batch[0]
            if segment not in metas:
                return
            self.batch.pop(0)
            record = metas[segment]
            if record is not None and current(key, record):
                self.found.append((key, record))
        if len(self.found) == self.want:
            self.done, self.batch = True, []


Judge = Callable[[str, ConversationRecord], bool]


def _walk(prefix: str, uid: str | None, walks: list[_Walk]) -> Generator[Op, Any, None]:
    """Advance every walk to its end, in rounds: the listings the walks need
    together, then the metas they need next in one batch read; a meta is
    read at most once, and no more of them than the walks can use."""
    metas: dict[str, ConversationRecord | None] = {}
    user_segment = None if uid is None else keys.id_segment(uid)

    def current(key: str, record: ConversationRecord) -> bool:
        return entry_is_current(key, prefix, user_segment, record)

    while active := [walk for walk in walks if walk.batch or not walk.done]:
        listings = [(walk, walk.listing(prefix)) for walk in active]
        wanted = [(walk, listing) for walk, listing in listings if listing is not None]
        if wanted:
            answers = yield from list_many(*(listing for _, listing in wanted))
            for (walk, _), infos in zip(wanted, answers, strict=True):
                walk.listed(prefix, infos)
        unread = list(dict.fromkeys(s for walk in active for s in walk.unread(metas)))
        blobs = yield from get_many(keys.meta_key_of_segment(s) for s in unread)
        metas.update(zip(unread, map(visible_record, blobs), strict=True))
        for walk in active:
            walk.judge(metas, current)
