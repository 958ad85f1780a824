"""I/O-free programs of the LangGraph checkpointer, and the bytes it stores.

The programs move opaque bytes under the keys of :mod:`makers_store._core.keys`
("LangGraph checkpoints"); :mod:`.langgraph_checkpoint_records` turns
checkpoints into those bytes with LangGraph's serializer and back.

Record format: one line of JSON (the header: ids, serializer type tags,
sizes; ``json.dumps`` never emits a raw newline) then ``\\n`` then the
serialized payloads as raw bytes, concatenated. Bytes stay bytes (no base64)
and a blob listing in the CLI still shows readable ids.

Write order, for backends that run a program one step at a time: a
checkpoint's run marker is written before the checkpoint (a marker without a
checkpoint is harmless), and deletions remove the checkpoint first, then its
writes and marker, so a crash never shows a checkpoint whose writes are gone.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from makers_store._core import adapter_keys, keys, names
from makers_store._core.activity import touch
from makers_store._core.codec import ConversationRecord
from makers_store._core.programs import delete_range, load_live_meta
from makers_store.blob_ops import (
    Entry,
    Op,
    Program,
    delete,
    delete_many,
    each_batch,
    get,
    get_many,
    list_keys,
    prefix_end,
    put,
    put_if_absent,
    scan,
    segments_under,
)
from makers_store.errors import MemoryCorruptError

PAGE = 500


# --- records -----------------------------------------------------------------


def pack(header: dict[str, Any], *payloads: bytes) -> bytes:
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return b"".join((head.encode(), b"\n", *payloads))


def unpack(data: bytes) -> tuple[dict[str, Any], memoryview]:
    """The header and the payload bytes of a record."""
    try:
        split = data.index(b"\n")
        header = json.loads(data[:split])
    except ValueError as exc:
        raise MemoryCorruptError(f"a LangGraph checkpoint record does not decode: {exc}") from exc
    if not isinstance(header, dict):
        raise MemoryCorruptError("a LangGraph checkpoint record has no header object")
    return header, memoryview(data)[split + 1 :]


class StoredCheckpoint(NamedTuple):
    """A checkpoint record and the records of its pending writes."""

    checkpoint_ns: str
    data: bytes
    writes: list[bytes]


class WriteRecord(NamedTuple):
    key: str
    data: bytes
    keep_first: bool  # regular writes: an existing record wins (idempotent retries)


# --- reads -------------------------------------------------------------------


def _with_writes(
    thread_id: str, checkpoint_ns: str, entries: Sequence[Entry]
) -> Generator[Op, Any, list[StoredCheckpoint]]:
    """The checkpoints with their writes, read in one scan whatever their
    number: the writes of a run of consecutive checkpoints are one key range
    (orphaned writes of deleted checkpoints inside it are read and dropped)."""
    if not entries:
        return []
    base = adapter_keys.langgraph_writes_base(thread_id, checkpoint_ns)
    prefixes = [
        adapter_keys.langgraph_writes_prefix(
            thread_id,
            checkpoint_ns,
            adapter_keys.restore_checkpoint_id(entry.key.rsplit("/", 1)[1]),
        )
        for entry in entries
    ]
    writes: dict[str, list[bytes]] = {prefix: [] for prefix in prefixes}
    if len(prefixes) == 1:
        found = yield from scan(prefixes[0])
    else:  # every key under the lowest prefix sorts after it without its "/"
        found = yield from scan(
            base, start_after=min(prefixes)[:-1], end_before=prefix_end(max(prefixes))
        )
    for write in found:
        owner = writes.get(write.key[: write.key.index("/", len(base)) + 1])
        if owner is not None:
            owner.append(write.data)
    return [
        StoredCheckpoint(checkpoint_ns, entry.data, writes[prefix])
        for entry, prefix in zip(entries, prefixes, strict=True)
    ]


def _being_deleted(thread_id: str) -> Generator[Op, Any, bool]:
    """Whether the thread's conversation is being deleted (its meta marked
    so: a ``delete_conversation`` or prune committed and removing its keys,
    or a fork's reservation not yet committed). Without transactions the
    removal takes many steps, and a reader would see the thread's newest
    checkpoints gone and older ones still there; so readers there look at
    meta first and see nothing at once, as the store's own readers do."""
    blob = yield from get(keys.meta_key(thread_id))
    return blob is not None and not ConversationRecord.decode(blob.data).live


