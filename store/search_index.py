"""Message search through a backend's search index
(:meth:`makers_store.blob.BlobStore.search_message_keys`).

The index answers which message blobs may hold the text (candidates, a
superset of the matches: see :mod:`makers_store.search_text`); the truth is
still the blobs and meta. Candidates are grouped by conversation and each
conversation is read in one unit of work: its meta (the generation that
holds its messages, which seqs are visible, its users, whether it is being
deleted) and the candidate blobs, each checked against the search's rule
(:func:`makers_store.search._message_hit`). So a result is exactly what the
scan of :mod:`makers_store.search` returns, in its order (conversations by
their position in the recency index, newest first; messages newest first):

* every message committed before the search started is a candidate (the
  index is written in the unit of work that writes the blob, and asked after
  the search started), and is returned unless it is deleted before its
  conversation is read;
* nothing deleted before the search started is returned: meta and the blob
  are read after it.

The one difference: the scan stops walking a conversation once its messages
are older than ``since`` by more than :data:`makers_store.search.CLOCK_SLACK_MS`
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

from . import keys
from .blob import BlobStore
from .blob_ops import Op, get_many
from .codec import ConversationRecord, decode_message
from .models import Message
from .search_text import MESSAGE_KEY, MIN_QUERY, fold

#: With a ``limit``, more candidates than this make the search walk the newest
#: conversations instead (see the module docstring).
DENSE = 2_000
#: Without one, every candidate is read: the index answers at most this many
#: (more than any store here holds per word; a larger answer is read whole).
ALL = 1 << 62
#: Conversations read per unit of work.
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


#: One conversation read: its meta and its visible candidate blobs, newest first.
Read = tuple[str, ConversationRecord | None, list[bytes]]


def _read_batch(batch: list[tuple[str, dict[str, list[int]]]]) -> Generator[Op, Any, list[Read]]:
    """Meta of each conversation of ``batch`` and the visible candidate blobs
    of its current generation (one unit of work: meta and blobs agree)."""
    metas = yield from get_many(keys.meta_key_of_segment(segment) for segment, _ in batch)
    read: list[tuple[str, ConversationRecord | None, list[int]]] = []
    wanted: list[str] = []
    for (segment, by_generation), blob in zip(batch, metas, strict=True):
        record = None if blob is None else ConversationRecord.decode(blob.data)
        if record is None or not record.live:
            read.append((segment, record, []))
            continue
        gen = record.generation
        seqs = sorted((s for s in by_generation.get(gen, ()) if record.visible(s)), reverse=True)
        prefix = f"c/{segment}/g/{gen}/" if gen else f"c/{segment}/"
        wanted += (f"{prefix}m/{seq:0{keys.SEQ_WIDTH}d}" for seq in seqs)
        read.append((segment, record, seqs))
    found = iter((yield from get_many(wanted)))
    return [
        (segment, record, [b.data for b in (next(found) for _ in seqs) if b is not None])
        for segment, record, seqs in read
    ]


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
    on_conversation: Callable[[], None] | None = None,
) -> AsyncIterator[Any]:
    """The hits among ``grouped``'s candidates, in the scan's order."""
    read: list[tuple[tuple[str, str], ConversationRecord, list[bytes]]] = []
    items = list(grouped.items())
    for start in range(0, len(items), BATCH):
        batch = items[start : start + BATCH]
        for segment, record, found in await blobs.run(_read_batch(batch), write=False):
            if record is None or not record.live or not found:
                continue
            if user_id is not None and user_id not in record.user_ids:
                continue
            if since is not None and record.last_message_at < since:
                continue
            read.append((_order(record, segment), record, found))
    read.sort(key=lambda item: item[0])
    shown = 0
    for _, record, found in read:
        cid = record.conversation_id
        for data in found:
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
