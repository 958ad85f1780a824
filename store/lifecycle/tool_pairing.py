"""Which tool calls and tool results of a history pair up: the one
definition of an orphan tool call and an orphan tool result, which the history
doctor (:mod:`.history_rules`, :mod:`.doctor`) reports and repairs in the
store, and the read-path guard (:mod:`.history_guard`) fixes in what it hands
a model.

What a tool call and a tool result are, in the shapes the converters
(:mod:`makers_store.lifecycle.convert`) know:

- a call: an entry with an ``id`` of an assistant message's
  ``metadata["tool_calls"]`` (Chat Completions shape), or a ``tool_use``
  block with an ``id`` in an assistant message's structured content
  (Anthropic shape);
- a result: a ``tool`` message whose metadata carries ``tool_call_id`` (or
  ``tool_use_id``), or a ``tool_result`` block with a ``tool_use_id`` in
  structured content;
- inside OpenAI Agents SDK session items (messages the adapter marked with
  ``agent_sdk_session``, or ``openai_agents_item`` before), an item of a type
  ending in ``_call`` with a ``call_id`` is a call, one of type ``*_call_output``
  (or Agents JS's ``function_call_result``) with that ``call_id`` its result.

Positions: Chat Completions requires the results of an assistant message's
calls to follow it before any other message, and Anthropic requires them in the
very next user turn, so a call whose results did not come before the next
message that is not a result is broken even if its result comes later
(:data:`RULE_MISPLACED_RESULT`). Session items are read by the Agents SDK,
which sends them to the Responses API, where an output is paired with its call
by ``call_id``: for them only presence counts.

:class:`ToolPairing` is fed a history's messages oldest first and names what
does not pair; it does no I/O and keeps call ids only. This module imports no
converter, so the converters can use it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._core import validate
from ..models import Message, fields_dict

#: An assistant tool call with no tool result.
RULE_ORPHAN_CALL = "orphan-tool-call"
#: A tool result whose call no message makes.
RULE_ORPHAN_RESULT = "orphan-tool-result"
#: A tool result that comes after another message closed its call's turn.
RULE_MISPLACED_RESULT = "misplaced-tool-result"
#: An Agents SDK session item ``function_call`` (any ``*_call`` with a
#: ``call_id``) with no output item.
RULE_ORPHAN_SESSION_CALL = "orphan-session-call"
#: A session output item whose call no item makes.
RULE_ORPHAN_SESSION_OUTPUT = "orphan-session-output"
#: The rules :class:`ToolPairing` judges.
PAIRING_RULES = (
    RULE_ORPHAN_CALL,
    RULE_ORPHAN_RESULT,
    RULE_MISPLACED_RESULT,
    RULE_ORPHAN_SESSION_CALL,
    RULE_ORPHAN_SESSION_OUTPUT,
)

#: Append a tool result saying the call was interrupted.
REPAIR_APPEND_RESULT = "append-interrupted-result"
#: Move the call out of the assistant message's ``metadata["tool_calls"]``
#: into ``metadata["interrupted_tool_calls"]`` (nothing is lost).
REPAIR_SET_ASIDE_CALL = "set-aside-call"

#: The text of the tool result that answers an interrupted call (the doctor
#: appends it; the read-path guard hands it to the model).
INTERRUPTED_RESULT = "The tool call was interrupted before it returned a result."
#: The client ids of those results start so.
INTERRUPTED_ID_PREFIX = "interrupted-"

#: The markers of the OpenAI session adapter
#: (:mod:`makers_store.adapters.openai.sessions`, which imports the SDK at
#: import time, so they are named here as the platform's metadata keys).
SESSION_MARKERS = ("agent_sdk_session", "openai_agents_item")
_SESSION_OUTPUT_TYPES = frozenset({"function_call_result"})


@dataclass(frozen=True, slots=True)
class HistoryFinding:
    """One thing that breaks a model call or a UI: in ``conversation_id``,
    the messages ``message_ids`` (the call first, or the kept message first;
    empty for adapter data), by ``rule`` (a stable code), said in
    ``description``. ``call_id`` names the tool call a pairing rule is about.
    ``repair`` is how ``repair_history`` repairs it (a ``REPAIR_*`` name), or
    None: then it is reported only."""

    conversation_id: str
    rule: str
    message_ids: tuple[str, ...]
    description: str
    repair: str | None = None
    call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = fields_dict(self)
        out["message_ids"] = list(self.message_ids)
        return out


def is_session_item(message: Message) -> bool:
    """Whether ``message`` holds an OpenAI Agents SDK item (the adapter's marker)."""
    metadata = message.metadata
    return isinstance(metadata, dict) and any(metadata.get(m) is True for m in SESSION_MARKERS)


def interrupted_id(call_id: str) -> str:
    """The message id of the result that answers the interrupted call
    ``call_id`` (the doctor's client id): readable when it fits the id rules,
    else a digest of the call id."""
    candidate = INTERRUPTED_ID_PREFIX + call_id
    try:
        if validate.client_message_id(candidate) == candidate:
            return candidate
    except Exception:  # an id the rules refuse: use its digest instead
        pass
    return INTERRUPTED_ID_PREFIX + hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()


def blocks(content: Any) -> Iterator[dict[str, Any]]:
    if isinstance(content, dict):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                yield part


def metadata_calls(message: Message) -> list[str]:
    """Ids of the Chat Completions calls in an assistant message's metadata."""
    calls = (message.metadata or {}).get("tool_calls")
    if message.role != "assistant" or not isinstance(calls, list):
        return []
    return [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


def content_calls(message: Message) -> list[str]:
    """Ids of the ``tool_use`` blocks in an assistant message's content."""
    if message.role != "assistant":
        return []
    return [
        block["id"]
        for block in blocks(message.content)
        if block.get("type") == "tool_use" and isinstance(block.get("id"), str)
    ]


def result_ids(message: Message) -> list[str]:
    """Ids of the calls ``message`` answers (a ``tool`` message's metadata, and
    ``tool_result`` blocks of its content)."""
    found: list[str] = []
    metadata = message.metadata or {}
    if message.role == "tool":
        call_id = metadata.get("tool_call_id") or metadata.get("tool_use_id")
        if isinstance(call_id, str) and call_id:
            found.append(call_id)
    if message.role in ("user", "tool"):
        found += [
            block["tool_use_id"]
            for block in blocks(message.content)
            if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str)
        ]
    return found


def session_call(item: Any) -> tuple[str, str] | None:
    """(kind, call_id) of a session item: kind "call" or "output"."""
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    call_id = item.get("call_id", item.get("callId"))
    if not isinstance(kind, str) or not isinstance(call_id, str) or not call_id:
        return None
    if kind.endswith("_call_output") or kind in _SESSION_OUTPUT_TYPES:
        return "output", call_id
    if kind.endswith("_call"):
        return "call", call_id
    return None


class ToolPairing:
    """The pairing rules over one history, fed oldest first
    (:meth:`feed`), judged at the end (:meth:`finish`). Each message is fed
    with ``ref``, the name findings give it (``message_ids``): its message id
    for the doctor, its position for the guard. Memory holds call ids only."""

    def __init__(self, conversation_id: str) -> None:
        self.cid = conversation_id
        # calls of the assistant messages whose results may still come next:
        # call id -> (ref, shape: "metadata" or "content")
        self._open: dict[str, tuple[str, str]] = {}
        # calls whose turn closed unanswered, in order
        self._unanswered: dict[str, tuple[str, str]] = {}
        self._called: set[str] = set()
        self._orphan_results: list[tuple[str, str]] = []  # (call id, ref)
        # unanswered calls: call id -> (ref, whether an output can answer it)
        self._session_calls: dict[str, tuple[str, bool]] = {}
        self._session_answered: set[str] = set()
        self._session_outputs: dict[str, str] = {}  # output with no call yet -> ref

    def feed(self, message: Message, ref: str) -> None:
        """Note the calls and results of ``message``, named ``ref``."""
        if is_session_item(message):
            self._session_item(message, ref)
        else:
            self._pairing(message, ref)

    def finish(self) -> list[HistoryFinding]:
        """The findings that need the whole conversation read (pairing)."""
        found: list[HistoryFinding] = []
        late = {call_id for call_id, _ in self._orphan_results if call_id in self._unanswered}
        # calls still open at the end are at the tail: a result appended now lands right
        for call_id, (mid, shape) in self._open.items():
            found.append(self._orphan_call(call_id, mid, shape, tail=True))
        for call_id, (mid, shape) in self._unanswered.items():
            if call_id not in late:
                found.append(self._orphan_call(call_id, mid, shape, tail=False))
        for call_id, result_mid in self._orphan_results:
            if call_id in late:
                call_mid = self._unanswered[call_id][0]
                found.append(
                    self._finding(
                        RULE_MISPLACED_RESULT,
                        (call_mid, result_mid),
                        f"the result of tool call {call_id!r} comes after another message "
                        "closed the call's turn; the model APIs want it right after the call",
                        call_id=call_id,
                    )
                )
            else:
                found.append(
                    self._finding(
                        RULE_ORPHAN_RESULT,
                        (result_mid,),
                        f"tool result for call {call_id!r}, which no earlier assistant "
                        "message makes; the model APIs refuse a result without its call",
                        call_id=call_id,
                    )
                )
        for call_id, (mid, answerable) in self._session_calls.items():
            found.append(
                self._finding(
                    RULE_ORPHAN_SESSION_CALL,
                    (mid,),
                    f"session item calls {call_id!r} and no item holds its output; the "
                    "Responses API refuses the session's input until one does",
                    repair=REPAIR_APPEND_RESULT if answerable else None,
                    call_id=call_id,
                )
            )
        for call_id, mid in self._session_outputs.items():
            found.append(
                self._finding(
                    RULE_ORPHAN_SESSION_OUTPUT,
                    (mid,),
                    f"session item holds the output of call {call_id!r}, which no item makes",
                    call_id=call_id,
                )
            )
        return found

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

    def _orphan_call(self, call_id: str, mid: str, shape: str, *, tail: bool) -> HistoryFinding:
        if tail:
            repair: str | None = REPAIR_APPEND_RESULT
            where = "no tool result follows it"
        else:
            where = "the next message is not its tool result"
            repair = REPAIR_SET_ASIDE_CALL if shape == "metadata" else None
        return self._finding(
            RULE_ORPHAN_CALL,
            (mid,),
            f"assistant tool call {call_id!r} has no result ({where}); both model APIs "
            "refuse the history",
            repair=repair,
            call_id=call_id,
        )

    def _pairing(self, message: Message, ref: str) -> None:
        answers = result_ids(message)
        if not answers:  # any other message closes the turn of the open calls
            self._unanswered.update(self._open)
            self._open = {}
        for call_id in answers:
            if self._open.pop(call_id, None) is not None:
                continue
            if call_id in self._called and call_id not in self._unanswered:
                continue  # answered before: a second result is a duplicate's business
            self._orphan_results.append((call_id, ref))
        for shape, calls in (("metadata", metadata_calls(message)),
                             ("content", content_calls(message))):  # fmt: skip
            for call_id in calls:
                self._called.add(call_id)
                self._open[call_id] = (ref, shape)

    def _session_item(self, message: Message, ref: str) -> None:
        pair = session_call(message.content)
        if pair is None:
            return
        kind, call_id = pair
        if kind == "call":
            if call_id in self._session_outputs:  # the output came first: paired anyway
                del self._session_outputs[call_id]
                self._session_answered.add(call_id)
            elif call_id not in self._session_answered:
                item = message.content
                # a function_call's output is a string; other calls' outputs
                # (a computer call's screenshot...) have nothing to say "interrupted" with
                answerable = item.get("type") == "function_call" and "call_id" in item
                self._session_calls[call_id] = (ref, answerable)
        elif self._session_calls.pop(call_id, None) is not None:
            self._session_answered.add(call_id)
        elif call_id not in self._session_answered:
            self._session_outputs.setdefault(call_id, ref)