def load_checkpoint(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str | None, stepwise: bool = False
) -> Program[StoredCheckpoint | None]:
    """The checkpoint named, or the latest of (thread, namespace), with its
    writes. ``stepwise``: the backend has no transactions (see
    :func:`_being_deleted`)."""
    if stepwise and (yield from _being_deleted(thread_id)):
        return None
    prefix = adapter_keys.langgraph_checkpoints_prefix(thread_id, checkpoint_ns)
    if checkpoint_id is None:
        entries = yield from scan(prefix, limit=1)
    else:
        blob = yield from get(
            adapter_keys.langgraph_checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
        )
        entries = [] if blob is None else [Entry(blob.key, blob.data)]
    found = yield from _with_writes(thread_id, checkpoint_ns, entries)
    return found[0] if found else None


def list_checkpoints(
    thread_id: str, checkpoint_ns: str, before_id: str | None, limit: int, stepwise: bool = False
) -> Program[list[StoredCheckpoint]]:
    """Up to ``limit`` checkpoints older than ``before_id``, newest first
    (``stepwise``: as in :func:`load_checkpoint`)."""
    if stepwise and (yield from _being_deleted(thread_id)):
        return []
    prefix = adapter_keys.langgraph_checkpoints_prefix(thread_id, checkpoint_ns)
    start = None if before_id is None else prefix + adapter_keys.invert_checkpoint_id(before_id)
    entries = yield from scan(prefix, start_after=start, limit=limit)
    return (yield from _with_writes(thread_id, checkpoint_ns, entries))


def namespaces(thread_id: str) -> Program[list[str]]:
    """Every checkpoint namespace of a thread that holds data."""
    segments = yield from segments_under(adapter_keys.langgraph_prefix(thread_id))
    return [adapter_keys.langgraph_ns_of_segment(s) for s in segments if s.startswith("n")]


def threads() -> Generator[Op, Any, list[str]]:
    """Every thread (conversation) with LangGraph checkpoints: one listing per
    conversation in the store, so only for whole-store calls."""
    found = []
    for segment in (yield from segments_under(keys.CONVERSATIONS)):
        marker = yield from list_keys(f"{keys.CONVERSATIONS}{segment}/x/langgraph/", limit=1)
        if marker:
            found.append((yield from names.resolve(segment, segment)))
    return found


# --- writes ------------------------------------------------------------------


def put_checkpoint(
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    data: bytes,
    run_id: str | None,
    now: int | None = None,
) -> Program[int | None]:
    """Store one checkpoint. ``now`` stamps the write into the conversation's
    meta first, when it has one (:mod:`makers_store._core.activity`): a
    thread that ran lately is not idle, and a prune racing this put keeps it.

    Returns when the saver's next puts may skip the meta read from (None
    when ``now`` is None: nothing was read): the stamp meta now holds (ours,
    or a younger one another writer left), or ``now`` when the thread has no
    meta to stamp (see :data:`~makers_store._core.activity.TOUCH_RESOLUTION_MS`
    for why both are safe for a resolution)."""
    stamped = None
    if now is not None:
        record, etag = yield from load_live_meta(thread_id)
        yield from touch(thread_id, record, etag, now)
        stamped = now if record is None or record.touched_at is None else record.touched_at
    yield from names.remember(thread_id)  # a bounded thread id, for threads()
    if run_id is not None:
        yield from put(
            adapter_keys.langgraph_run_key(thread_id, run_id, checkpoint_ns, checkpoint_id), b""
        )
    yield from put(
        adapter_keys.langgraph_checkpoint_key(thread_id, checkpoint_ns, checkpoint_id), data
    )
    return stamped


def put_writes(records: Sequence[WriteRecord]) -> Program[None]:
    """Store the writes without waiting for any answer (nothing reads one):
    one round trip for the whole unit on PostgreSQL."""
    for record in records:
        if record.keep_first:  # one stored by an earlier attempt of the same task stays
            yield from put_if_absent(record.key, record.data)
        else:
            yield from put(record.key, record.data)


def _delete_checkpoint(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str, run_id: str | None
) -> Generator[Op, Any, int]:
    """Delete one checkpoint, then its writes and run marker; returns how
    many writes it had."""
    yield from delete(
        adapter_keys.langgraph_checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
    )
    writes_prefix = adapter_keys.langgraph_writes_prefix(thread_id, checkpoint_ns, checkpoint_id)
    writes = yield from list_keys(writes_prefix)
    yield from delete_many(info.key for info in writes)
    if run_id is not None:
        yield from delete(
            adapter_keys.langgraph_run_key(thread_id, run_id, checkpoint_ns, checkpoint_id)
        )
    return len(writes)


