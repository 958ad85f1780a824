"""JSON encoding, in one place: strict validation of user values and the
byte formats of the records the store keeps (conversation meta, messages,
state values).

Strict JSON means: None, str, bool, finite int/float, lists (tuples are
written as lists) and dicts with str keys, nested at most
:data:`MAX_NESTING` levels, every string valid Unicode (no lone surrogates,
which UTF-8 cannot encode), serialized to at most :data:`MAX_VALUE_BYTES`.
NaN, Infinity, cycles, non-str keys and any other type are rejected with
:class:`MemoryValidationError` naming the argument. Whatever is accepted can
be stored, decoded again, exported and imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import MemoryCorruptError, MemoryValidationError
from ..limits import MAX_NESTING as MAX_NESTING  # the tests and the docs name it here too
from ..limits import find_surrogate, has_surrogate, json_path
from ..models import ConversationMeta, Message

#: Largest serialized value (UTF-8 bytes): the platform's 50 MB content limit,
#: applied to every JSON value the store keeps unless a caller asks for less.
MAX_VALUE_BYTES = 50 * 1024 * 1024

_encoder = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, check_circular=True, separators=(",", ":")
)
_ascii_encoder = json.JSONEncoder(
    ensure_ascii=True, allow_nan=False, check_circular=True, separators=(",", ":")
)
_decoder = json.JSONDecoder()
_CONTAINERS = (dict, list, tuple)
#: what export writes escaped so that no line reader splits a record
_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def encode_json(value: Any, *, argument: str, max_bytes: int = MAX_VALUE_BYTES) -> str:
    """Serialize ``value`` as strict JSON text or raise naming ``argument``."""
    if type(value) is str:
        text = _encoder.encode(value)
    else:
        try:  # first: the encoder finds cycles at once, whatever their width
            text = _encoder.encode(value)
        except ValueError as exc:  # NaN/Infinity or a cycle
            reason = str(exc)
            if "Circular" in reason:
                reason = "it contains a circular reference"
            elif "compliant" in reason:
                reason = "NaN and Infinity are not allowed"
            raise MemoryValidationError(f"{argument} must be strict JSON: {reason}") from None
        except TypeError as exc:
            raise MemoryValidationError(
                f"{argument} must be strict JSON: {_type_reason(exc)}"
            ) from None
        except RecursionError:  # far deeper than MAX_NESTING
            raise MemoryValidationError(_too_deep(argument)) from None
        if isinstance(value, _CONTAINERS):
            _check_structure(value, argument)
    if has_surrogate(text):
        place = find_surrogate(value) or "a string"
        raise MemoryValidationError(
            f"{argument} must be valid Unicode: {place} holds a lone "
            "surrogate, which UTF-8 cannot encode"
        )
    # UTF-8 never takes more than 4 bytes per character; measure only when it could matter.
    if len(text) * 4 > max_bytes:
        size = len(text.encode("utf-8"))
        if size > max_bytes:
            raise MemoryValidationError(
                f"{argument} must serialize to at most {max_bytes} bytes "
                f"({_size_label(max_bytes)}), got {size}"
            )
    return text


def _size_label(size: int) -> str:
    mib, kib = size / (1024 * 1024), size / 1024
    return f"{mib:g} MB" if mib >= 1 else f"{kib:g} KB"


def _too_deep(argument: str) -> str:
    return (
        f"{argument} must be strict JSON: nested too deeply "
        f"(at most {MAX_NESTING} levels of lists and dicts)"
    )


def _type_reason(exc: TypeError) -> str:
    text = str(exc)
    return text.replace("Object of type", "a value of type", 1) if text else "unsupported type"


def _check_structure(value: Any, argument: str) -> None:
    """Refuse what json.dumps takes but the store cannot keep: non-str keys
    (which json.dumps silently turns into strings) and nesting deeper than
    MAX_NESTING. One iterative walk over the containers only; the value has
    been encoded, so it holds no cycle."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise MemoryValidationError(_too_deep(argument))
        if isinstance(item, dict):
            for key in item:
                if type(key) is not str and not isinstance(key, str):
                    _raise_key_error(value, argument)
            children = item.values()
        else:
            children = item
        stack.extend((child, depth + 1) for child in children if isinstance(child, _CONTAINERS))


