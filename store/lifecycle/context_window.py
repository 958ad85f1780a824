"""What a model should see of a long conversation: the platform's summary
convention (``store.context_window``, ``store.set_summary``).

The platform's store document leaves long conversations to the application:
it keeps the last messages verbatim and a summary of the older ones in the
conversation's metadata, ``metadata["summary"]`` (text) and
``metadata["summarizedUntil"]`` (the id of the last message folded into the
summary). The store never calls a model; these two calls read and write that
convention so every agent assembles it the same way.

Reading (:func:`read_window`, one unit of work): meta, then where the mark
sits (no read for a generated id, which names its place; one read of the
alias for a caller's own id), then the newest ``last`` messages *after* it
(``last + 1`` are read, to tell whether older unsummarised ones were left
out). The cost is that of one ``get_messages`` page whatever the length of
the conversation: a 10,000-message conversation is never walked.

The rules, where the platform's document is silent:

* **The mark is a position**, as a page cursor is (``get_messages(after=)``):
  a generated id keeps its place after its message is deleted, and so does a
  caller's id (its alias stays), so a summary whose last message was since
  deleted still hides exactly the messages it folded in.
* **A mark that names no place** (a caller's id after ``clear_messages``
  dropped its alias, a value that is not a message id of this conversation,
  a generated id beyond the conversation's end) is ignored: the window is the
  newest ``last`` messages and ``summarized_until`` is None. The model may
  then see a message both in the summary and verbatim, never miss one.
  (After ``clear_messages`` every remaining message is newer than the mark
  anyway.)
* **A summary without a mark**: the summary and the newest ``last`` messages,
  for the same reason. **A mark without a summary** (someone removed the
  summary): the messages after the mark, ``summary`` None; the metadata says
  the older ones are done with, and the window follows it.
* **A summary that is not text** (written by hand with
  ``update_conversation``) is given as its JSON text; an empty one counts as
  none.
* **A missing conversation** is an empty window, as ``get_messages`` answers
  ``[]``.
* **More than ``last`` messages after the mark**: the newest ``last``, and
  ``truncated`` is True (time to summarise). Tool results at the start of
  such a window, whose call was cut off, are left out too: the model APIs
  refuse a tool result without its call. So are those right after the mark
  (a cut at the mark is the application's choice: set it at the end of a
  turn, an assistant's answer).
* **Orphan tool calls and results** inside the window are fixed in the
  window only, by the read-path guard (:mod:`.history_guard`): a call
  without its result gets one saying it was interrupted, a result without
  its call is left out, each fix logged once; ``strict=True`` raises
  :class:`~makers_store.InvalidHistoryError` instead.
* A caller's id that is deleted and later appended again moves to its new
  place, and the mark with it: re-use ids that marks name with care.

Writing (:func:`write_summary`, one unit of work): meta is read, ``until`` is
found among the conversation's *visible* messages (else
``MemoryNotFoundError`` and nothing is written), and both keys are merged into
the metadata exactly as ``update_conversation`` merges (one shallow merge,
other keys kept), saved with the etag meta was read with. A concurrent
``delete_message`` of ``until`` commits through the same meta: on SQLite,
PostgreSQL and memory the two are serialised transactions; on object storage
whichever saves meta second finds its etag stale and runs again, so either the
summary is written while the message exists (a later delete leaves a mark at
a deleted message: a position, above) or the delete came first and
``set_summary`` finds no message and writes nothing. A mark naming a message
that never existed cannot be written.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from .._core.activity import stamp
from .._core.codec import ConversationRecord, decode_messages
from .._core.message_lookup import locate, seq_of
from .._core.message_programs import message_range
from .._core.programs import load_live_meta, merge_metadata, save_meta, visible_meta
from ..blob import Capabilities
from ..blob_ops import Op, Program
from ..errors import MemoryNotFoundError, MemoryValidationError
from ..models import ConversationMeta, Message, fields_dict
from .history_guard import guard_history
from .tool_pairing import result_ids

#: The platform's metadata keys (camelCase, as its document writes them).
SUMMARY_KEY = "summary"
UNTIL_KEY = "summarizedUntil"
#: The most messages one window holds: a window is read in one unit of work.
MAX_LAST = 1000
#: How the converters introduce the summary to a model, before its text.
SUMMARY_INTRO = "Summary of the earlier conversation:"


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """What a model should see of a conversation (``store.context_window``):
    ``summary`` (text or None) stands for every message up to and including
    ``summarized_until``; ``messages`` are the newest ``last`` after it,
    oldest first. ``truncated``: older messages after the mark were left out
    (more than ``last`` are not yet summarised: time to summarise).
    ``left_out_results``: the ids of the tool results the cut left out as
    well, because their call fell outside the window (before the newest
    ``last``, or into the summary), oldest first.

    ``to_openai_input(window)`` and ``to_anthropic_request(window)`` put the
    summary where each API takes it (:attr:`system_text`)."""

    conversation_id: str
    summary: str | None
    messages: list[Message]
    summarized_until: str | None = None
    truncated: bool = False
    left_out_results: list[str] = field(default_factory=list)

    @property
    def system_text(self) -> str | None:
        """The summary as a model reads it (introduced by
        :data:`SUMMARY_INTRO`), or None without a summary."""
        return None if self.summary is None else f"{SUMMARY_INTRO}\n{self.summary}"

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, nested=("messages",))


def window_size(value: Any) -> int:
    """``last``: an int from 1 to :data:`MAX_LAST`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(f"last must be an int, not {type(value).__name__}")
    if not 1 <= value <= MAX_LAST:
        raise MemoryValidationError(f"last must be between 1 and {MAX_LAST}, got {value}")
    return value