def delete_thread(thread_id: str) -> Program[None]:
    yield from delete_range(adapter_keys.langgraph_prefix(thread_id))


def copy_thread(source_id: str, target_id: str) -> Program[None]:
    """Copy every record; keys differ only in the prefix and records never
    name their thread, so this is a byte copy."""
    source, target = (
        adapter_keys.langgraph_prefix(source_id),
        adapter_keys.langgraph_prefix(target_id),
    )
    yield from names.remember(target_id)

    def copy(entries: list[Entry]) -> Generator[Op, Any, None]:
        for entry in entries:
            yield from put(target + entry.key[len(source) :], entry.data)

    yield from each_batch(source, copy, size=PAGE, values=True)


#: 100-ns intervals from the UUID epoch (1582-10-15) to the Unix epoch
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def checkpoint_time_ms(checkpoint_id: str) -> int | None:
    """When a checkpoint was made (Unix milliseconds), read from its id:
    LangGraph's ids are UUIDv6, whose first 60 bits are the time. None for an
    id of any other form, which carries no time."""
    try:
        value = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if value.version != 6:
        return None
    bits = value.int
    stamp = ((bits >> 96) << 28) | (((bits >> 80) & 0xFFFF) << 12) | ((bits >> 64) & 0x0FFF)
    return (stamp - _UUID_EPOCH_OFFSET) // 10_000


def copy_checkpoints(
    source_id: str,
    target_id: str,
    checkpoint_ns: str,
    before: str | None,
    until_ms: int | None,
    limit: int = PAGE,
) -> Program[str | None]:
    """One page of a thread copy (``store.fork_conversation``): up to
    ``limit`` checkpoints of one namespace, oldest first, starting below the
    source key ``before`` (None: from the oldest); returns the key to pass as
    ``before`` next, None when the namespace is done.

    With ``until_ms``, only checkpoints made at or before that time are
    copied (and those whose id carries no time, see
    :func:`checkpoint_time_ms`): a checkpoint's parent is older than it, so
    what is kept holds the complete parent chain of every kept checkpoint,
    which LangGraph's DeltaChannel walks to rebuild its values. Each
    checkpoint goes with its pending writes and run marker, written before
    it (its commit point, as in :func:`put_checkpoint`); oldest first, so a
    copy cut short holds an older part of the thread, every parent chain whole."""
    prefix = adapter_keys.langgraph_checkpoints_prefix(source_id, checkpoint_ns)
    source = adapter_keys.langgraph_prefix(source_id)
    target = adapter_keys.langgraph_prefix(target_id)
    # Keys first, then values: object storage lists backward by reading the
    # window's keys forward, which costs far less than reading its values.
    infos = yield from list_keys(prefix, end_before=before, reverse=True, limit=limit)
    blobs = yield from get_many(info.key for info in infos)
    for entry in blobs:
        if entry is None:  # deleted since listed
            continue
        checkpoint_id = adapter_keys.restore_checkpoint_id(entry.key[len(prefix) :])
        made = None if until_ms is None else checkpoint_time_ms(checkpoint_id)
        if made is not None and until_ms is not None and made > until_ms:
            continue
        writes = yield from scan(
            adapter_keys.langgraph_writes_prefix(source_id, checkpoint_ns, checkpoint_id)
        )
        for write in writes:
            yield from put(target + write.key[len(source) :], write.data)
        run_id = run_of(entry.data)
        if run_id is not None:
            yield from put(
                adapter_keys.langgraph_run_key(target_id, run_id, checkpoint_ns, checkpoint_id),
                b"",
            )
        yield from put(target + entry.key[len(source) :], entry.data)
    return infos[-1].key if len(infos) == limit else None


def run_of(data: bytes) -> str | None:
    run = unpack(data)[0].get("run")
    return run if isinstance(run, str) else None


class DeltaLinks(NamedTuple):
    """One checkpoint as the DeltaChannel rule sees it
    (:func:`.langgraph_checkpoint_records.delta_links` reads it)."""

    parent: str | None
    values: frozenset[str]  # channels whose value (or _DeltaSnapshot) it stores
    owed: frozenset[str]  # delta channels whose value is rebuilt from ancestors


