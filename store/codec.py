"""JSON encoding, in one place: strict validation of user values and the
byte formats of the records the store keeps (conversation meta, messages,
state values).

Strict JSON means: None, str, bool, finite int/float, lists (tuples are
written as lists) and dicts with str keys. NaN, Infinity, cycles, non-str
keys and any other type are rejected with :class:`MemoryValidationError`
naming the argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import MemoryCorruptError, MemoryValidationError
from .models import ConversationMeta, Message

_encoder = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, check_circular=True, separators=(",", ":")
)
_decoder = json.JSONDecoder()


def encode_json(value: Any, *, argument: str) -> str:
    """Serialize ``value`` as strict JSON text or raise naming ``argument``."""
    if type(value) is str:
        return _encoder.encode(value)
    try:
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
    except RecursionError:
        raise MemoryValidationError(f"{argument} must be strict JSON: nested too deeply") from None
    _check_str_keys(value, argument)
    return text


def _type_reason(exc: TypeError) -> str:
    text = str(exc)
    return text.replace("Object of type", "a value of type", 1) if text else "unsupported type"


def _check_str_keys(value: Any, argument: str) -> None:
    """json.dumps silently turns int/float/bool/None keys into strings; refuse them."""
    if _all_keys_are_str(value):
        return
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
                stack.append((child, f"{path}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def _all_keys_are_str(value: Any) -> bool:
    """The fast walk: no paths, containers only."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if type(key) is not str and not isinstance(key, str):
                    return False
            stack.extend(child for child in item.values() if isinstance(child, dict | list | tuple))
        elif isinstance(item, list | tuple):
            stack.extend(child for child in item if isinstance(child, dict | list | tuple))
    return True


def decode_json(data: bytes | str, *, what: str) -> Any:
    try:
        return _decoder.decode(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoryCorruptError(f"{what} is not valid JSON: {exc}") from None


def dumps(value: Any) -> str:
    """Encode a value already known to be strict JSON (internal records)."""
    return _encoder.encode(value)


# --- records ---------------------------------------------------------------


@dataclass(slots=True)
class ConversationRecord:
    """The stored meta of one conversation: the public fields plus bookkeeping.

    ``next_seq`` is the commit point of appends: a message blob whose seq is not
    below it is not committed. ``cleared_below`` hides every seq under it
    (``clear_messages``); ``tombstones`` hide deleted seqs whose blobs may not
    be gone yet; ``deleting`` hides the whole conversation while
    ``delete_conversation`` removes its keys. ``superseded_at`` lists earlier
    ``last_message_at`` values whose index entries are owed a (batched) delete.
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
    deleting: bool = False
    superseded_at: list[int] = field(default_factory=list)

    def public(self) -> ConversationMeta:
        return ConversationMeta(
            conversation_id=self.conversation_id,
            created_at=self.created_at,
            last_message_at=self.last_message_at,
            message_count=self.message_count,
            metadata=dict(self.metadata),
        )

    def visible(self, seq: int) -> bool:
        return self.cleared_below <= seq < self.next_seq and seq not in self.tombstones

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
        if self.deleting:
            record["deleting"] = True
        if self.superseded_at:
            record["superseded_at"] = self.superseded_at
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
                deleting=raw.get("deleting", False),
                superseded_at=raw.get("superseded_at", []),
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
) -> bytes:
    """Assemble a message record from already-validated JSON fragments, so a
    large content is serialized exactly once."""
    updated = "null" if updated_at is None else str(int(updated_at))
    user = "null" if user_id is None else dumps(user_id)
    return (
        f"[1,{dumps(message_id)},{dumps(role)},{int(created_at)},{updated},{user},"
        f"{metadata_json},{content_json}]"
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
    except (UnicodeDecodeError, json.JSONDecodeError, IndexError, KeyError, TypeError):
        return [decode_message(data) for data in datas]  # names the broken record


def pending_append(data: bytes) -> tuple[str, int, str | None]:
    """(message_id, created_at, user_id) of a message record."""
    row = decode_json(data, what="message")
    try:
        return row[1], row[3], row[5]
    except (IndexError, KeyError, TypeError):
        raise MemoryCorruptError("message record is malformed") from None


def encode_state(value_json: str) -> bytes:
    return value_json.encode("utf-8")


def decode_state(data: bytes) -> Any:
    return decode_json(data, what="state value")
