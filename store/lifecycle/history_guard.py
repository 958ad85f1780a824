"""The read-path guard: a history handed to a model never holds an orphan
tool call or an orphan tool result (issue 33).

A run cut between a tool call and its result (a crash, a stop, a timeout)
leaves a history both model APIs refuse, so every later turn would fail until
someone ran the doctor. The converters (:mod:`makers_store.lifecycle.convert`), the
context window and the OpenAI session's ``get_items`` pass what they hand a
model through :func:`guard_history`, which judges it by the doctor's own
pairing rules (:class:`.tool_pairing.ToolPairing`: one definition of an
orphan) and fixes **the output only**; the stored history is unchanged until
``makers-store doctor --fix`` (``store.admin.repair_history``) repairs it:

- an orphan call (:data:`~.tool_pairing.RULE_ORPHAN_CALL`, and the call of a
  :data:`~.tool_pairing.RULE_MISPLACED_RESULT`) gets a ``tool`` message right
  after its turn (the assistant message and the results that follow it), as
  the doctor would append it at the tail: content
  :data:`~.tool_pairing.INTERRUPTED_RESULT`, metadata ``{"tool_call_id": id,
  "is_error": true, "interrupted": true}``, message id ``interrupted-{call
  id}`` and the call's ``created_at``;
- an orphan result (:data:`~.tool_pairing.RULE_ORPHAN_RESULT`), and a result
  that comes after another message closed its call's turn (its call was
  answered as interrupted, above), is left out: the whole ``tool`` message, or
  only its ``tool_result`` block when the message holds more;
- in OpenAI Agents SDK session items, a ``function_call`` without output
  (:data:`~.tool_pairing.RULE_ORPHAN_SESSION_CALL`) gets a
  ``function_call_output`` item right after it, the one the doctor appends;
  a call of another kind (a computer call's output is a screenshot: nothing
  can say "interrupted") and an output without its call
  (:data:`~.tool_pairing.RULE_ORPHAN_SESSION_OUTPUT`) are left out.

Each fix is logged once per conversation and call, at WARNING on the logger
``makers_store.history_guard``, naming the doctor's rule. "Once" holds across
calls in one process with bounded memory: the keys logged (conversation id,
rule, call id) are kept in a least-recently-used set of at most
:data:`LOGGED_KEYS_MAX` entries, so a fix is logged again only after that
many other fixes were logged since (a few MB at most, with the longest ids).

``strict=True`` raises :class:`~makers_store.InvalidHistoryError` (a
:class:`~makers_store.MemoryValidationError`) naming every finding instead
of fixing anything.

Session items get one more placement, which is no fix and is neither logged
nor refused: an output separated from its call by other items is moved right
after the call. The Responses API pairs them by ``call_id`` wherever they
stand (so the doctor accepts that order, and its repair appends an
interrupted call's output at the end), but the Agents SDK turns the items
into Chat Completions messages in order when its model speaks that protocol
(as the Makers AI gateway does), and there a tool message must follow its
call.

A history that needs none of this is returned as it is (the same list): the
check is two passes over the messages keeping call ids only.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
from typing import Any

from ..errors import InvalidHistoryError, MemoryValidationError
from ..models import Message
from .tool_pairing import (
    INTERRUPTED_RESULT,
    REPAIR_APPEND_RESULT,
    RULE_MISPLACED_RESULT,
    RULE_ORPHAN_CALL,
    RULE_ORPHAN_RESULT,
    RULE_ORPHAN_SESSION_CALL,
    RULE_ORPHAN_SESSION_OUTPUT,
    SESSION_MARKERS,
    HistoryFinding,
    ToolPairing,
    interrupted_id,
    is_session_item,
    result_ids,
    session_call,
)

#: The logger the guard's fixes go to.
logger = logging.getLogger("makers_store.history_guard")
#: The most (conversation, rule, call) keys remembered as logged.
LOGGED_KEYS_MAX = 10_000

_logged: collections.OrderedDict[tuple[str, str, str], None] = collections.OrderedDict()
_logged_lock = threading.Lock()


def guard_history(
    messages: list[Message],
    *,
    conversation_id: str | None,
    strict: bool,
    where: str,
) -> list[Message]:
    """``messages`` (oldest first) as a model may take them: fixed as the
    module docstring says, or ``messages`` itself when nothing needs a fix.
    ``conversation_id`` (None when the caller does not know it) keys the
    log-once memory; ``where`` names the caller in the log and the error."""
    if not isinstance(strict, bool):
        raise MemoryValidationError(f"strict must be a bool, not {type(strict).__name__}")
    pairing = ToolPairing(conversation_id or "")
    for position, message in enumerate(messages):
        pairing.feed(message, str(position))
    findings = pairing.finish()
    if not findings:
        return _outputs_after_calls(messages)
    if strict:
        named = "" if conversation_id is None else f" of conversation {conversation_id!r}"
        said = "; ".join(f"{f.rule}: {f.description}" for f in findings)
        raise InvalidHistoryError(
            f"{where}: the history{named} is not valid model input ({said}); "
            "makers-store doctor --fix repairs it (or pass strict=False to have the "
            "model read it fixed)",
            findings=findings,
        )
    inserts: dict[int, list[Message]] = collections.defaultdict(list)  # after position
    dropped: dict[int, set[str]] = collections.defaultdict(set)  # position -> call ids
    for finding in findings:
        call_id = finding.call_id or ""
        positions = [int(ref) for ref in finding.message_ids]
        if finding.rule in (RULE_ORPHAN_CALL, RULE_MISPLACED_RESULT):
            call_at = positions[0]
            inserts[_turn_end(messages, call_at)].append(
                _interrupted_result(messages[call_at], call_id)
            )
            if finding.rule == RULE_MISPLACED_RESULT:
                dropped[positions[1]].add(call_id)
        elif finding.rule == RULE_ORPHAN_SESSION_CALL and finding.repair == REPAIR_APPEND_RESULT:
            inserts[positions[0]].append(_interrupted_output(messages[positions[0]], call_id))
        elif finding.rule in (RULE_ORPHAN_RESULT, RULE_ORPHAN_SESSION_CALL,
                              RULE_ORPHAN_SESSION_OUTPUT):  # fmt: skip
            dropped[positions[0]].add(call_id)
        _log_once(finding, where)
    out: list[Message] = []
    for position, message in enumerate(messages):
        kept = _without_results(message, dropped[position]) if position in dropped else message
        if kept is not None:
            out.append(kept)
        out += inserts.get(position, [])
    return _outputs_after_calls(out)


def _outputs_after_calls(messages: list[Message]) -> list[Message]:
    """Session items with each output moved right after its call when
    another kind of item stands between them (or it comes first). The
    Responses API pairs them by ``call_id`` wherever they stand, so the
    doctor's rules accept that order; but the Agents SDK turns items into
    Chat Completions messages in order for a Chat Completions model (the
    Makers AI gateway's protocol), where a tool message must follow its
    call's message. Not a fix of the history: not logged, not refused."""
    calls: dict[str, int] = {}
    outputs: list[tuple[int, str]] = []
    for position, message in enumerate(messages):
        pair = session_call(message.content) if is_session_item(message) else None
        if pair is not None:
            if pair[0] == "call":
                calls.setdefault(pair[1], position)
            else:
                outputs.append((position, pair[1]))
    moved: dict[int, list[Message]] = collections.defaultdict(list)  # after call position
    away: set[int] = set()
    for position, call_id in outputs:
        at = calls.get(call_id)
        if at is None:
            continue
        between = messages[at + 1 : position] if at < position else None
        if between is not None and all(
            is_session_item(m) and session_call(m.content) is not None for m in between
        ):
            continue
        moved[at].append(messages[position])
        away.add(position)
    if not away:
        return messages
    out: list[Message] = []
    for position, message in enumerate(messages):
        if position not in away:
            out.append(message)
        out += moved.get(position, [])
    return out


def _turn_end(messages: list[Message], call_at: int) -> int:
    """The position after which a result for the call at ``call_at`` goes:
    the last of the results that follow the calling message."""
    end = call_at
    while end + 1 < len(messages) and not is_session_item(messages[end + 1]):
        if not result_ids(messages[end + 1]):
            break
        end += 1
    return end


def _interrupted_result(call: Message, call_id: str) -> Message:
    return Message(
        message_id=interrupted_id(call_id),
        role="tool",
        content=INTERRUPTED_RESULT,
        created_at=call.created_at,
        metadata={"tool_call_id": call_id, "is_error": True, "interrupted": True},
    )


def _interrupted_output(call: Message, call_id: str) -> Message:
    run = (call.metadata or {}).get("run_id")
    return Message(
        message_id=interrupted_id(call_id),
        role="tool",
        content={"type": "function_call_output", "call_id": call_id, "output": INTERRUPTED_RESULT},
        created_at=call.created_at,
        metadata={
            SESSION_MARKERS[0]: True,
            "item_type": "function_call_output",
            "run_id": run if isinstance(run, str) else "guard",
        },
    )


def _without_results(message: Message, call_ids: set[str]) -> Message | None:
    """``message`` without its results for ``call_ids`` (or its item, for a
    session item), or None when nothing of it is left."""
    if is_session_item(message):
        return None
    metadata = message.metadata or {}
    if (
        message.role == "tool"
        and (metadata.get("tool_call_id") or metadata.get("tool_use_id")) in call_ids
    ):
        return None
    content = message.content
    if isinstance(content, dict):
        return None if _answers(content, call_ids) else message
    if isinstance(content, list):
        kept: list[Any] = [part for part in content if not _answers(part, call_ids)]
        return dataclasses.replace(message, content=kept) if kept else None
    return message


def _answers(part: Any, call_ids: set[str]) -> bool:
    return (
        isinstance(part, dict)
        and part.get("type") == "tool_result"
        and part.get("tool_use_id") in call_ids
    )


def _log_once(finding: HistoryFinding, where: str) -> None:
    key = (finding.conversation_id, finding.rule, finding.call_id or "")
    with _logged_lock:
        if key in _logged:
            _logged.move_to_end(key)
            return
        _logged[key] = None
        while len(_logged) > LOGGED_KEYS_MAX:
            _logged.popitem(last=False)
    fix = {
        RULE_ORPHAN_CALL: "a result saying the call was interrupted, placed after it",
        RULE_MISPLACED_RESULT: "a result saying the call was interrupted, placed after it, "
        "and not the late result",
        RULE_ORPHAN_SESSION_CALL: "an output saying the call was interrupted"
        if finding.repair == REPAIR_APPEND_RESULT
        else "the history without the call",
    }.get(finding.rule, "the history without the result")
    named = f"conversation {finding.conversation_id!r}" if finding.conversation_id else "history"
    logger.warning(
        "%s: %s, rule %s: %s; the model gets %s (the stored history is unchanged: "
        "makers-store doctor --fix repairs it)",
        where,
        named,
        finding.rule,
        finding.description,
        fix,
    )