def _raise_key_error(value: Any, argument: str) -> None:
    stack: list[tuple[Any, str]] = [(value, "$")]  # again, slowly, to name the place
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise MemoryValidationError(
                        f"{argument} must be strict JSON: object keys must be strings, "
                        f"found {type(key).__name__} key {key!r} at {path}"
                    )
                stack.append((child, json_path(path, key)))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def decode_json(data: bytes | str, *, what: str) -> Any:
    try:
        return _decoder.decode(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoryCorruptError(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise MemoryCorruptError(f"{what} is nested too deeply to decode") from None


def dumps(value: Any) -> str:
    """Encode a value already known to be strict JSON (internal records)."""
    return _encoder.encode(value)


def dumps_line(value: Any) -> str:
    """Encode an export record as one line that is always valid UTF-8 and
    that every line reader keeps whole: U+0085, U+2028 and U+2029, which
    ``str.splitlines`` and some JSON-lines readers take for line breaks, are
    escaped (JSON allows that, and outside ASCII they only occur in strings);
    a lone surrogate stored before it was refused is written as a ``\\udXXX``
    escape, which the importer then refuses naming the line, instead of bytes
    no reader can decode."""
    text = _encoder.encode(value)
    if text.isascii():
        return text
    if has_surrogate(text):
        return _ascii_encoder.encode(value)
    return text.translate(_LINE_BREAKS)


# --- records ---------------------------------------------------------------


def live_record(record: ConversationRecord | None) -> ConversationRecord | None:
    """``record`` if it is that of a live conversation (see
    :attr:`ConversationRecord.live`), else None."""
    return record if record is not None and record.live else None


@dataclass(frozen=True, slots=True)
class BatchIntent:
    """The seqs ``first .. first + count - 1`` reserved for one
    ``append_messages`` call, whose message blobs carry ``token``; with what
    committing them on the writer's behalf needs (its time, tie and user)."""

    first: int
    count: int
    token: str
    now: int
    tie: int | None
    user_id: str | None

    def encode(self) -> list[Any]:
        return [self.first, self.count, self.token, self.now, self.tie, self.user_id]

    @classmethod
    def decode(cls, raw: list[Any]) -> BatchIntent:
        return cls(raw[0], raw[1], raw[2], raw[3], raw[4], raw[5])


#: How many emptied slots meta keeps hidden (``ConversationRecord.emptied``):
#: an append whose meta read is older than this many later deletions could
#: still put a message into a slot that is no longer hidden (none of the
#: races seen needed more than one).
EMPTIED_KEPT = 32


@dataclass(slots=True)
class ConversationRecord:
    """The stored meta of one conversation: the public fields plus bookkeeping.

    ``next_seq`` is the commit point of appends: a message blob whose seq is not
    below it is not committed. ``cleared_below`` hides every seq under it
    (``clear_messages``); ``tombstones`` hide deleted seqs whose blobs may not
    be gone yet; ``deleting`` hides the whole conversation while
    ``delete_conversation`` removes its keys. ``superseded_at`` lists earlier
    positions (``last_message_at``, tie) whose index entries are owed a
    (batched) delete. ``generation`` names where the messages and state live
    (see :mod:`makers_store._core.keys`): the pointer a whole-conversation
    replacement swaps. ``last_tie`` orders the last write among those of its
    millisecond (None for entries written before ties existed);
    :attr:`position` is where the conversation's index entries sit.
    ``touched_at`` is when a write other than an append last changed the
    conversation (metadata, a message, state, LangGraph checkpoints), kept to
    :data:`makers_store._core.activity.TOUCH_RESOLUTION_MS` (None: never
    since it was stamped); with ``last_message_at`` it is the conversation's
    last write, which retention judges idleness by
    (:mod:`makers_store._core.activity`).
    """

    conversation_id: str
    created_at: int
    last_message_at: int
    message_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    next_seq: int = 0
    cleared_below: int = 0
    user_ids: list[str] = field(default_factory=list)
    tombstones: list[int] = field(default_factory=list)
    #: the seqs of the latest deletions whose blobs are gone (at most
    #: EMPTIED_KEPT, oldest first): still hidden, because an append that read
    #: meta before the deleted message was committed may put its own message
    #: into the emptied slot; hidden, that blob is never a visible message no
    #: meta counts, and its writer deletes it and appends again (see
    #: :func:`makers_store._core.appends.append_message`)
    emptied: list[int] = field(default_factory=list)
    deleting: bool = False
    superseded_at: list[tuple[int, int | None]] = field(default_factory=list)
    generation: str = ""
    last_tie: int | None = None
    touched_at: int | None = None
    #: an ``append_messages`` batch in flight on a backend without
    #: transactions (:class:`BatchIntent`, :mod:`makers_store._core.appends`)
    batch: BatchIntent | None = None

    def public(self) -> ConversationMeta:
        return ConversationMeta(
            conversation_id=self.conversation_id,
            created_at=self.created_at,
            last_message_at=self.last_message_at,
            message_count=self.message_count,
            metadata=dict(self.metadata),
        )

    @property
    def position(self) -> tuple[int, int | None]:
        return self.last_message_at, self.last_tie

    @property
    def live(self) -> bool:
        """Whether the conversation exists for readers: not being deleted
        (``delete_conversation`` hides it first, then removes its keys)."""
        return not self.deleting

    @property
    def reservation(self) -> bool:
        """Whether this meta is a batch's reservation of a new conversation
        (hidden, holding the batch's intent) rather than a deletion in
        progress: :meth:`mark_deleting` drops the intent of a live one."""
        return self.deleting and self.batch is not None

    def mark_deleting(self) -> None:
        """Commit a deletion's intent: hidden from now on. A batch intent in
        flight is dropped (its commit, if-match this meta, fails anyway), so
        that a hidden meta with an intent is always a reservation."""
        self.deleting, self.batch = True, None

    def visible(self, seq: int) -> bool:
        return (
            self.cleared_below <= seq < self.next_seq
            and seq not in self.tombstones
            and seq not in self.emptied
        )

    @property
    def hidden(self) -> int:
        """How many seqs below ``next_seq`` are hidden apart from ``cleared_below``."""
        return len(self.tombstones) + len(self.emptied)

    def drop_tombstones(self, seqs: list[int] | None = None) -> None:
        """The blobs of ``seqs`` (default: every tombstone) are gone: keep the
        seqs hidden among the latest EMPTIED_KEPT emptied slots instead."""
        gone = list(self.tombstones) if seqs is None else [s for s in seqs if s in self.tombstones]
        if not gone:
            return
        self.tombstones = [seq for seq in self.tombstones if seq not in gone]
        self.emptied = [seq for seq in self.emptied if seq not in gone] + gone
        del self.emptied[:-EMPTIED_KEPT]

    def encode(self) -> bytes:
        record: dict[str, Any] = {
            "v": 1,
            "conversation_id": self.conversation_id,
            "created_at": self.created_at,
            "last_message_at": self.last_message_at,
            "message_count": self.message_count,
            "metadata": self.metadata,
            "next_seq": self.next_seq,
            "cleared_below": self.cleared_below,
            "user_ids": self.user_ids,
        }
        if self.tombstones:
            record["tombstones"] = self.tombstones
        if self.emptied:
            record["emptied"] = self.emptied
        if self.deleting:
            record["deleting"] = True
        if self.superseded_at:
            record["superseded_at"] = [
                at if tie is None else [at, tie] for at, tie in self.superseded_at
            ]
        if self.generation:
            record["generation"] = self.generation
        if self.last_tie is not None:
            record["last_tie"] = self.last_tie
        if self.touched_at is not None:
            record["touched_at"] = self.touched_at
        if self.batch is not None:
            record["batch"] = self.batch.encode()
        return _encoder.encode(record).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> ConversationRecord:
        raw = decode_json(data, what="conversation meta")
        try:
            return cls(
                conversation_id=raw["conversation_id"],
                created_at=raw["created_at"],
                last_message_at=raw["last_message_at"],
                message_count=raw["message_count"],
                metadata=raw["metadata"],
                next_seq=raw["next_seq"],
                cleared_below=raw["cleared_below"],
                user_ids=raw["user_ids"],
                tombstones=raw.get("tombstones", []),
                emptied=raw.get("emptied", []),
                deleting=raw.get("deleting", False),
                superseded_at=[
                    (item, None) if isinstance(item, int) else (item[0], item[1])
                    for item in raw.get("superseded_at", [])
                ],
                generation=raw.get("generation", ""),
                last_tie=raw.get("last_tie"),
                touched_at=raw.get("touched_at"),
                batch=BatchIntent.decode(raw["batch"]) if "batch" in raw else None,
            )
        except (KeyError, TypeError) as exc:
            raise MemoryCorruptError(f"conversation meta lacks field {exc}") from None


# A message record is a JSON array, which decodes about twice as fast as an
# object: [1, message_id, role, created_at, updated_at, user_id, metadata, content]
# ``user_id`` is the append's (so another writer can commit a pending append);
# it is not part of Message. Content comes last.


def encode_message(
    *,
    message_id: str,
    role: str,
    content_json: str,
    created_at: int,
    metadata_json: str,
    updated_at: int | None = None,
    user_id: str | None = None,
    batch: str | None = None,
) -> bytes:
    """Assemble a message record from already-validated JSON fragments, so a
    large content is serialized exactly once. ``batch``: the token of the
    batch intent it was written under (:class:`BatchIntent`), a last field."""
    updated = "null" if updated_at is None else str(int(updated_at))
    user = "null" if user_id is None else _encoder.encode(user_id)
    tail = "" if batch is None else "," + _encoder.encode(batch)
    return (
        f"[1,{_encoder.encode(message_id)},{_encoder.encode(role)},{int(created_at)},"
        f"{updated},{user},{metadata_json},{content_json}{tail}]"
    ).encode()


def _message(row: Any) -> Message:
    return Message(row[1], row[2], row[7], row[3], row[6], row[4])


def decode_message(data: bytes) -> Message:
    row = decode_json(data, what="message")
    try:
        return _message(row)
    except (IndexError, KeyError, TypeError):
        raise MemoryCorruptError("message record is malformed") from None


def decode_messages(datas: list[bytes]) -> list[Message]:
    """Decode a page of message records with one parser call."""
    try:
        rows = _decoder.decode("[" + b",".join(datas).decode("utf-8") + "]")
        return [Message(r[1], r[2], r[7], r[3], r[6], r[4]) for r in rows]
    except (
        UnicodeDecodeError,
        json.JSONDecodeError,
        RecursionError,
        IndexError,
        KeyError,
        TypeError,
    ):
        return [decode_message(data) for data in datas]  # names the broken record


def pending_append(data: bytes) -> tuple[str, int, str | None]:
    """(message_id, created_at, user_id) of a message record."""
    row = decode_json(data, what="message")
    try:
        return row[1], row[3], row[5]
    except (IndexError, KeyError, TypeError):
        raise MemoryCorruptError("message record is malformed") from None


def batch_token(data: bytes) -> str | None:
    """The batch token of a message record (None: appended on its own)."""
    row = decode_json(data, what="message")
    token = row[8] if isinstance(row, list) and len(row) > 8 else None
    return token if isinstance(token, str) else None


def encode_state(value_json: str) -> bytes:
    return value_json.encode("utf-8")


def decode_state(data: bytes) -> Any:
    return decode_json(data, what="state value")
