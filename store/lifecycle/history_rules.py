"""The rules of the history doctor (``store.admin.check_history``): what in a
conversation's messages breaks a model call or a UI, judged one message at a
time, oldest first, with state kept to ids and digests.

:class:`HistoryChecker` is fed one conversation's messages in order
(:meth:`HistoryChecker.feed`) and gives its findings as it goes and at the end
(:meth:`HistoryChecker.finish`); it does no I/O, so the walker
(:mod:`.doctor`) decides how messages are read. Each finding names a rule by a
stable code (the ``RULE_*`` constants) and says, in ``repair``, how
``repair_history`` / ``makers-store doctor --fix`` repairs it, or None when no
repair is safe.

What a tool call and a tool result are, and when they pair, is defined once,
in :mod:`.tool_pairing` (whose names this module re-exports): the read-path
guard (:mod:`.history_guard`) applies the same definition to what it hands a
model.
"""

from __future__ import annotations

import collections
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..models import Message
from .convert import anthropic_turns, openai_items
from .tool_pairing import (
    INTERRUPTED_RESULT,
    REPAIR_APPEND_RESULT,
    REPAIR_SET_ASIDE_CALL,
    RULE_MISPLACED_RESULT,
    RULE_ORPHAN_CALL,
    RULE_ORPHAN_RESULT,
    RULE_ORPHAN_SESSION_CALL,
    RULE_ORPHAN_SESSION_OUTPUT,
    SESSION_MARKERS,
    HistoryFinding,
    ToolPairing,
    blocks,
    content_calls,
    is_session_item,
    metadata_calls,
    result_ids,
    session_call,
)

__all__ = [  # the pairing names, re-exported for the doctor and its callers
    "INTERRUPTED_RESULT",
    "REPAIR_APPEND_RESULT",
    "REPAIR_SET_ASIDE_CALL",
    "RULE_MISPLACED_RESULT",
    "RULE_ORPHAN_CALL",
    "RULE_ORPHAN_RESULT",
    "RULE_ORPHAN_SESSION_CALL",
    "RULE_ORPHAN_SESSION_OUTPUT",
    "SESSION_MARKERS",
    "HistoryChecker",
    "HistoryFinding",
    "content_calls",
    "is_session_item",
    "metadata_calls",
    "result_ids",
    "session_call",
]

# --- the rules, by stable code ---------------------------------------------

#: Two messages of one conversation with one message id.
RULE_DUPLICATE_ID = "duplicate-message-id"
#: The same role and content appended twice within a second by one run.
RULE_DUPLICATE = "duplicate-message"
#: A message ``to_openai_input`` cannot turn into valid Chat Completions input.
RULE_OPENAI_INVALID = "openai-invalid-message"
#: A message ``to_anthropic_messages`` cannot turn into valid Messages API input.
RULE_ANTHROPIC_INVALID = "anthropic-invalid-message"
#: Adapter data kept under a conversation id that has no conversation.
RULE_ORPHAN_ADAPTER_DATA = "orphan-adapter-data"

RULES = (
    RULE_ORPHAN_CALL,
    RULE_ORPHAN_RESULT,
    RULE_MISPLACED_RESULT,
    RULE_ORPHAN_SESSION_CALL,
    RULE_ORPHAN_SESSION_OUTPUT,
    RULE_DUPLICATE_ID,
    RULE_DUPLICATE,
    RULE_OPENAI_INVALID,
    RULE_ANTHROPIC_INVALID,
    RULE_ORPHAN_ADAPTER_DATA,
)

# --- the repairs, by name ---------------------------------------------------

# (append-interrupted-result and set-aside-call: in .tool_pairing)
#: Delete the later of two exact duplicates.
REPAIR_DELETE_DUPLICATE = "delete-duplicate"
#: Each repair in words, as ``doctor`` plans it and the Studio says it.
REPAIR_WORDS = {
    REPAIR_APPEND_RESULT: "append a result saying the call was interrupted",
    REPAIR_SET_ASIDE_CALL: "move the call to metadata.interrupted_tool_calls",
    REPAIR_DELETE_DUPLICATE: "delete the later copy",
}

