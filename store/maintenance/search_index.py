"""Message search through a backend's search index
(:meth:`makers_store.blob.BlobStore.search_message_keys`).

The index answers which message blobs may hold the text (candidates, a
superset of the matches: see :mod:`makers_store.blob`); the truth is
still the blobs and meta. Candidates are grouped by conversation and each
conversation is read in one unit of work: its meta (the generation that
holds its messages, which seqs are visible, its users, whether it is being
deleted) and the candidate blobs, each checked against the search's rule
(:func:`makers_store.maintenance.search._message_hit`). So a result is exactly what the
scan of :mod:`makers_store.maintenance.search` returns, in its order (conversations by
their position in the recency index, newest first; messages newest first):

* every message committed before the search started is a candidate (the
  index is written in the unit of work that writes the blob, and asked after
  the search started), and is returned unless it is deleted before its
  conversation is read;
* nothing deleted before the search started is returned: meta and the blob
  are read after it.

The one difference: the scan stops walking a conversation once its messages
are older than ``since`` by more than :data:`makers_store.maintenance.search.CLOCK_SLACK_MS`
(a message with a clock behind by more is missed there); the index path
filters every candidate by its ``created_at``.

When the candidates are many and the caller wants only the first few
(``limit``), reading them all would cost more than walking the newest
conversations until ``limit`` hits: past :data:`DENSE` candidates the search
walks (the caller falls back to the scan, which finds a common word's first
hits in the first conversations it reads).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

from .._core import keys
from .._core.codec import ConversationRecord, decode_message
from .._core.search_text import MESSAGE_KEY, MIN_QUERY, fold
from ..blob import BlobStore
from ..blob_ops import Op, get, get_many
from ..models import Message

#: With a ``limit``, more candidates than this make the search walk the newest
#: conversations instead (see the module docstring).
DENSE = 2_000
#: Without one, every candidate is read: the index answers at most this many
#: (more than any store here holds per word; a larger answer is read whole).
ALL = 1 << 62
#: Metas read per unit of work.
BATCH = 100

#: (conversation meta, its candidate seqs in that generation).
Candidates = dict[str, dict[str, list[int]]]
#: Checks one message; the hit or None.
Judge = Callable[[str, Message], Any]


async def candidates(blobs: BlobStore, text: str, limit: int | None) -> Candidates | None:
    """Candidate message seqs by conversation segment and generation, or None:
    no index, a query shorter than it answers, or (with ``limit``) more than
    :data:`DENSE` candidates."""
    folded = fold(text)
    if len(folded) < MIN_QUERY:
        return None
    cap = ALL if limit is None else DENSE + 1
    found = await blobs.search_message_keys(folded, cap)
    if found is None or (limit is not None and len(found) > DENSE):
        return None
    grouped: Candidates = {}
    for key in found:
        match = MESSAGE_KEY.fullmatch(key)
        if match is None:
            continue
        segment, gen, seq = match.group(1), match.group(2) or "", int(match.group(3))
        grouped.setdefault(segment, {}).setdefault(gen, []).append(seq)
    return grouped


def _read_metas(segments: list[str]) -> Generator[Op, Any, list[ConversationRecord | None]]:
    found = yield from get_many(keys.meta_key_of_segment(segment) for segment in segments)
    return [None if blob is None else ConversationRecord.decode(blob.data) for blob in found]


def _read_page(segment: str, gen: str, seqs: list[int]) -> Generator[Op, Any, list[bytes]]:
    """The blobs of ``seqs`` that meta, read in the same unit, still shows."""
    blob = yield from get(keys.meta_key_of_segment(segment))
    record = None if blob is None else ConversationRecord.decode(blob.data)
    if record is None or not record.live or record.generation != gen:
        return []  # deleted or replaced since: its messages went after the search began
    prefix = f"c/{segment}/g/{gen}/" if gen else f"c/{segment}/"
    wanted = [f"{prefix}m/{seq:0{keys.SEQ_WIDTH}d}" for seq in seqs if record.visible(seq)]
    return [b.data for b in (yield from get_many(wanted)) if b is not None]


def _order(record: ConversationRecord, segment: str) -> tuple[str, str]:
    """Where the conversation sits in the recency index (the scan's order)."""
    return keys.index_rank(record.position), segment


async def search(
    blobs: BlobStore,
    grouped: Candidates,
    judge: Judge,
    *,
    user_id: str | None,
    since: int | None,
    until: int | None,
    limit: int | None,
    page: int,
    on_conversation: Callable[[], None] | None = None,
) -> AsyncIterator[Any]:
    """The hits among ``grouped``'s candidates, in the scan's order. Metas
    are read a batch of conversations at a time, messages ``page`` at a time
    (each page with its conversation's meta again, in one unit of work), so
    that memory holds a page of messages, as the scan's does."""
    chosen: list[tuple[tuple[str, str], str, ConversationRecord, list[int]]] = []
    segments = list(grouped)
    for start in range(0, len(segments), BATCH):
        batch = segments[start : start + BATCH]
        metas = await blobs.run(_read_metas(batch), write=False)
        for segment, record in zip(batch, metas, strict=True):
            if record is None or not record.live:
                continue
            if user_id is not None and user_id not in record.user_ids:
                continue
            if since is not None and record.last_message_at < since:
                continue
            seqs = grouped[segment].get(record.generation, [])
            visible = sorted((seq for seq in seqs if record.visible(seq)), reverse=True)
            if visible:
                chosen.append((_order(record, segment), segment, record, visible))
    chosen.sort(key=lambda item: item[0])
    shown = 0
    for _, segment, record, seqs in chosen:
        cid = record.conversation_id
        for first in range(0, len(seqs), page):
            program = _read_page(segment, record.generation, seqs[first : first + page])
            for data in await blobs.run(program, write=False):
                message = decode_message(data)  # a corrupt one raises, as the scan does
                if since is not None and message.created_at < since:
                    continue
                if until is not None and message.created_at > until:
                    continue
                hit = judge(cid, message)
                if hit is None:
                    continue
                yield hit
                shown += 1
                if limit is not None and shown >= limit:
                    return
        if on_conversation is not None:
            on_conversation()
