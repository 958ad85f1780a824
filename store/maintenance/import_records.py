"""The records of an export file, parsed and checked before an import writes
anything (:mod:`makers_store.maintenance.importing`): every value must be one the public
API would accept, every id and sequence one later calls keep working with,
and every key one that stays inside its own conversation and that every
backend can hold. Errors name the line.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._core import keys, validate
from .._core.codec import decode_json, encode_json, encode_message, encode_state
from .._core.programs import MAX_MESSAGES
from ..errors import MemoryCorruptError, MemoryValidationError
from ..limits import has_surrogate
from .exporting import FORMAT, VERSION

#: Highest sequence an imported message may carry: appends after the import
#: must still get 10-digit ids (``msg_9999999999_x`` would make the next one 11
#: digits, sorting before the rest); a billion is more than any store reaches.
MAX_IMPORTED_SEQ = 10 ** (keys.SEQ_WIDTH - 1) - 1
#: Adapter data lives under keys the adapters build from escaped segments:
#: printable ASCII, no spaces.
_ADAPTER_PATH = re.compile(r"[\x21-\x7e]+")
#: S3's limit on a key, which every backend can hold.
MAX_BLOB_KEY_BYTES = 1024


@dataclass(frozen=True, slots=True)
class ImportedConversation:
    cid: str
    created_at: int
    last_message_at: int
    metadata: dict[str, Any]
    user_ids: list[str]
    last_tie: int | None = None
    #: None: a file from before export carried it (derived when replacing)
    next_seq: int | None = None
    cleared_below: int = 0
    touched_at: int | None = None
    #: the highest seq a generated message id in the metadata names (-1: none)
    named_seq: int = -1


@dataclass(frozen=True, slots=True)
class ImportedAlias:
    """A caller's id whose message was deleted: the place it still names."""

    cid: str
    client_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    cid: str
    seq: int
    data: bytes
    #: the caller's id, found through an alias (None: a generated id)
    client_id: str | None = None
    #: the highest seq a generated message id in the metadata names (-1: none)
    named_seq: int = -1
    #: the latest time the record shows (created or updated)
    shown_at: int = 0


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    """A state value, adapter blob or outside blob: a key and its bytes."""

    kind: str  # "state" | "adapter" | "blob"
    cid: str | None
    name: str
    key: str
    data: bytes
    #: (state) the highest seq a generated message id in the value names (-1: none)
    named_seq: int = -1


Record = (
    ImportedConversation | ImportedMessage | ImportedAlias | KeyedRecord | None
)  # None: the header


def named_seq(json_text: str) -> int:
    """The highest seq that a generated message id in ``json_text`` names
    (-1: none): a file from before export carried ``next_seq`` gets a next
    seq past every id it names, so a mark or cursor there keeps its place."""
    found = [int(seq) for seq in _NAMED_ID.findall(json_text)]
    return min(max(found), MAX_IMPORTED_SEQ) if found else -1


_NAMED_ID = re.compile(rf"msg_(\d{{{keys.SEQ_WIDTH}}})_[a-z0-9]")


def _get(raw: dict[str, Any], name: str, kinds: type | tuple[type, ...], what: str) -> Any:
    if name not in raw:
        raise MemoryValidationError(f"{what} lacks the field {name!r}")
    value = raw[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and kinds is int):
        raise MemoryValidationError(f"{what}: field {name!r} has the wrong type")
    return value


def _timestamp(raw: dict[str, Any], name: str, what: str) -> int:
    value: int = _get(raw, name, int, what)
    if not 0 <= value <= keys.RANK_MAX:
        raise MemoryValidationError(
            f"{what}: field {name!r} must be a time in milliseconds, 0..{keys.RANK_MAX}; "
            f"got {value}"
        )
    return value


