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

What a tool call and a tool result are, in the shapes the converters
(:mod:`makers_store.convert`) know:

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
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..convert import to_anthropic_messages, to_openai_input
from ..models import Message, fields_dict

# --- the rules, by stable code ---------------------------------------------

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

#: Append a tool result saying the call was interrupted.
REPAIR_APPEND_RESULT = "append-interrupted-result"
#: Move the call out of the assistant message's ``metadata["tool_calls"]``
#: into ``metadata["interrupted_tool_calls"]`` (nothing is lost).
REPAIR_SET_ASIDE_CALL = "set-aside-call"
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
#: The text of the tool result the doctor appends for an interrupted call.
INTERRUPTED_RESULT = "The tool call was interrupted before it returned a result."

#: The markers of the OpenAI session adapter
#: (:mod:`makers_store.adapters.openai_sessions`, which imports the SDK at
#: import time, so they are named here as the platform's metadata keys).
SESSION_MARKERS = ("agent_sdk_session", "openai_agents_item")
_SESSION_OUTPUT_TYPES = frozenset({"function_call_result"})
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


def value_digest(value: Any) -> bytes:
    """A digest of a JSON value (equal for JSON-equal values, ``1`` and
    ``true`` told apart)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _blocks(content: Any) -> Iterator[dict[str, Any]]:
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
        for block in _blocks(message.content)
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
            for block in _blocks(message.content)
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


# --- converter validity -----------------------------------------------------


def written_for(message: Message) -> tuple[bool, bool]:
    """(OpenAI, Anthropic): the APIs ``message`` is judged against. A message
    whose content holds blocks only one API takes (Anthropic's ``tool_use``,
    OpenAI's ``image_url``...) is written for that API, and an app that
    writes it sends it there; any other message (text, typed text parts,
    calls in metadata) is made into both APIs' input by the converters, so
    both judge it. Content holding both kinds is judged by both."""
    kinds = {block.get("type") for block in _blocks(message.content)}
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
        (item,) = to_openai_input([message])
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
        turns = to_anthropic_messages([message])
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
        # calls of the assistant messages whose results may still come next:
        # call id -> (message id, shape: "metadata" or "content")
        self._open: dict[str, tuple[str, str]] = {}
        # calls whose turn closed unanswered, in order
        self._unanswered: dict[str, tuple[str, str]] = {}
        self._called: set[str] = set()
        self._orphan_results: list[tuple[str, str]] = []  # (call id, message id)
        # unanswered calls: call id -> (message id, whether the doctor can answer it)
        self._session_calls: dict[str, tuple[str, bool]] = {}
        self._session_answered: set[str] = set()
        self._session_outputs: dict[str, str] = {}  # output with no call yet -> message id
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
        if is_session_item(message):
            self._session_item(message)
            return found
        self._pairing(message)
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

    def _pairing(self, message: Message) -> None:
        answers = result_ids(message)
        if not answers:  # any other message closes the turn of the open calls
            self._unanswered.update(self._open)
            self._open = {}
        for call_id in answers:
            if self._open.pop(call_id, None) is not None:
                continue
            if call_id in self._called and call_id not in self._unanswered:
                continue  # answered before: a second result is a duplicate's business
            self._orphan_results.append((call_id, message.message_id))
        for shape, calls in (("metadata", metadata_calls(message)),
                             ("content", content_calls(message))):  # fmt: skip
            for call_id in calls:
                self._called.add(call_id)
                self._open[call_id] = (message.message_id, shape)

    def _session_item(self, message: Message) -> None:
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
                self._session_calls[call_id] = (message.message_id, answerable)
        elif self._session_calls.pop(call_id, None) is not None:
            self._session_answered.add(call_id)
        elif call_id not in self._session_answered:
            self._session_outputs.setdefault(call_id, message.message_id)

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
