"""Import JSON lines written by :func:`makers_store.transfer.export_jsonl`.

The file is read twice: first every line is validated (nothing is written if
one is bad; the error names the line; see :mod:`makers_store.import_records`),
then the records are written. Each
conversation in the file *replaces* the one with that id: afterwards its
messages (with their ids and timestamps), metadata, users, state and adapter
data are exactly the file's, and ``next_seq`` is recomputed from the message
ids. Conversations not in the file are untouched, so importing the same file
twice leaves the same store. Message blobs are written before the meta that
makes them visible; index entries are moved with the meta.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from . import keys
from .blob import BlobStore, Program, delete, delete_many, list_keys, put
from .codec import ConversationRecord
from .import_records import (
    MAX_BLOB_KEY_BYTES,
    MAX_IMPORTED_SEQ,
    Group,
    ImportedConversation,
    ImportedMessage,
    KeyedRecord,
    grouped,
    validate_jsonl,
)
from .programs import (
    add_index_entries,
    index_keys,
    load_live_meta,
    load_meta,
    owned_index_keys,
    remove_index_entries,
    save_meta,
)
from .retry import DEFAULT_RETRY
from .transfer import CHUNK_BYTES, TransferCounts

__all__ = ["MAX_BLOB_KEY_BYTES", "MAX_IMPORTED_SEQ", "import_jsonl", "validate_jsonl"]

_LIST_BATCH = 500


# --- import: writing -------------------------------------------------------------


def _prepare(cid: str) -> Program[None]:
    """Finish an interrupted deletion or message removal before writing blobs
    that the conversation's pending clean-up would otherwise remove."""
    stored, _ = yield from load_meta(cid)
    if stored is None or not (stored.deleting or stored.tombstones):
        return
    record, etag = yield from load_live_meta(cid)
    if record is not None:
        yield from save_meta(cid, record, etag)


def _put_all(items: list[tuple[str, bytes]]) -> Program[None]:
    for key, data in items:
        yield from put(key, data)


def _delete_unlisted(prefix: str, keep: Callable[[str], bool]) -> Program[None]:
    start_after: str | None = None
    while True:
        batch = yield from list_keys(prefix, start_after=start_after, limit=_LIST_BATCH)
        yield from delete_many(info.key for info in batch if not keep(info.key))
        if len(batch) < _LIST_BATCH:
            return
        start_after = batch[-1].key


def _commit(group: Group) -> Program[None]:
    """Make the conversation exactly the file's: drop what the file lacks,
    then write meta (the commit point) and move its index entries."""
    cid = group.cid
    record, etag = yield from load_live_meta(cid)
    before = owned_index_keys(cid, record) if record is not None else []
    yield from _delete_unlisted(
        keys.messages_prefix(cid), lambda key: keys.seq_from_message_key(key) in group.seqs
    )
    yield from _delete_unlisted(
        keys.state_prefix(cid), lambda key: keys.state_name_from_key(key) in group.state_names
    )
    adapters = keys.adapters_prefix(cid)
    yield from _delete_unlisted(adapters, lambda key: key[len(adapters) :] in group.adapter_paths)
    imported = group.conversation
    if imported is None:
        if record is not None:
            yield from delete_many(before)
            yield from delete(keys.meta_key(cid), if_match=etag)
        return
    new = ConversationRecord(
        conversation_id=cid,
        created_at=imported.created_at,
        last_message_at=imported.last_message_at,
        message_count=len(group.seqs),
        metadata=dict(imported.metadata),
        next_seq=max(group.seqs) + 1 if group.seqs else 0,
        user_ids=list(imported.user_ids),
    )
    after = index_keys(cid, new)
    yield from add_index_entries(before, after)
    yield from save_meta(cid, new, etag)
    yield from remove_index_entries(before, after)


async def _run_retrying(blobs: BlobStore, make: Callable[[], Program[None]]) -> None:
    """Run a commit or preparation unit, again when a writer of the same
    conversation got in between (the one retry policy of every store)."""
    await DEFAULT_RETRY.run(lambda: blobs.run(make(), write=True))


class _Writer:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.pending: list[tuple[str, bytes]] = []
        self.pending_bytes = 0

    async def put(self, key: str, data: bytes) -> None:
        self.pending.append((key, data))
        self.pending_bytes += len(data)
        if self.pending_bytes >= CHUNK_BYTES:
            await self.flush()

    async def flush(self) -> None:
        if self.pending:
            items, self.pending, self.pending_bytes = self.pending, [], 0
            await self.blobs.run(_put_all(items), write=True)


async def import_jsonl(
    blobs: BlobStore,
    source: Callable[[], Iterable[str | bytes]],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> TransferCounts:
    """Validate every line of ``source()`` then write them (``source`` is
    called once per pass). ``progress(done, total)`` reports lines written."""
    total = validate_jsonl(source())
    counts = TransferCounts()
    writer = _Writer(blobs)
    for number, record, group, ended in grouped(source()):
        if ended is not None:
            await writer.flush()
            await _run_retrying(blobs, partial(_commit, ended))
        if group is not None and group.first_line == number:
            await _run_retrying(blobs, partial(_prepare, group.cid))
        if isinstance(record, ImportedConversation):
            counts.conversations += 1
        elif isinstance(record, ImportedMessage):
            counts.messages += 1
            await writer.put(keys.message_key(record.cid, record.seq), record.data)
        elif isinstance(record, KeyedRecord):
            if record.kind == "state":
                counts.state_entries += 1
            elif record.kind == "adapter":
                counts.adapter_blobs += 1
            else:
                counts.blobs += 1
            await writer.put(record.key, record.data)
        if progress is not None and number <= total:
            progress(number, total)
    await writer.flush()
    return counts
