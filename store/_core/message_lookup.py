"""Finding one message by its id (:meth:`~makers_store.ContextStore.get_message`,
``update_message``, ``delete_message`` and the ``after``/``before`` cursors).

A generated id names its seq (``msg_{seq}_{suffix}``), so the message is one
read away once meta says the seq is visible; a client id's seq is in its
alias blob, one read more (:mod:`makers_store._core.keys`, "Message ids"). Either
way the id stored in the message blob is compared, so an id whose seq holds
another message (a wrong suffix, a stale alias) reads as absent.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..blob_ops import Blob, Op, Program, get
from ..errors import MemoryValidationError
from ..models import Message
from . import keys
from .codec import ConversationRecord, decode_message, pending_append
from .programs import visible_meta


def seq_of(cid: str, record: ConversationRecord, message_id: str) -> Generator[Op, Any, int | None]:
    """Where ``message_id`` sits or sat: its seq (generated ids need no read),
    or None for a client id nobody appended in this generation."""
    seq = keys.seq_of_message_id(message_id)
    if seq is not None:
        return seq
    alias = yield from get(keys.alias_key(cid, message_id, record.generation))
    return None if alias is None else keys.decode_alias(alias.data)


def locate(
    cid: str, record: ConversationRecord, message_id: str
) -> Generator[Op, Any, tuple[int, Blob] | None]:
    """The seq and blob of the visible message ``message_id``, or None."""
    seq = yield from seq_of(cid, record, message_id)
    if seq is None or not record.visible(seq):
        return None
    blob = yield from get(keys.message_key(cid, seq, record.generation))
    if blob is None or pending_append(blob.data)[0] != message_id:
        return None
    return seq, blob


def cursor_seq(
    cid: str, record: ConversationRecord, message_id: str | None, argument: str
) -> Generator[Op, Any, int | None]:
    """The seq a page cursor names. A generated id is a position even after
    its message is deleted; a client id must have been appended here."""
    if message_id is None:
        return None
    seq = yield from seq_of(cid, record, message_id)
    if seq is None:
        raise MemoryValidationError(
            f"{argument} must be the id of a message of conversation_id {cid!r}; "
            f"none has the id {message_id!r}"
        )
    return seq


def message_by_id(cid: str, message_id: str) -> Program[Message | None]:
    """The visible message ``message_id`` of conversation ``cid``, or None."""
    record = yield from visible_meta(cid)
    if record is None:
        return None
    found = yield from locate(cid, record, message_id)
    return None if found is None else decode_message(found[1].data)