def _seq(raw: dict[str, Any], mid: str, what: str) -> int:
    """Where the message sits: its generated id says, or (a client id) the
    record's ``seq`` field."""
    seq = keys.seq_of_message_id(mid)
    if "seq" in raw:
        given: int = _get(raw, "seq", int, what)
        if seq is not None and given != seq:
            raise MemoryValidationError(
                f"{what}: message_id {mid!r} names sequence {seq}, but seq is {given}"
            )
        seq = given
    if seq is None:
        raise MemoryValidationError(
            f"{what}: message_id {mid!r} is not msg_<seq>_<suffix>, so the record needs a seq field"
        )
    if seq < 0 or seq > MAX_IMPORTED_SEQ:
        raise MemoryValidationError(
            f"{what}: message_id {mid!r} has sequence {seq}; at most {MAX_IMPORTED_SEQ}, "
            "so that later appends keep ids of the same width"
        )
    return seq


def _blob_key(raw: dict[str, Any], what: str) -> str:
    """A key outside conversations and indexes that every backend can hold."""
    key: str = _get(raw, "key", str, what)
    if not key or key.startswith((keys.CONVERSATIONS, "i/")):
        raise MemoryValidationError(f"{what}: key {key!r} is inside conversations or indexes")
    if has_surrogate(key) or any(unicodedata.category(ch) == "Cc" for ch in key):
        raise MemoryValidationError(
            f"{what}: key {key!r} holds a control character or a lone surrogate"
        )
    if len(key.encode("utf-8")) > MAX_BLOB_KEY_BYTES:
        raise MemoryValidationError(
            f"{what}: key must be at most {MAX_BLOB_KEY_BYTES} bytes of UTF-8"
        )
    return key


def _adapter_path(raw: dict[str, Any], what: str) -> str:
    path: str = _get(raw, "path", str, what)
    if not _ADAPTER_PATH.fullmatch(path):
        raise MemoryValidationError(
            f"{what}: path {path!r} must be non-empty printable ASCII without spaces, "
            "as the adapters write it"
        )
    return path


def _data(raw: dict[str, Any], what: str) -> bytes:
    try:
        return base64.b64decode(_get(raw, "data_base64", str, what), validate=True)
    except binascii.Error:
        raise MemoryValidationError(f"{what}: data_base64 is not valid base64") from None


