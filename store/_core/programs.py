"""The store's logic as I/O-free programs over the blob operations: a
conversation's meta, its index entries, the conversation as a whole.
Messages are in :mod:`makers_store._core.message_programs`, state in
:mod:`makers_store._core.state_programs`, appends in :mod:`makers_store._core.appends`,
listings in :mod:`makers_store._core.listing`.

Each function returns a generator (see :mod:`makers_store.blob_ops`) that a
backend runs as one unit of work. Arguments arrive validated. The write order
is chosen for backends that cannot run a unit atomically:

* ``c/{cid}/meta`` is the commit point of a conversation. A message blob
  becomes visible only once meta's ``next_seq`` passes it, so a crash after
  writing a message but before meta leaves an invisible leftover that the
  next append overwrites.
* Meta is written with if-match on the etag it was read with (if-none-match
  when new); a concurrent writer makes the unit fail with
  PreconditionFailedError and the caller runs it again.
* Deletions first commit their intent to meta (``tombstones``,
  ``cleared_below``, ``deleting``), which hides the data at once, then remove
  blobs; whoever next writes the conversation finishes an interrupted one.
* Index entries are derived data. An append writes the new entries before
  meta and deletes the old ones after it (on object storage, in batches:
  meta's ``superseded_at`` records what it owes), so a listing
  (:mod:`makers_store._core.listing`) never misses a conversation; readers skip
  entries that disagree with meta, and an index rebuild recreates them from
  meta alone.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..blob_ops import (
    Blob,
    BlobInfo,
    Get,
    Op,
    Program,
    Put,
    delete,
    delete_many,
    each_batch,
    get,
    list_keys,
)
from ..errors import MemoryNotFoundError, PreconditionFailedError
from ..models import ConversationMeta
from . import keys, names, validate
from .codec import ConversationRecord

MAX_MESSAGES = 10_000
DELETE_BATCH = 1000  # keys listed, then deleted in one batch (S3's most per request)
STALE_INDEX_BATCH = 16  # superseded index entries a meta may owe before a batch delete

Meta = tuple[ConversationRecord | None, str | None]


# --- meta ------------------------------------------------------------------


def load_meta(cid: str) -> Generator[Op, Any, Meta]:
    """The stored meta and its etag, as is (possibly marked deleting)."""
    return (yield from load_meta_at(keys.meta_key(cid)))


def load_meta_at(meta_key: str) -> Generator[Op, Any, Meta]:
    blob = yield from get(meta_key)
    if blob is None:
        return None, None
    return ConversationRecord.decode(blob.data), blob.etag


def load_live_meta(cid: str) -> Generator[Op, Any, Meta]:
    """Meta for a writer: finishes an interrupted deletion or clean-up first."""
    # The Get is yielded here, not through load_meta: every write of the
    # store starts here, and each generator layer costs every step a call.
    blob: Blob | None = yield Get(keys.meta_key(cid))
    if blob is None:
        return None, None
    record, etag = ConversationRecord.decode(blob.data), blob.etag
    if record.reservation:
        # A batch's reservation of a new id (see appends.py) is removed by
        # meta alone, if-match: its batch may commit at any moment, and a
        # commit between this Get and a removal of its keys would be lost.
        # Its blobs stay behind as leftovers that no meta vouches for: the
        # next append overwrites them (appends._help_pending).
        yield from delete(keys.meta_key(cid), if_match=etag)
        return None, None
    if not record.live:
        # A deletion cut short, or racing this writer: finished sparing what
        # is written after it. Without transactions, the deleting writer (or
        # another helper) may have finished it and begun a new conversation
        # under the id since this Get: a plain removal would delete that
        # conversation's keys and meta (its state, in a CI run).
        yield from _remove_committed(cid, record, etag)
        return None, None
    if record.tombstones:
        gen = record.generation
        yield from delete_many(keys.message_key(cid, seq, gen) for seq in record.tombstones)
        record.drop_tombstones()
    return record, etag


def save_meta(cid: str, record: ConversationRecord, etag: str | None) -> Generator[Op, Any, str]:
    info: BlobInfo = yield Put(keys.meta_key(cid), record.encode(), etag, etag is None)
    return info.etag


def visible_meta(cid: str) -> Generator[Op, Any, ConversationRecord | None]:
    """Meta for a reader: None when missing or being deleted."""
    return visible_record((yield from get(keys.meta_key(cid))))


def visible_record(blob: Blob | None) -> ConversationRecord | None:
    """The meta a meta blob holds for a reader: None when missing or being deleted."""
    if blob is None:
        return None
    record = ConversationRecord.decode(blob.data)
    return record if record.live else None


# --- index entries ---------------------------------------------------------


def index_keys(cid: str, record: ConversationRecord) -> list[str]:
    """The entries meta vouches for: one per index, at ``last_message_at``."""
    return index_keys_at(cid, (record.last_message_at, record.last_tie), record.user_ids)


def index_keys_at(cid: str, position: keys.Position, user_ids: list[str]) -> list[str]:
    # keys.index_key for each index, with the part they share made once
    tail = f"{keys.index_rank(position)}/{keys.id_segment(cid)}"
    if not user_ids:
        return [keys.INDEX_ALL + tail]
    return [keys.INDEX_ALL + tail] + [keys.user_index_prefix(uid) + tail for uid in user_ids]


def superseded_index_keys(cid: str, record: ConversationRecord) -> list[str]:
    """Entries of earlier ``last_message_at`` values whose deletion meta still
    owes (``superseded_at``, kept on backends with costly requests)."""
    return [
        key
        for position in record.superseded_at
        if position != record.position
        for key in index_keys_at(cid, position, record.user_ids)
    ]


def owned_index_keys(cid: str, record: ConversationRecord) -> list[str]:
    """Every entry that may exist on meta's account: current and superseded."""
    return index_keys(cid, record) + superseded_index_keys(cid, record)


