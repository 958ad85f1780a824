"""Argument checks shared by the public API. Every error names the argument
and the rule it broke, and is raised before anything is written."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import MemoryValidationError
from ..limits import identifier as identifier
from ..limits import text as text
from ..models import ROLES
from . import keys
from .codec import MAX_VALUE_BYTES, dumps, encode_json

MAX_CONTENT_BYTES = MAX_VALUE_BYTES
#: Largest serialized metadata of a message (append_message, update_message).
MAX_MESSAGE_METADATA_BYTES = 1024 * 1024
#: Largest serialized metadata of a conversation, after update_conversation
#: merged a patch: every append reads and rewrites it (an append costs ~2.5 ms
#: at this size on SQLite, against ~0.2 ms with small metadata); big data
#: belongs in content or state.
MAX_CONVERSATION_METADATA_BYTES = 256 * 1024
MIN_LIMIT, MAX_LIMIT = 1, 100


def conversation_id(value: Any) -> str:
    return identifier(value, "conversation_id")


def optional_user_id(value: Any) -> str | None:
    return None if value is None else identifier(value, "user_id")


def role(value: Any) -> str:
    if value not in ROLES:
        allowed = ", ".join(sorted(ROLES))
        raise MemoryValidationError(f"role must be one of {allowed}; got {value!r}")
    return str(value)


def content_json(value: Any) -> str:
    if not isinstance(value, str | list | dict):
        raise MemoryValidationError(
            f"content must be a str, list or dict, not {type(value).__name__}"
        )
    return encode_json(value, argument="content", max_bytes=MAX_CONTENT_BYTES)


def metadata_json(value: Any, *, argument: str = "metadata") -> str:
    if value is None:
        return "null"
    if not isinstance(value, dict):
        raise MemoryValidationError(
            f"{argument} must be a dict or None, not {type(value).__name__}"
        )
    return encode_json(value, argument=argument, max_bytes=MAX_MESSAGE_METADATA_BYTES)


def metadata_patch(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MemoryValidationError(f"metadata must be a dict, not {type(value).__name__}")
    return conversation_metadata(value)


def conversation_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """A conversation's metadata (or a patch of it) as given: strict JSON, capped."""
    encode_json(value, argument="metadata", max_bytes=MAX_CONVERSATION_METADATA_BYTES)
    return dict(value)


def merged_metadata(merged: dict[str, Any], stored: dict[str, Any]) -> None:
    """A conversation's metadata after ``update_conversation`` merged a patch
    into ``stored`` (the patch alone is checked first, the sum here, before
    meta is saved). Metadata stored oversized before the cap existed may
    still shrink."""
    argument = "metadata (merged with the stored metadata)"
    try:
        encode_json(merged, argument=argument, max_bytes=MAX_CONVERSATION_METADATA_BYTES)
    except MemoryValidationError:
        if _utf8_size(merged) > _utf8_size(stored):
            raise


def _utf8_size(value: Any) -> int:
    return len(dumps(value).encode("utf-8"))


def limit(value: Any, argument: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(f"{argument} must be an int, not {type(value).__name__}")
    if not MIN_LIMIT <= value <= MAX_LIMIT:
        raise MemoryValidationError(
            f"{argument} must be between {MIN_LIMIT} and {MAX_LIMIT}, got {value}"
        )
    return value


def order(value: Any) -> str:
    if value not in ("asc", "desc"):
        raise MemoryValidationError(f"order must be 'asc' or 'desc', got {value!r}")
    return str(value)


def exclusive_cursors(after: Any, before: Any) -> None:
    if after is not None and before is not None:
        raise MemoryValidationError("after and before are mutually exclusive; pass only one")
    for name, value in (("after", after), ("before", before)):
        if value is not None and not isinstance(value, str):
            raise MemoryValidationError(f"{name} must be a string, not {type(value).__name__}")


def message_cursor(value: Any, argument: str) -> str | None:
    """A page cursor: a message id (where it sits is found when the page is read)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise MemoryValidationError(
            f"{argument} must be a message id (a non-empty string), got {value!r}"
        )
    return value


def conversation_cursor(value: str | None, argument: str, prefix: str) -> str | None:
    if value is None:
        return None
    position = keys.index_key_of_cursor(prefix, value)
    if position is None:
        raise MemoryValidationError(
            f"{argument} must be a cursor returned by list_conversations, got {value!r}"
        )
    return position


def message_id(value: Any) -> str:
    """A message id to look up: any non-empty string (an id nobody appended
    is simply not found)."""
    if not isinstance(value, str) or not value:
        raise MemoryValidationError(f"message_id must be a non-empty string, got {value!r}")
    return value


def client_message_id(value: Any, argument: str = "message_id") -> str | None:
    """The caller's id for a new message (None: the store makes one).

    1 to 256 characters of valid Unicode without control characters (C0, DEL,
    C1), and not of the form the store generates (``msg_<10 digits>_<suffix>``):
    that form is how the store tells its own ids, which name their seq, from
    the caller's, which are found through an alias (see :mod:`makers_store._core.keys`).
    """
    if value is None:
        return None
    mid = identifier(value, argument)
    bad = next((ch for ch in mid if ch < " " or "\x7f" <= ch <= "\x9f"), None)
    if bad is not None:
        raise MemoryValidationError(
            f"{argument} must not hold control characters, got {mid!r} "
            f"(U+{ord(bad):04X} at {mid.index(bad)})"
        )
    if keys.seq_of_message_id(mid) is not None:
        raise MemoryValidationError(
            f"{argument} {mid!r} has the form of an id this store generates "
            "(msg_<10 digits>_<suffix>); choose an id of another form, or omit "
            f"{argument} to get a generated one"
        )
    return mid


def state_key(value: Any) -> str:
    return identifier(value, "key")


MAX_BATCH = 1_000


def message_batch(value: Any) -> list[Mapping[str, Any]]:
    """The ``messages`` of ``append_messages``: a list of mappings, at most MAX_BATCH."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise MemoryValidationError(
            f"messages must be a list of {{role, content, metadata, message_id}} dicts, "
            f"not {type(value).__name__}"
        )
    if len(value) > MAX_BATCH:
        raise MemoryValidationError(
            f"messages holds {len(value)} items; at most {MAX_BATCH} per call"
        )
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise MemoryValidationError(
                f"messages[{index}] must be a dict, not {type(item).__name__}"
            )
        unknown = set(item) - {"role", "content", "metadata", "message_id"}
        if unknown:
            raise MemoryValidationError(
                f"messages[{index}] has unknown keys {sorted(unknown)}; "
                "allowed: role, content, metadata, message_id"
            )
    return list(value)


@contextlib.contextmanager
def item_context(where: str) -> Iterator[None]:
    """Prefix validation errors raised inside with ``where`` (``messages[3]: ...``)."""
    try:
        yield
    except MemoryValidationError as exc:
        raise MemoryValidationError(f"{where}: {exc}") from None