def _parse(raw: Any) -> Record:
    if not isinstance(raw, dict):
        raise MemoryValidationError("a line must hold a JSON object")
    kind = raw.get("type")
    what = f"a {kind} record" if isinstance(kind, str) else "the record"
    if kind == "header":
        if raw.get("format") != FORMAT or raw.get("version") != VERSION:
            raise MemoryValidationError(f"not a {FORMAT} version {VERSION} header")
        return None
    if kind == "blob":
        key = keys.current_form(_blob_key(raw, what))  # a file from before ids were cut
        return KeyedRecord("blob", None, key, key, _data(raw, what))
    cid = validate.conversation_id(_get(raw, "conversation_id", str, what))
    if kind == "conversation":
        metadata = validate.conversation_metadata(_get(raw, "metadata", dict, what))
        users = _get(raw, "user_ids", list, what)
        user_ids = [validate.identifier(uid, "user_ids[]") for uid in users]
        if len(set(user_ids)) != len(user_ids):
            raise MemoryValidationError(f"{what}: user_ids holds duplicates")
        created = _timestamp(raw, "created_at", what)
        last = _timestamp(raw, "last_message_at", what)
        tie = raw.get("last_tie")
        if tie is not None and (
            not isinstance(tie, int) or isinstance(tie, bool) or not 0 <= tie <= keys.TIE_MAX
        ):
            raise MemoryValidationError(
                f"{what}: field 'last_tie' must be an integer 0..{keys.TIE_MAX}; got {tie!r}"
            )
        next_seq = None
        if "next_seq" in raw:
            next_seq = _get(raw, "next_seq", int, what)
            if not 0 <= next_seq <= MAX_IMPORTED_SEQ + 1:
                raise MemoryValidationError(
                    f"{what}: field 'next_seq' must be 0..{MAX_IMPORTED_SEQ + 1}; got {next_seq}"
                )
        cleared = _get(raw, "cleared_below", int, what) if "cleared_below" in raw else 0
        if not 0 <= cleared <= (MAX_IMPORTED_SEQ + 1 if next_seq is None else next_seq):
            raise MemoryValidationError(
                f"{what}: field 'cleared_below' must be 0..next_seq; got {cleared}"
            )
        touched = _timestamp(raw, "touched_at", what) if raw.get("touched_at") is not None else None
        return ImportedConversation(
            cid,
            created,
            last,
            metadata,
            user_ids,
            tie,
            next_seq,
            cleared,
            touched,
            named_seq(encode_json(metadata, argument="metadata")),
        )
    if kind == "alias":
        mid = validate.client_message_id(_get(raw, "message_id", str, what))
        if mid is None:
            raise MemoryValidationError(f"{what}: message_id must be a caller's id")
        seq = _get(raw, "seq", int, what)
        if not 0 <= seq <= MAX_IMPORTED_SEQ:
            raise MemoryValidationError(f"{what}: field 'seq' must be 0..{MAX_IMPORTED_SEQ}")
        return ImportedAlias(cid, mid, seq)
    if kind == "message":
        mid = validate.message_id(_get(raw, "message_id", str, what))
        client_id = None if keys.seq_of_message_id(mid) is not None else mid
        validate.client_message_id(client_id)
        seq = _seq(raw, mid, what)
        updated = _timestamp(raw, "updated_at", what) if raw.get("updated_at") is not None else None
        created = _timestamp(raw, "created_at", what)
        metadata_json = validate.metadata_json(raw.get("metadata"))
        data = encode_message(
            message_id=mid,
            role=validate.role(_get(raw, "role", str, what)),
            content_json=validate.content_json(raw.get("content")),
            created_at=created,
            metadata_json=metadata_json,
            updated_at=updated,
        )
        shown = max(created, updated or 0)
        return ImportedMessage(cid, seq, data, client_id, named_seq(metadata_json), shown)
    if kind == "state":
        name = validate.state_key(_get(raw, "key", str, what))
        if "value" not in raw:
            raise MemoryValidationError(f"{what} lacks the field 'value'")
        value_json = encode_json(raw["value"], argument="value")
        key = keys.state_key(cid, name)
        return KeyedRecord("state", cid, name, key, encode_state(value_json), named_seq(value_json))
    if kind == "adapter":
        path = _adapter_path(raw, what)
        key = keys.current_form(keys.adapters_prefix(cid) + path)
        path = key[len(keys.adapters_prefix(cid)) :]
        return KeyedRecord("adapter", cid, path, key, _data(raw, what))
    raise MemoryValidationError(f"unknown record type {kind!r}")


def _records(source: Iterable[str | bytes]) -> Iterable[tuple[int, Record]]:
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            yield number, _parse(decode_json(line, what="the line"))
        except (MemoryValidationError, MemoryCorruptError) as exc:
            raise MemoryValidationError(f"line {number}: {exc}") from None


