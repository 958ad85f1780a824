"""Replacing one whole conversation at once (``import``, ``copy``).

Write the new content where no reader looks, then swap the pointer: the
conversation's new messages and state go to a fresh *generation*
(``c/{cid}/g/{gen}/``, see :mod:`makers_store._core.keys`); meta, the commit point,
is written last, with if-match on the etag read at the start, and names the
generation. So whether the run fails, is killed or is read meanwhile, a
reader sees the conversation as it was or as replaced, never a mix:

* On SQLite and PostgreSQL the whole replacement is one transaction anyway.
* The generation that was current stays until the *next* replacement (or
  the conversation's deletion): a reader that read the old meta just before
  the swap still finds its messages when it lists them a moment later (read
  units on PostgreSQL and object storage are not snapshots). So a
  conversation replaced twice or more keeps one earlier copy of its
  messages and state, invisible, until it is replaced again.
* Older generations, and one left by a replacement killed before its swap,
  are deleted by the next replacement, which deletes only generations it
  listed *before* writing its own: one that another replacement is still
  writing may go too, but that replacement's commit then fails its if-match
  (meta changed) and it starts again.
* A writer that read meta before the swap and writes after it writes into
  the old generation, as if it had written just before the replacement.

Two parts of a conversation have no generation:

* Adapter data (``c/{cid}/x/``): adapters read their keys without meta.
  Each adapter object has its own commit point (a LangGraph checkpoint is
  one blob; a Claude transcript's head comes after its batches in key
  order, the order of the file), so during a replacement each object reads
  old or new, but they switch one by one. Adapter blobs the file lacks are
  deleted after the commit.
* A conversation without meta (state or adapter data only) has no pointer to
  swap: its state is replaced in place, at once on SQLite and PostgreSQL,
  key by key on object storage.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

from .._core import keys, names
from .._core.codec import ConversationRecord
from .._core.programs import (
    add_index_entries,
    delete_range,
    index_keys,
    load_live_meta,
    owned_index_keys,
    remove_index_entries,
    save_meta,
)
from ..blob_ops import (
    BlobInfo,
    Op,
    Program,
    delete,
    delete_many,
    each_batch,
    put,
    segments_under,
)
from ..clock import IdSource
from .import_records import (
    ImportedAlias,
    ImportedConversation,
    ImportedMessage,
    KeyedRecord,
    Record,
)


def replace_conversation(
    cid: str,
    records: Iterable[Record],
    *,
    has_conversation: bool,
    new_generation: IdSource,
) -> Program[None]:
    """Make conversation ``cid`` exactly ``records`` (one conversation's
    records of a checked export file, in file order)."""
    record, etag = yield from load_live_meta(cid)  # finishes a deletion first
    current = "" if record is None else record.generation
    existing = yield from _generations(cid)
    gen = ""
    if has_conversation:
        gen = new_generation()
        while gen == current or gen in existing or not keys.is_generation(gen):
            gen = new_generation()
    imported: ImportedConversation | None = None
    seqs: list[int] = []
    named = -1  # the highest seq an id in the file's records names
    shown = 0  # the latest time they show
    state_names: set[str] = set()
    adapter_paths: set[str] = set()
    adapters = keys.adapters_prefix(cid)
    for item in records:
        if isinstance(item, ImportedConversation):
            imported = item
        elif isinstance(item, ImportedMessage):
            seqs.append(item.seq)
            named, shown = max(named, item.named_seq), max(shown, item.shown_at)
            yield from put(keys.message_key(cid, item.seq, gen), item.data)
            if item.client_id is not None:
                yield from put(
                    keys.alias_key(cid, item.client_id, gen), keys.encode_alias(item.seq)
                )
        elif isinstance(item, ImportedAlias):
            yield from put(keys.alias_key(cid, item.client_id, gen), keys.encode_alias(item.seq))
        elif isinstance(item, KeyedRecord) and item.kind == "state":
            named = max(named, item.named_seq)
            state_names.add(item.name)
            yield from put(keys.state_key(cid, item.name, gen), item.data)
        elif isinstance(item, KeyedRecord) and item.kind == "adapter":
            adapter_paths.add(item.name)
            yield from put(item.key, item.data)
    before = owned_index_keys(cid, record) if record is not None else []
    if imported is None:  # no meta to swap: replace in place
        kept = {keys.id_segment(name) for name in state_names}
        yield from _delete_unlisted(
            keys.state_prefix(cid), lambda key: keys.state_segment_of_key(key) in kept
        )
        yield from delete_range(keys.messages_prefix(cid))
        yield from delete_range(keys.aliases_prefix(cid))
        if record is not None:
            yield from delete_many(before)
            yield from delete(keys.meta_key(cid), if_match=etag)
    else:
        new = ConversationRecord(
            conversation_id=cid,
            created_at=imported.created_at,
            last_message_at=imported.last_message_at,
            message_count=len(seqs),
            metadata=dict(imported.metadata),
            next_seq=imported.next_seq if imported.next_seq is not None else 0,
            cleared_below=imported.cleared_below,
            user_ids=list(imported.user_ids),
            generation=gen,
            last_tie=imported.last_tie,
            touched_at=imported.touched_at,
        )
        if imported.next_seq is None:
            _derive(new, max(named, imported.named_seq, *seqs), shown)
        after = index_keys(cid, new)
        yield from add_index_entries(before, after)
        yield from save_meta(cid, new, etag)  # the swap
        yield from remove_index_entries(before, after)
    for old in existing | {""}:
        if old not in (gen, current):  # the one current until now stays (see above)
            yield from _delete_generation(cid, old)
    yield from _delete_unlisted(adapters, lambda key: key[len(adapters) :] in adapter_paths)
    # Names of bounded ids last: a file from before they existed lacks them.
    yield from names.remember(cid, *state_names)


def _derive(record: ConversationRecord, named: int, shown: int) -> None:
    """What a file from before export carried ``next_seq`` and ``touched_at``
    says of them, the safe way: the next seq is past every message id the
    conversation's records name (its messages' and those in metadata and
    state: a summary mark, a cursor kept by the app), so no deleted
    message's seq is handed out again while something names it; the last
    write is no older than any time the records show (a message's update),
    so retention never finds the import idler than the file shows."""
    record.next_seq = max(record.next_seq, named + 1, record.cleared_below)
    if shown > record.last_message_at:
        record.touched_at = shown


def _generations(cid: str) -> Generator[Op, Any, set[str]]:
    """The generations holding keys under ``c/{cid}/g/`` (one listing each)."""
    return set((yield from segments_under(keys.generations_prefix(cid))))


def _delete_generation(cid: str, gen: str) -> Generator[Op, Any, None]:
    yield from delete_range(keys.messages_prefix(cid, gen))
    yield from delete_range(keys.aliases_prefix(cid, gen))
    yield from delete_range(keys.state_prefix(cid, gen))


_LIST_BATCH = 500


def _delete_unlisted(prefix: str, keep: Callable[[str], bool]) -> Generator[Op, Any, None]:
    def remove(batch: list[BlobInfo]) -> Generator[Op, Any, None]:
        yield from delete_many(info.key for info in batch if not keep(info.key))

    yield from each_batch(prefix, remove, size=_LIST_BATCH)
