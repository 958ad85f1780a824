"""Import JSON lines written by :func:`makers_store.transfer.export_jsonl`.

The file is read twice: first every line is validated (nothing is written if
one is bad; the error names the line), then the records are written. Each
conversation in the file *replaces* the one with that id: afterwards its
messages (with their ids and timestamps), metadata, users, state and adapter
data are exactly the file's, and ``next_seq`` is recomputed from the message
ids. Conversations not in the file are untouched, so importing the same file
twice leaves the same store. Message blobs are written before the meta that
makes them visible; index entries are moved with the meta.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import keys, validate
from .blob import BlobStore, Program, delete, delete_many, list_keys, put
from .codec import ConversationRecord, decode_json, encode_json, encode_message, encode_state
from .errors import (
    MemoryConflictError,
    MemoryCorruptError,
    MemoryValidationError,
    PreconditionFailedError,
)
from .programs import (
    MAX_MESSAGES,
    add_index_entries,
    index_keys,
    load_live_meta,
    load_meta,
    owned_index_keys,
    remove_index_entries,
    save_meta,
)
from .transfer import CHUNK_BYTES, FORMAT, VERSION, TransferCounts

_LIST_BATCH = 500
_ATTEMPTS = 20


# --- import: parsing and validation --------------------------------------------


@dataclass(frozen=True, slots=True)
class _Conversation:
    cid: str
    created_at: int
    last_message_at: int
    metadata: dict[str, Any]
    user_ids: list[str]


@dataclass(frozen=True, slots=True)
class _Message:
    cid: str
    seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class _Keyed:
    """A state value, adapter blob or outside blob: a key and its bytes."""

    kind: str  # "state" | "adapter" | "blob"
    cid: str | None
    name: str
    key: str
    data: bytes


_Record = _Conversation | _Message | _Keyed | None  # None: the header


def _get(raw: dict[str, Any], name: str, kinds: type | tuple[type, ...], what: str) -> Any:
    if name not in raw:
        raise MemoryValidationError(f"{what} lacks the field {name!r}")
    value = raw[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and kinds is int):
        raise MemoryValidationError(f"{what}: field {name!r} has the wrong type")
    return value


def _timestamp(raw: dict[str, Any], name: str, what: str) -> int:
    value: int = _get(raw, name, int, what)
    if value < 0:
        raise MemoryValidationError(f"{what}: field {name!r} must not be negative")
    return value


def _data(raw: dict[str, Any], what: str) -> bytes:
    try:
        return base64.b64decode(_get(raw, "data_base64", str, what), validate=True)
    except binascii.Error:
        raise MemoryValidationError(f"{what}: data_base64 is not valid base64") from None


def _parse(raw: Any) -> _Record:
    if not isinstance(raw, dict):
        raise MemoryValidationError("a line must hold a JSON object")
    kind = raw.get("type")
    what = f"a {kind} record" if isinstance(kind, str) else "the record"
    if kind == "header":
        if raw.get("format") != FORMAT or raw.get("version") != VERSION:
            raise MemoryValidationError(f"not a {FORMAT} version {VERSION} header")
        return None
    if kind == "blob":
        key = _get(raw, "key", str, what)
        if not key or key.startswith((keys.CONVERSATIONS, "i/")):
            raise MemoryValidationError(f"{what}: key {key!r} is inside conversations or indexes")
        return _Keyed("blob", None, key, key, _data(raw, what))
    cid = validate.conversation_id(_get(raw, "conversation_id", str, what))
    if kind == "conversation":
        metadata = _get(raw, "metadata", dict, what)
        encode_json(metadata, argument="metadata")
        users = _get(raw, "user_ids", list, what)
        user_ids = [validate.identifier(uid, "user_ids[]") for uid in users]
        if len(set(user_ids)) != len(user_ids):
            raise MemoryValidationError(f"{what}: user_ids holds duplicates")
        created = _timestamp(raw, "created_at", what)
        last = _timestamp(raw, "last_message_at", what)
        return _Conversation(cid, created, last, metadata, user_ids)
    if kind == "message":
        mid = validate.message_id(_get(raw, "message_id", str, what))
        seq = keys.seq_of_message_id(mid)
        if seq is None:
            raise MemoryValidationError(f"{what}: message_id {mid!r} is not msg_<seq>_<suffix>")
        updated = _timestamp(raw, "updated_at", what) if raw.get("updated_at") is not None else None
        data = encode_message(
            message_id=mid,
            role=validate.role(_get(raw, "role", str, what)),
            content_json=validate.content_json(raw.get("content")),
            created_at=_timestamp(raw, "created_at", what),
            metadata_json=validate.metadata_json(raw.get("metadata")),
            updated_at=updated,
        )
        return _Message(cid, seq, data)
    if kind == "state":
        name = validate.state_key(_get(raw, "key", str, what))
        if "value" not in raw:
            raise MemoryValidationError(f"{what} lacks the field 'value'")
        value = encode_state(encode_json(raw["value"], argument="value"))
        return _Keyed("state", cid, name, keys.state_key(cid, name), value)
    if kind == "adapter":
        path = _get(raw, "path", str, what)
        if not path:
            raise MemoryValidationError(f"{what}: path must not be empty")
        key = keys.adapters_prefix(cid) + path
        return _Keyed("adapter", cid, path, key, _data(raw, what))
    raise MemoryValidationError(f"unknown record type {kind!r}")


def _records(source: Iterable[str | bytes]) -> Iterable[tuple[int, _Record]]:
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            yield number, _parse(decode_json(line, what="the line"))
        except (MemoryValidationError, MemoryCorruptError) as exc:
            raise MemoryValidationError(f"line {number}: {exc}") from None


@dataclass(slots=True)
class _Group:
    """What the file holds for one conversation (only what replacing needs)."""

    cid: str
    first_line: int
    conversation: _Conversation | None = None
    message_line: int = 0
    seqs: set[int] = field(default_factory=set)
    state_names: set[str] = field(default_factory=set)
    adapter_paths: set[str] = field(default_factory=set)

    def add(self, number: int, record: _Record) -> None:
        if isinstance(record, _Conversation):
            if self.conversation is not None:
                raise MemoryValidationError(
                    f"line {number}: a second conversation record for {self.cid!r}"
                )
            self.conversation = record
        elif isinstance(record, _Message):
            if record.seq in self.seqs:
                raise MemoryValidationError(
                    f"line {number}: a second message with sequence {record.seq} in {self.cid!r}"
                )
            if len(self.seqs) == MAX_MESSAGES:
                raise MemoryValidationError(
                    f"line {number}: conversation {self.cid!r} holds more than "
                    f"{MAX_MESSAGES} messages"
                )
            self.message_line = self.message_line or number
            self.seqs.add(record.seq)
        elif isinstance(record, _Keyed):
            seen = self.state_names if record.kind == "state" else self.adapter_paths
            label = "state key" if record.kind == "state" else "adapter path"
            if record.name in seen:
                raise MemoryValidationError(
                    f"line {number}: {label} {record.name!r} appears twice for {self.cid!r}"
                )
            seen.add(record.name)

    def close(self) -> None:
        if self.seqs and self.conversation is None:
            raise MemoryValidationError(
                f"line {self.message_line}: messages of conversation_id {self.cid!r} "
                "but no conversation record for it"
            )


def _grouped(
    source: Iterable[str | bytes],
) -> Iterable[tuple[int, _Record, _Group | None, _Group | None]]:
    """(line, record, its group, the group that just ended) per record,
    checking that each conversation's records are contiguous and consistent;
    a final item with record None reports the last group ending."""
    started: set[str] = set()
    outside_keys: set[str] = set()
    group: _Group | None = None
    number = 0
    for number, record in _records(source):
        cid = record.cid if record is not None else None
        ended = None
        if group is not None and group.cid != cid:
            group.close()
            ended, group = group, None
        if cid is not None and group is None:
            if cid in started:
                raise MemoryValidationError(
                    f"line {number}: the records of conversation_id {cid!r} must be contiguous"
                )
            started.add(cid)
            group = _Group(cid, number)
        if group is not None:
            group.add(number, record)
        elif isinstance(record, _Keyed):
            if record.key in outside_keys:
                raise MemoryValidationError(f"line {number}: blob {record.key!r} appears twice")
            outside_keys.add(record.key)
        yield number, record, group, ended
    if group is not None:
        group.close()
    yield number + 1, None, None, group


def validate_jsonl(source: Iterable[str | bytes]) -> int:
    """Check every line without writing; returns the number of lines."""
    last = 0
    for number, _, _, _ in _grouped(source):
        last = number
    return last - 1


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


def _commit(group: _Group) -> Program[None]:
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
    for _ in range(_ATTEMPTS):
        try:
            await blobs.run(make(), write=True)
            return
        except PreconditionFailedError:
            await asyncio.sleep(0.005)
    raise MemoryConflictError(
        f"gave up after {_ATTEMPTS} attempts: other writers kept changing the same conversation"
    )


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
    for number, record, group, ended in _grouped(source()):
        if ended is not None:
            await writer.flush()
            await _run_retrying(blobs, partial(_commit, ended))
        if group is not None and group.first_line == number:
            await _run_retrying(blobs, partial(_prepare, group.cid))
        if isinstance(record, _Conversation):
            counts.conversations += 1
        elif isinstance(record, _Message):
            counts.messages += 1
            await writer.put(keys.message_key(record.cid, record.seq), record.data)
        elif isinstance(record, _Keyed):
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