#: Two appends of one message by one run this close (ms) are a duplicate.
DUPLICATE_WINDOW_MS = 1000
#: Block types that only Anthropic's Messages API takes: a message holding
#: one is written for it, and judged against it alone.
_ANTHROPIC_ONLY_TYPES = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image",
     "server_tool_use", "web_search_tool_result", "search_result"}
)  # fmt: skip
#: Part types that only OpenAI's APIs take: likewise.
_OPENAI_ONLY_TYPES = frozenset({"image_url", "input_audio", "refusal", "file"})
#: Content part types of Chat Completions messages.
_OPENAI_PART_TYPES = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
#: Part types of other APIs the Messages API refuses (OpenAI's Chat
#: Completions and Responses parts); any other typed block is passed on.
_NOT_ANTHROPIC_TYPES = frozenset(
    {"image_url", "input_audio", "refusal", "input_text", "output_text", "input_image",
     "input_file", "file"}
)  # fmt: skip


def value_digest(value: Any) -> bytes:
    """A digest of a JSON value (equal for JSON-equal values, ``1`` and
    ``true`` told apart)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


# --- converter validity -----------------------------------------------------


def written_for(message: Message) -> tuple[bool, bool]:
    """(OpenAI, Anthropic): the APIs ``message`` is judged against. A message
    whose content holds blocks only one API takes (Anthropic's ``tool_use``,
    OpenAI's ``image_url``...) is written for that API, and an app that
    writes it sends it there; any other message (text, typed text parts,
    calls in metadata) is made into both APIs' input by the converters, so
    both judge it. Content holding both kinds is judged by both."""
    kinds = {block.get("type") for block in blocks(message.content)}
    anthropic, openai = bool(kinds & _ANTHROPIC_ONLY_TYPES), bool(kinds & _OPENAI_ONLY_TYPES)
    if anthropic != openai:
        return openai, anthropic
    return True, True


def _openai_problem(message: Message) -> str | None:
    """Why ``to_openai_input([message])`` is not a valid Chat Completions
    message, or None. Valid: content a string, a list of typed content parts
    of Chat Completions' kinds, or None beside tool calls; a tool message
    with a ``tool_call_id``; each tool call ``{id, type: "function",
    function: {name, arguments: <a JSON string>}}``."""
    try:
        (item,) = openai_items([message])
    except Exception as exc:  # the converter's own failure is the finding
        return f"to_openai_input fails on it ({type(exc).__name__}: {exc})"
    content = item.get("content")
    if content is None:
        if not item.get("tool_calls"):
            return "its content is null and it makes no tool calls"
    elif isinstance(content, list):
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(kind, str):
                return f"content part {index} is not an object with a string 'type'"
            if kind not in _OPENAI_PART_TYPES:
                return f"content part {index} has type {kind!r}, not a Chat Completions part"
    elif not isinstance(content, str):
        return (
            f"its content is {_json_kind(content)}; Chat Completions takes a string "
            "or a list of content parts"
        )
    if item["role"] == "tool" and not item.get("tool_call_id"):
        return "a tool message needs metadata.tool_call_id, naming the call it answers"
    calls = item.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return "metadata.tool_calls is not a list"
        for index, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if (
                not isinstance(call, dict)
                or not isinstance(call.get("id"), str)
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
            ):
                return f"metadata.tool_calls[{index}] lacks a string id or function.name"
            if call.get("type", "function") != "function":
                return f"metadata.tool_calls[{index}] has type {call.get('type')!r}, not 'function'"
            if not isinstance(function.get("arguments"), str):
                return f"metadata.tool_calls[{index}].function.arguments is not a JSON string"
    return None


def _anthropic_problem(message: Message) -> str | None:
    """Why ``to_anthropic_messages([message])`` is not a valid turn of the
    Messages API, or None. Valid: every block an object with a string
    ``type`` of no other API's kind; text blocks with non-empty text;
    ``tool_use`` (``id``, ``name``, an object ``input``) only in assistant
    turns; ``tool_result`` (a ``tool_use_id``) only in user turns. (The
    converter itself leaves system messages out, drops empty turns and merges
    consecutive turns of a role, so alternation holds by construction.)"""
    try:
        turns = anthropic_turns([message])
    except Exception as exc:  # the converter's own failure is the finding
        return f"to_anthropic_messages fails on it ({type(exc).__name__}: {exc})"
    for turn in turns:
        content = turn["content"]
        if isinstance(content, str):
            if not content:
                return "its only text block is empty"
            continue
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if not isinstance(kind, str):
                return f"block {index} is not an object with a string 'type'"
            if kind in _NOT_ANTHROPIC_TYPES:
                return f"block {index} has type {kind!r}, which the Messages API does not take"
            if kind == "text" and not (isinstance(block.get("text"), str) and block["text"]):
                return f"text block {index} has no text"
            if kind == "tool_use":
                if turn["role"] != "assistant":
                    return f"block {index} is a tool_use in a {turn['role']} turn"
                if not (
                    isinstance(block.get("id"), str)
                    and isinstance(block.get("name"), str)
                    and isinstance(block.get("input"), dict)
                ):
                    return f"tool_use block {index} lacks a string id, a name or an object input"
            if kind == "tool_result":
                if turn["role"] != "user":
                    return f"block {index} is a tool_result in a {turn['role']} turn"
                if not isinstance(block.get("tool_use_id"), str):
                    return f"tool_result block {index} lacks a string tool_use_id"
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


# --- the checker ---------------------------------------------------------------


@dataclass(slots=True)
class _Seen:
    message_id: str
    created_at: int
    exact: bytes  # digest of the metadata: equal for an exact duplicate


class HistoryChecker:
    """The rules over one conversation's messages, fed oldest first.

    Memory holds ids and digests only: the ids of calls and results met, every
    message id (for :data:`RULE_DUPLICATE_ID`; a conversation holds at most
    10,000 messages), and the digests of the messages of the last second.
    """

    def __init__(self, conversation_id: str) -> None:
        self.cid = conversation_id
        self._pairs = ToolPairing(conversation_id)
        self._ids: set[str] = set()
        self._recent: collections.deque[tuple[int, bytes]] = collections.deque()
        self._recent_first: dict[bytes, _Seen] = {}

    def feed(self, message: Message) -> list[HistoryFinding]:
        """The findings ``message`` settles (more come from :meth:`finish`)."""
        found: list[HistoryFinding] = []
        mid = message.message_id
        if mid in self._ids:
            found.append(
                self._finding(
                    RULE_DUPLICATE_ID,
                    (mid,),
                    f"two messages have the id {mid!r}: a UI keyed by id shows one of them, "
                    "and lookups by the id find only one",
                )
            )
        self._ids.add(mid)
        found += self._duplicates(message)
        self._pairs.feed(message, mid)
        if is_session_item(message):
            return found
        for_openai, for_anthropic = written_for(message)
        for rule, problem in (
            (RULE_OPENAI_INVALID, _openai_problem(message) if for_openai else None),
            (RULE_ANTHROPIC_INVALID, _anthropic_problem(message) if for_anthropic else None),
        ):
            if problem is not None:
                api = "Chat Completions" if rule == RULE_OPENAI_INVALID else "the Messages API"
                said = f"{message.role} message is not valid input for {api}: {problem}"
                found.append(self._finding(rule, (mid,), said))
        return found

    def finish(self) -> list[HistoryFinding]:
        """The findings that need the whole conversation read (pairing)."""
        return self._pairs.finish()

    # --- the rules ---------------------------------------------------------

    def _finding(
        self,
        rule: str,
        message_ids: tuple[str, ...],
        description: str,
        *,
        repair: str | None = None,
        call_id: str | None = None,
    ) -> HistoryFinding:
        return HistoryFinding(self.cid, rule, message_ids, description, repair, call_id)

    def _duplicates(self, message: Message) -> list[HistoryFinding]:
        """Same role, content and run (``metadata.run_id``, or none on both),
        and the same tool-call ids, created within a second of an earlier
        message: a retried append."""
        metadata = message.metadata or {}
        run = metadata.get("run_id")
        identity = [
            message.role,
            message.content,
            run if isinstance(run, str) else None,
            metadata.get("tool_call_id"),
            metadata.get("tool_use_id"),
            metadata_calls(message),
        ]
        fingerprint = value_digest(identity)
        at = message.created_at
        while self._recent and self._recent[0][0] < at - DUPLICATE_WINDOW_MS:
            _, old = self._recent.popleft()
            seen = self._recent_first.get(old)
            if seen is not None and seen.created_at < at - DUPLICATE_WINDOW_MS:
                del self._recent_first[old]
        exact = value_digest(message.metadata or {})
        first = self._recent_first.get(fingerprint)
        self._recent.append((at, fingerprint))
        if first is None or abs(at - first.created_at) > DUPLICATE_WINDOW_MS:
            self._recent_first[fingerprint] = _Seen(message.message_id, at, exact)
            return []
        if first.message_id == message.message_id:
            return []  # one id twice: RULE_DUPLICATE_ID says it
        same = first.exact == exact
        return [
            self._finding(
                RULE_DUPLICATE,
                (first.message_id, message.message_id),
                f"{message.role} message repeats {first.message_id!r} "
                f"{at - first.created_at} ms later "
                + (f"in the same run {run!r}" if isinstance(run, str) else "(neither names a run)")
                + ("" if same else " (with other metadata)")
                + "; a model reads it twice and a UI shows it twice",
                repair=REPAIR_DELETE_DUPLICATE if same else None,
            )
        ]