@dataclass(slots=True)
class Group:
    """What the file holds for one conversation (only what replacing needs)."""

    cid: str
    first_line: int
    last_line: int = 0
    conversation: ImportedConversation | None = None
    message_line: int = 0
    seqs: set[int] = field(default_factory=set)
    client_ids: set[str] = field(default_factory=set)
    state_names: set[str] = field(default_factory=set)
    adapter_paths: set[str] = field(default_factory=set)
    alias_line: int = 0
    aliases: dict[str, int] = field(default_factory=dict)

    def add(self, number: int, record: Record) -> None:
        self.last_line = number
        if isinstance(record, ImportedConversation):
            if self.conversation is not None:
                raise MemoryValidationError(
                    f"line {number}: a second conversation record for {self.cid!r}"
                )
            self.conversation = record
        elif isinstance(record, ImportedMessage):
            if record.seq in self.seqs:
                raise MemoryValidationError(
                    f"line {number}: a second message with sequence {record.seq} in {self.cid!r}"
                )
            if len(self.seqs) == MAX_MESSAGES:
                raise MemoryValidationError(
                    f"line {number}: conversation {self.cid!r} holds more than "
                    f"{MAX_MESSAGES} messages"
                )
            if record.client_id is not None:
                if record.client_id in self.client_ids:
                    raise MemoryValidationError(
                        f"line {number}: a second message with id {record.client_id!r} "
                        f"in {self.cid!r}"
                    )
                self.client_ids.add(record.client_id)
            self.message_line = self.message_line or number
            self.seqs.add(record.seq)
        elif isinstance(record, ImportedAlias):
            if record.client_id in self.aliases:
                raise MemoryValidationError(
                    f"line {number}: a second alias of id {record.client_id!r} in {self.cid!r}"
                )
            self.alias_line = self.alias_line or number
            self.aliases[record.client_id] = record.seq
        elif isinstance(record, KeyedRecord):
            seen = self.state_names if record.kind == "state" else self.adapter_paths
            label = "state key" if record.kind == "state" else "adapter path"
            if record.name in seen:
                raise MemoryValidationError(
                    f"line {number}: {label} {record.name!r} appears twice for {self.cid!r}"
                )
            seen.add(record.name)

    def close(self) -> None:
        if (self.seqs or self.aliases) and self.conversation is None:
            raise MemoryValidationError(
                f"line {self.message_line or self.alias_line}: messages of conversation_id "
                f"{self.cid!r} but no conversation record for it"
            )
        if self.conversation is None:
            return
        low, high = self.conversation.cleared_below, self.conversation.next_seq
        if self.seqs and (min(self.seqs) < low or (high is not None and max(self.seqs) >= high)):
            raise MemoryValidationError(
                f"line {self.message_line}: the messages of conversation_id {self.cid!r} "
                "must have sequences from its cleared_below up to below its next_seq"
            )
        for client_id, seq in self.aliases.items():
            if client_id in self.client_ids or seq < low or (high is not None and seq >= high):
                raise MemoryValidationError(
                    f"line {self.alias_line}: the alias of {client_id!r} in conversation_id "
                    f"{self.cid!r} must name a place below its next_seq that no message "
                    "with that id holds"
                )


def grouped(
    source: Iterable[str | bytes],
) -> Iterable[tuple[int, Record, Group | None, Group | None]]:
    """(line, record, its group, the group that just ended) per record,
    checking that each conversation's records are contiguous and consistent;
    a final item with record None reports the last group ending."""
    started: set[str] = set()
    outside_keys: set[str] = set()
    group: Group | None = None
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
            group = Group(cid, number)
        if group is not None:
            group.add(number, record)
        elif isinstance(record, KeyedRecord):
            if record.key in outside_keys:
                raise MemoryValidationError(f"line {number}: blob {record.key!r} appears twice")
            outside_keys.add(record.key)
        yield number, record, group, ended
    if group is not None:
        group.close()
    yield number + 1, None, None, group


@dataclass(frozen=True, slots=True)
class Span:
    """Where one conversation's records are in the file, and what they hold."""

    cid: str
    first_line: int
    last_line: int
    has_conversation: bool
    messages: int
    state_entries: int
    adapter_blobs: int


@dataclass(slots=True)
class Plan:
    """What a checked file holds: its line count and its conversations, in order."""

    lines: int = 0
    spans: list[Span] = field(default_factory=list)


def plan_jsonl(source: Iterable[str | bytes]) -> Plan:
    """Check every line without writing (errors name the line)."""
    plan = Plan()
    last = 0
    for number, _, _, ended in grouped(source):
        last = number
        if ended is not None:
            plan.spans.append(
                Span(
                    ended.cid,
                    ended.first_line,
                    ended.last_line,
                    ended.conversation is not None,
                    len(ended.seqs),
                    len(ended.state_names),
                    len(ended.adapter_paths),
                )
            )
    plan.lines = last - 1
    return plan


def validate_jsonl(source: Iterable[str | bytes]) -> int:
    """Check every line without writing; returns the number of lines."""
    return plan_jsonl(source).lines


def numbered_records(source: Iterable[str | bytes]) -> Iterable[tuple[int, Record]]:
    """(line number, record) of every non-blank line, parsed (a checked file)."""
    return _records(source)