def summary_text(value: Any) -> str:
    """``set_summary``'s ``summary``: a string (any length the conversation's
    metadata cap allows: it is checked with the merge)."""
    if not isinstance(value, str):
        raise MemoryValidationError(f"summary must be a string, not {type(value).__name__}")
    return value


def _stored_summary(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _mark_seq(cid: str, record: ConversationRecord, mark: Any) -> Generator[Op, Any, int | None]:
    """Where the mark sits, or None when it names no place in the conversation."""
    if not isinstance(mark, str) or not mark:
        return None
    seq = yield from seq_of(cid, record, mark)
    return seq if seq is not None and seq < record.next_seq else None


def read_window(cid: str, last: int, caps: Capabilities) -> Program[ContextWindow]:
    record = yield from visible_meta(cid)
    if record is None:
        return ContextWindow(cid, None, [])
    summary = _stored_summary(record.metadata.get(SUMMARY_KEY))
    mark = record.metadata.get(UNTIL_KEY)
    seq = yield from _mark_seq(cid, record, mark)
    low = record.cleared_below if seq is None else max(record.cleared_below, seq + 1)
    blobs = yield from message_range(
        cid, record, low, record.next_seq, last + 1, reverse=True, caps=caps
    )
    messages = decode_messages([blob.data for blob in blobs[:last]])
    messages.reverse()  # read newest first
    truncated = len(blobs) > last
    left_out: list[str] = []
    if truncated or seq is not None:
        # cut by count or at the mark: tool results whose call was cut off are
        # the cut's (named in left_out_results), not orphans the guard would
        # log (or refuse, strict)
        while messages and (messages[0].role == "tool" or result_ids(messages[0])):
            left_out.append(messages.pop(0).message_id)
    return ContextWindow(
        cid,
        summary,
        messages,
        summarized_until=None if seq is None else mark,
        truncated=truncated,
        left_out_results=left_out,
    )


def guarded(window: ContextWindow, *, strict: bool) -> ContextWindow:
    """``window`` with orphan tool calls and results fixed by the read-path
    guard (:mod:`.history_guard`), or InvalidHistoryError when ``strict``."""
    messages = guard_history(
        window.messages,
        conversation_id=window.conversation_id,
        strict=strict,
        where="context_window",
    )
    return window if messages is window.messages else dataclasses.replace(window, messages=messages)


def write_summary(
    cid: str, summary: str, until: str, now: int | None = None
) -> Program[ConversationMeta]:
    """Both keys in one shallow merge, against the meta ``until`` was found
    in; ``now`` stamps it as a write retention counts (as
    ``update_conversation`` does)."""
    record, etag = yield from load_live_meta(cid)
    if record is None:
        raise MemoryNotFoundError(f"conversation_id {cid!r} not found")
    if (yield from locate(cid, record, until)) is None:
        raise MemoryNotFoundError(
            f"until: message_id {until!r} not found in conversation_id {cid!r}"
        )
    merge_metadata(record, {SUMMARY_KEY: summary, UNTIL_KEY: until})
    stamp(record, now)
    yield from save_meta(cid, record, etag)
    return record.public()