def add_index_entries(before: list[str], after: list[str]) -> Generator[Op, Any, list[str]]:
    """Write the entries in ``after`` that ``before`` lacks. Called before meta
    is saved: until then they disagree with meta and readers skip them."""
    added = [key for key in after if key not in before]
    for key in added:
        yield Put(key, b"", None, False)
    return added


def remove_index_entries(before: list[str], after: list[str]) -> Generator[Op, Any, None]:
    """Delete the entries of ``before`` that ``after`` no longer has (after meta is saved)."""
    yield from delete_many(key for key in before if key not in after)


def entry_is_current(
    entry_key: str, prefix: str, user_segment: str | None, record: ConversationRecord | None
) -> bool:
    """Whether meta vouches for the entry (``user_segment``: the key segment
    of the per-user index's user, None for the recency index)."""
    if record is None or not record.live:
        return False
    (at, tie), _ = keys.parse_index_key(prefix, entry_key)
    return (at, tie) == (keys.clamp_time(record.last_message_at), record.last_tie) and (
        user_segment is None or any(keys.id_segment(u) == user_segment for u in record.user_ids)
    )


def delete_range(
    prefix: str, *, end_before: str | None = None, keep: str | None = None
) -> Generator[Op, Any, None]:
    def remove(batch: list[BlobInfo]) -> Generator[Op, Any, None]:
        yield from delete_many(info.key for info in batch if info.key != keep)

    yield from each_batch(prefix, remove, size=DELETE_BATCH, end_before=end_before)


def all_keys(prefix: str) -> Generator[Op, Any, list[BlobInfo]]:
    """Every key under ``prefix``, listed in batches within the unit."""
    listed: list[BlobInfo] = []
    yield from each_batch(prefix, listed.extend, size=DELETE_BATCH)
    return listed


# --- conversations ---------------------------------------------------------


def get_conversation(cid: str) -> Program[ConversationMeta | None]:
    record = yield from visible_meta(cid)
    return None if record is None else record.public()


def update_conversation(
    cid: str, patch: dict[str, Any], now: int | None = None
) -> Program[ConversationMeta]:
    record, etag = yield from load_live_meta(cid)
    if record is None:
        raise MemoryNotFoundError(f"conversation_id {cid!r} not found")
    merge_metadata(record, patch)
    if now is not None:  # the last write retention judges by (lifecycle.activity)
        record.touched_at = max(now, record.touched_at or 0)
    yield from save_meta(cid, record, etag)
    return record.public()


def merge_metadata(record: ConversationRecord, patch: dict[str, Any]) -> None:
    """``update_conversation``'s shallow merge of ``patch`` into ``record``'s
    metadata (a value of None deletes its key), checked before meta is saved."""
    stored = dict(record.metadata)
    for key, value in patch.items():
        if value is None:
            record.metadata.pop(key, None)
        else:
            record.metadata[key] = value
    validate.merged_metadata(record.metadata, stored)


def delete_conversation(cid: str, linked_from: frozenset[str] = frozenset()) -> Program[None]:
    record, etag = yield from load_meta(cid)
    if record is not None and record.live:
        yield from _commit_deletion(cid, record, etag)
    if record is None:
        yield from _delete_linked(cid, linked_from)
        yield from delete_range(keys.conversation_prefix(cid))
    else:
        yield from _remove_conversation(cid, record, linked_from)


