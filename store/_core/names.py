"""Names of bounded ids: reading an id back from a key segment.

An id whose escaped form is too long for a key segment is cut and given a
digest (:func:`makers_store._core.keys.id_segment`), which cannot be read back. The
store needs an id from a key in a few places (walking conversations, listing
state, following links, listing Claude sessions and LangGraph threads), so
whoever writes a bounded id into a conversation's keys first writes its
*name*: ``c/{conversation}/x/names/{segment}`` holding the escaped text
(:func:`remember`). A conversation's meta holds its id too, so a conversation
with meta needs no name of its own. Short ids, nearly all of them, cost
nothing: their segment is their escaped text.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..blob_ops import Op, get, put
from ..errors import MemoryCorruptError
from . import keys
from .codec import ConversationRecord


def remember(cid: str, *texts: str) -> Generator[Op, Any, None]:
    """Write the names of the bounded ids among ``texts`` (and of ``cid``
    itself when it is bounded) used in conversation ``cid``'s keys."""
    owner = keys.id_segment(cid)
    for text in (cid, *texts):
        segment = keys.id_segment(text)
        if keys.is_bounded(segment):
            yield from put(keys.name_key(owner, segment), keys.escape(text).encode("ascii"))


def resolve(owner: str, segment: str) -> Generator[Op, Any, str]:
    """The id ``segment`` stands for in conversation ``owner`` (a segment)."""
    text = keys.id_of_segment(segment)
    if text is not None:
        return text
    blob = yield from get(keys.name_key(owner, segment))
    if blob is None:
        raise MemoryCorruptError(f"the key segment {segment!r} has no name blob")
    return keys.unescape(blob.data.decode("ascii"))


def conversation_id(segment: str, record: ConversationRecord | None) -> Generator[Op, Any, str]:
    """The id of the conversation whose keys start ``c/{segment}/`` (its
    meta ``record``, if read, holds it)."""
    if record is not None:
        return record.conversation_id
    return (yield from resolve(segment, segment))