#: Reads :class:`DeltaLinks` from a checkpoint record (pure: no I/O).
Inspect = Callable[[bytes], DeltaLinks]


@dataclass(slots=True)
class PruneTally:
    """What :func:`keep_latest` deleted, kept across retries of its unit."""

    checkpoints: int = 0
    writes: int = 0
    kept_for_deltas: int = 0


def keep_latest(
    thread_id: str,
    inspect: Inspect | None = None,
    tally: PruneTally | None = None,
    *,
    dry_run: bool = False,
) -> Program[None]:
    """Delete every checkpoint of the thread but the latest of each namespace
    and what LangGraph's DeltaChannel needs to rebuild the latest's state.

    A DeltaChannel stores its value only now and then (a ``_DeltaSnapshot``,
    every ``snapshot_frequency`` updates); between snapshots LangGraph
    rebuilds it by walking the latest checkpoint's parents back to one that
    stores it, replaying their pending writes. So from the latest, every
    ancestor is kept, with its writes, up to and including the nearest one
    that stores a value for each channel the latest still owes
    (``inspect``: the latest's ``owed`` channels, minus each ancestor's
    ``values``). Without ``inspect`` (no serializer to read records with)
    nothing but the latest's own chain back to the thread's root is known
    to be safe, so the whole parent chain is kept.

    Deletes run newest first within a namespace, each checkpoint before its
    writes and marker (:func:`_delete_checkpoint`), so a crash leaves the
    kept chain whole. ``dry_run`` only counts (a read-only program)."""
    tally = PruneTally() if tally is None else tally
    for checkpoint_ns in (yield from namespaces(thread_id)):
        prefix = adapter_keys.langgraph_checkpoints_prefix(thread_id, checkpoint_ns)
        latest = yield from scan(prefix, limit=1)
        if not latest:  # only orphaned writes are left: drop them
            if not dry_run:
                yield from delete_range(prefix[: -len("c/")])
            continue
        keep = yield from _delta_chain(thread_id, checkpoint_ns, latest[0], inspect)
        tally.kept_for_deltas += len(keep) - 1

        def drop(
            older: list[Entry], prefix: str = prefix, keep: set[str] = keep, ns: str = checkpoint_ns
        ) -> Generator[Op, Any, None]:
            for entry in older:
                checkpoint_id = adapter_keys.restore_checkpoint_id(entry.key[len(prefix) :])
                if checkpoint_id in keep:
                    continue
                if dry_run:
                    writes = yield from list_keys(
                        adapter_keys.langgraph_writes_prefix(thread_id, ns, checkpoint_id)
                    )
                    tally.writes += len(writes)
                else:
                    tally.writes += yield from _delete_checkpoint(
                        thread_id, ns, checkpoint_id, run_of(entry.data)
                    )
                tally.checkpoints += 1

        yield from each_batch(prefix, drop, size=PAGE, start_after=latest[0].key, values=True)


def _delta_chain(
    thread_id: str, checkpoint_ns: str, latest: Entry, inspect: Inspect | None
) -> Generator[Op, Any, set[str]]:
    """The ids of the latest checkpoint and the ancestors its delta channels
    are rebuilt from (see :func:`keep_latest`)."""
    header, _ = unpack(latest.data)
    keep = {str(header["id"])}
    links = None if inspect is None else inspect(latest.data)
    owed = None if links is None else set(links.owed - links.values)
    parent = header.get("parent") if links is None else links.parent
    while isinstance(parent, str) and (owed is None or owed):
        blob = yield from get(
            adapter_keys.langgraph_checkpoint_key(thread_id, checkpoint_ns, parent)
        )
        if blob is None:  # the chain was cut before: nothing older is reachable
            break
        keep.add(parent)
        if inspect is None:
            parent = unpack(blob.data)[0].get("parent")
            continue
        links = inspect(blob.data)
        assert owed is not None
        owed -= links.values
        parent = links.parent
    return keep


def delete_runs(thread_ids: Sequence[str], run_ids: Sequence[str]) -> Program[None]:
    for thread_id in thread_ids:
        for run_id in run_ids:
            prefix = adapter_keys.langgraph_run_prefix(thread_id, run_id)
            for info in (yield from list_keys(prefix)):
                checkpoint_ns, checkpoint_id = adapter_keys.parse_langgraph_run_key(
                    prefix, info.key
                )
                yield from _delete_checkpoint(thread_id, checkpoint_ns, checkpoint_id, run_id)