def delete_if_unchanged(
    cid: str,
    record: ConversationRecord,
    etag: str | None,
    *,
    atomic: bool,
    listed: list[str] | None = None,
) -> Program[bool]:
    """Delete the conversation whose meta the caller read in this unit as
    ``record`` (etag ``etag``) and judged (retention: idle), only if nothing
    was written to it since: the deletion above with that precondition.
    False when something was (nothing is deleted then).

    In a transaction (``atomic``) the read is the precondition: the removal
    follows, no intent needed (nobody sees it half done), and what a listing
    of the conversation shows is what is deleted, in one batch (``listed``:
    its keys, meta's included, when the caller listed them in this unit).
    Without one the
    intent is committed if-match ``etag`` (a writer that came between makes
    it fail), and the removal spares whatever is written after the commit
    (:func:`_remove_committed`). A meta marked deleting already (a deletion
    cut short) is finished the same way."""
    if atomic:
        if listed is None:
            listed = [info.key for info in (yield from all_keys(keys.conversation_prefix(cid)))]
        links = keys.links_prefix(cid)
        linked = [keys.linked_segment(key) for key in listed if key.startswith(links)]
        yield from _delete_linked(cid, frozenset(), linked)
        yield from delete_many([*listed, *owned_index_keys(cid, record)])
        return True
    if record.live:
        try:
            etag = yield from _commit_deletion(cid, record, etag)
        except PreconditionFailedError:
            return False
    yield from _remove_committed(cid, record, etag)
    return True


def _commit_deletion(
    cid: str, record: ConversationRecord, etag: str | None
) -> Generator[Op, Any, str]:
    """A deletion's commit point: meta marked deleting, if-match ``etag``."""
    record.mark_deleting()
    return (yield from save_meta(cid, record, etag))


def linked_segments(cid: str) -> Generator[Op, Any, list[str]]:
    """The segments of the ids an adapter keeps ``cid``'s data under (its links)."""
    links = yield from list_keys(keys.links_prefix(cid))
    return [keys.linked_segment(info.key) for info in links]


def _delete_linked(
    cid: str, linked_from: frozenset[str], segments: list[str] | None = None
) -> Generator[Op, Any, None]:
    """Delete the conversations ``cid`` links to (before the links themselves,
    so an interrupted deletion still knows them when it is finished);
    ``segments``: the links' segments, when the caller listed them."""
    seen = linked_from | {cid}
    if segments is None:
        segments = yield from linked_segments(cid)
    for segment in segments:
        other = yield from names.resolve(keys.id_segment(cid), segment)
        if other not in seen:
            yield from delete_conversation(other, seen)


def _remove_conversation(
    cid: str, record: ConversationRecord, linked_from: frozenset[str] = frozenset()
) -> Generator[Op, Any, None]:
    """Second half of a deletion whose intent is committed in meta."""
    yield from _delete_linked(cid, linked_from)
    meta_key = keys.meta_key(cid)
    yield from delete_range(keys.conversation_prefix(cid), keep=meta_key)
    yield from delete_many(owned_index_keys(cid, record))
    yield from delete(meta_key, quiet=True)


def _remove_committed(
    cid: str, record: ConversationRecord, committed: str | None
) -> Generator[Op, Any, None]:
    """Second half of :func:`delete_if_unchanged` without transactions: remove
    a conversation whose deletion is committed in meta (etag ``committed``)
    without deleting anything written after that commit, by a writer that
    meanwhile finished the deletion itself and started a new conversation
    under the id. The keys are listed first; meta still carrying the commit
    is checked; each listed key goes if-match the etag listed (a key
    rewritten since has another: every backend's etags are unique per
    write), meta last, again if-match."""
    yield from _delete_linked(cid, frozenset())
    meta_key = keys.meta_key(cid)
    listed = [i for i in (yield from all_keys(keys.conversation_prefix(cid))) if i.key != meta_key]
    current = yield from get(meta_key)
    if current is None or current.etag != committed:
        return  # another writer finished the removal; what is there now is theirs
    for info in listed:
        try:
            yield from delete(info.key, if_match=info.etag)
        except PreconditionFailedError:
            pass  # gone already, or rewritten by a new conversation's writer
    # The index entries are at meta's positions (a new conversation's own are
    # at later ones): the per-user ones go first, then meta, then the recency
    # index's, so a removal cut short anywhere leaves either meta (marked
    # deleting, with its recency entry) or a recency entry alone, and either
    # leads the next prune to finish (lifecycle.retention).
    entries = owned_index_keys(cid, record)
    yield from delete_many(key for key in entries if not key.startswith(keys.INDEX_ALL))
    try:
        yield from delete(meta_key, if_match=committed)
    except PreconditionFailedError:
        pass
    yield from delete_many(key for key in entries if key.startswith(keys.INDEX_ALL))
