"""The history doctor: ``store.admin.check_history`` finds what breaks a model
call or a UI, ``store.admin.repair_history`` repairs what has one safe repair
(``makers-store doctor [--fix]``). The rules are in :mod:`.history_rules`.

**The walk.** Without a conversation id, every conversation id that owns data
is visited through the store's one page walker
(:func:`makers_store.maintenance.inventory.conversation_pages`: pages of 100 ids with
their metas, one unit of work each), so ids that own adapter data but no
conversation are met too. A live conversation's messages are read oldest
first through the same walker, a page per unit of work (10 messages where
requests are cheap, 100 where each is billed, as the search reads), followed
by seq rather than by message id, since an id two messages hold is no cursor
to trust; they are fed to a :class:`~.history_rules.HistoryChecker`, which keeps
ids and digests only. Memory is bounded by one page of conversations, one page
of messages and one conversation's ids (at most 10,000 messages), whatever the
store's size. Findings come conversation by conversation, in key order.

**Adapter data without a conversation** (:data:`~.history_rules.RULE_ORPHAN_ADAPTER_DATA`).
Adapters keep their data under the conversation's id (``c/{cid}/x/...``) and
``delete_conversation`` deletes it, so data is reported when its id has

- a meta marked as being deleted: a ``delete_conversation`` cut short (its
  next writer, or ``delete_conversation`` again, finishes it); every kind of
  data left is named;
- no meta, and LangGraph checkpoints (``thread_id`` is the conversation id),
  a Claude session binding (made for a conversation id) or message blobs
  (OpenAI session items are messages; without meta none is visible): a
  history UI lists nothing for that id.

Claude transcripts under an id without meta are not reported by themselves:
``claude_session_binding`` keeps a conversation's session under a UUID that is
no conversation (linked from it), and the SDK's own session ids are no
conversations either; telling an abandoned session from those would need a
reverse index of links the store does not keep. Its binding conversation is
checked instead. State without meta is not adapter data (``state`` may be
written before any message) and is not reported.

**Repairs** (``repair_history``) re-check each finding inside the unit of work
that repairs it, or right before an append that is conditional on the
conversation being as the re-check read it (and idempotent), so data a
concurrent writer changed meanwhile is left alone (the repair says so):

- an orphan tool call whose assistant message is followed only by tool
  results (the tail of the history) gets a ``tool`` message appended, content
  :data:`~.history_rules.INTERRUPTED_RESULT`, metadata ``{"tool_call_id": id,
  "is_error": true, "interrupted": true}``, under the client id
  ``interrupted-{call id}``, so a second repair, or two doctors at once, store
  it once. Appended there it lands where both APIs want it: Chat Completions
  right after the calls' other results, Anthropic (whose converter merges
  consecutive tool results into one user turn) in the turn after the calls.
- a session item ``function_call`` without output gets a
  ``function_call_output`` item appended, in the adapter's message form
  (metadata ``agent_sdk_session``, ``item_type``, the call's ``run_id``):
  the Responses API pairs an output with its call by ``call_id``, wherever it
  stands.
- an orphan tool call in the middle of the history cannot get a result where
  the APIs want it (the store appends; it does not insert). When the call is
  in ``metadata["tool_calls"]``, the assistant message is updated instead:
  the call moves to ``metadata["interrupted_tool_calls"]`` with a ``result``
  saying it was interrupted, so nothing is lost and the converters no longer
  send a call that never returned. The update is conditional on the blob
  the check read. A call inside structured content is reported only.
- the later of two exact duplicates (same role, content and metadata, same
  run, within a second) is deleted, after both are read again and compared
  inside the unit; it is first rewritten conditionally (so an update begun
  before is refused), then deleted as ``delete_message`` deletes.

Everything else is reported only.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core import appends, keys, paging, programs, validate
from .._core.codec import (
    ConversationRecord,
    decode_json,
    decode_message,
    decode_messages,
    encode_message,
)
from .._core.message_lookup import locate
from .._core.message_programs import message_range, remove_messages
from ..blob import Capabilities
from ..blob_ops import Op, Program, get, list_keys, put
from ..errors import MemoryConflictError, MemoryNotFoundError, PreconditionFailedError
from ..lifecycle import history_rules as rules
from ..lifecycle.history_rules import HistoryChecker, HistoryFinding
from ..lifecycle.tool_pairing import interrupted_id, session_call
from ..models import Message, fields_dict
from . import inventory
from .search import BILLED_PAGE, LOCAL_PAGE

if TYPE_CHECKING:
    from ..api.conversation_store import ConversationStore

#: Messages read per unit of work when looking past a call for its result.
_WINDOW_BATCH = 50
#: Checks (each followed by a conditional append) before a repair gives up
#: on a conversation that keeps changing.
_RECHECKS = 3


@dataclass(frozen=True, slots=True)
class HistoryRepair:
    """What ``repair_history`` did about one finding: ``repaired`` when it
    changed the store for it (or found it already repaired by an earlier run:
    then ``outcome`` says so), else why it left it."""

    finding: HistoryFinding
    repaired: bool
    outcome: str

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, nested=("finding",))


# --- the walk ------------------------------------------------------------------


async def check_history(
    store: ConversationStore,
    conversation_id: str | None = None,
    *,
    on_conversation: Callable[[], None] | None = None,
) -> AsyncIterator[HistoryFinding]:
    """What breaks a model call or a UI in ``conversation_id`` (else in
    every conversation id owning data), each a
    :class:`~makers_store.lifecycle.history_rules.HistoryFinding` naming
    the conversation, the messages and the rule: tool calls without
    results and results without calls (messages and OpenAI session items),
    duplicated messages, messages the converters cannot turn into valid
    OpenAI or Anthropic input, adapter data without its conversation.
    Read-only; memory stays bounded (see
    :mod:`makers_store.maintenance.doctor`). ``on_conversation()`` runs after
    each conversation id checked. A named id that owns no data at all is
    :class:`~makers_store.MemoryNotFoundError`."""
    async for _, findings in _checked(store, conversation_id, on_conversation):
        for finding in findings:
            yield finding


async def repair_history(
    store: ConversationStore,
    conversation_id: str | None = None,
    *,
    on_conversation: Callable[[], None] | None = None,
) -> AsyncIterator[HistoryRepair]:
    """Check as :meth:`check_history` does and repair each finding that
    has one safe repair (``finding.repair``), re-checked at repair time:
    an orphan tool call gets a result saying it was interrupted (or, in the
    middle of the history, is set aside in the message's metadata), the
    later of two exact duplicates is deleted. One
    :class:`~makers_store.maintenance.doctor.HistoryRepair` per such
    finding; a second run finds nothing left to repair."""
    async for _, findings in _checked(store, conversation_id, on_conversation):
        for finding in findings:
            if finding.repair is not None:
                yield await repair_finding(store, finding)


async def _checked(
    store: ConversationStore,
    conversation_id: str | None,
    on_conversation: Callable[[], None] | None,
) -> AsyncIterator[tuple[str, list[HistoryFinding]]]:
    """Each conversation id with its findings (a conversation's are few: its
    pairing findings need the whole conversation read anyway)."""
    runner = store.runner
    if conversation_id is not None:
        cid = validate.conversation_id(conversation_id)
        record = (await runner.run(lambda: programs.load_meta(cid), write=False))[0]
        if record is None and not await runner.run(lambda: _owns_keys(cid), write=False):
            raise MemoryNotFoundError(f"conversation_id {cid!r} does not exist")
        yield cid, await _check_one(store, cid, record)
        if on_conversation is not None:
            on_conversation()
        return
    async for page in inventory.conversation_pages(runner):
        for cid, record in page:
            yield cid, await _check_one(store, cid, record)
            if on_conversation is not None:
                on_conversation()


async def _check_one(
    store: ConversationStore, cid: str, record: ConversationRecord | None
) -> list[HistoryFinding]:
    if record is not None and record.live:
        checker = HistoryChecker(cid)
        found: list[HistoryFinding] = []
        async for message in _messages(store, cid):
            found += checker.feed(message)
        return found + checker.finish()
    kinds = await store.runner.run(lambda: _leftovers(cid), write=False)
    deleting = record is not None
    reported = kinds if deleting else [k for k in kinds if k in _REPORTED_WITHOUT_META]
    if not reported:
        return []
    what = ", ".join(_KIND_WORDS[k] for k in reported)
    if deleting:
        why = (
            f"the deletion of conversation {cid!r} was cut short and left {what}; "
            "delete_conversation (makers-store conv delete) finishes it"
        )
    else:
        why = (
            f"{what} kept for {cid!r}, but no conversation {cid!r} exists, so a history "
            "UI lists nothing for it (deleted while a run still wrote, or an app that "
            "writes only framework data); delete_conversation removes it"
        )
    return [HistoryFinding(cid, rules.RULE_ORPHAN_ADAPTER_DATA, (), why)]


def _messages(store: ConversationStore, cid: str) -> AsyncIterator[Message]:
    """The conversation's messages oldest first, a page per unit of work,
    followed by seq rather than by message id: an id held by two messages
    (old data, which :data:`~.history_rules.RULE_DUPLICATE_ID` reports) is no
    cursor a walk can trust to move forward."""
    caps = store.blobs.capabilities
    size = BILLED_PAGE if caps.costly_requests else LOCAL_PAGE

    async def read(low: int | None) -> tuple[list[Message], int | None]:
        return await store.runner.run(lambda: _message_page(cid, low or 0, size, caps), write=False)

    return paging.items(read)


def _message_page(
    cid: str, low: int, size: int, caps: Capabilities
) -> Program[tuple[list[Message], int | None]]:
    record = yield from programs.visible_meta(cid)
    if record is None:
        return [], None
    entries = yield from message_range(
        cid, record, max(low, record.cleared_below), record.next_seq, size, reverse=False, caps=caps
    )
    messages = decode_messages([entry.data for entry in entries])
    following = keys.seq_from_message_key(entries[-1].key) + 1 if entries else None
    return messages, paging.after_full(entries, size, lambda _: following)


_KIND_WORDS = {
    "messages": "message blobs (OpenAI session items among them)",
    "state": "state entries",
    "claude-binding": "a Claude session binding",
    "claude-sessions": "Claude session transcripts",
    "langgraph": "LangGraph checkpoints",
}
_REPORTED_WITHOUT_META = frozenset({"messages", "claude-binding", "langgraph"})


def _owns_keys(cid: str) -> Program[bool]:
    return bool((yield from list_keys(keys.conversation_prefix(cid), limit=1)))


def _leftovers(cid: str) -> Program[list[str]]:
    """The kinds of data kept under ``cid`` (one listing of one key each)."""
    found: list[str] = []

    def has(prefix: str) -> Generator[Op, Any, bool]:
        return bool((yield from list_keys(prefix, limit=1)))

    if (yield from has(keys.messages_prefix(cid))) or (
        yield from has(keys.generations_prefix(cid))
    ):
        found.append("messages")
    if (yield from has(keys.state_prefix(cid))):
        found.append("state")
    claude = keys.adapter_prefix(cid, "claude")
    if (yield from get(claude + "binding")) is not None:
        found.append("claude-binding")
    if (yield from has(claude + "p/")):
        found.append("claude-sessions")
    if (yield from has(keys.adapter_prefix(cid, "langgraph"))):
        found.append("langgraph")
    return found


# --- the repairs ---------------------------------------------------------------


async def repair_finding(store: ConversationStore, finding: HistoryFinding) -> HistoryRepair:
    """Repair one finding of :func:`check_history` by its ``repair``, after
    checking again that it still holds (a finding read a while ago is safe to
    pass: what changed since is left alone, and what was repaired already is
    said so). ``repair_history`` runs this for each finding it makes."""
    cid, call_id = finding.conversation_id, finding.call_id
    try:
        if finding.repair == rules.REPAIR_DELETE_DUPLICATE:
            kept, duplicate = finding.message_ids
            outcome = await store.runner.run(
                lambda: _delete_duplicate(cid, kept, duplicate), write=True
            )
        elif finding.repair == rules.REPAIR_SET_ASIDE_CALL and call_id is not None:
            now = store.runner.clock()
            caps = store.blobs.capabilities
            outcome = await store.runner.run(
                lambda: _set_aside_call(cid, finding.message_ids[0], call_id, now, caps),
                write=True,
            )
        elif finding.repair == rules.REPAIR_APPEND_RESULT and call_id is not None:
            outcome = await _append_result(store, cid, finding, call_id)
        else:
            outcome = "left alone: no repair of this kind"
    except (MemoryNotFoundError, MemoryConflictError) as exc:
        outcome = f"left alone: {exc}"
    repaired = outcome.startswith(("repaired", "already repaired"))
    return HistoryRepair(finding, repaired, outcome)


async def _append_result(
    store: ConversationStore, cid: str, finding: HistoryFinding, call_id: str
) -> str:
    """Append the interrupted result of ``call_id`` when the call is still
    made and unanswered and (outside session items) only tool results follow
    it: checked again from the messages, and the append conditional on the
    conversation being as that check read it (its next seq and count, in
    the append's own unit: :attr:`~makers_store._core.appends.NewMessage.expected`),
    so a result stored meanwhile is never answered twice; the check runs
    again when it was not. The client id makes the append idempotent too."""
    for _ in range(_RECHECKS):
        seen = await store.runner.run(lambda: _counts(cid), write=False)
        outcome = await _recheck(store, cid, finding, call_id)
        if isinstance(outcome, str):
            return outcome
        content, metadata = outcome
        mid = interrupted_id(call_id)
        now, tie = store.runner.stamp()
        new = appends.NewMessage(
            cid,
            "tool",
            validate.content_json(content),
            validate.metadata_json(metadata),
            None,
            now,
            store.runner.ids(),
            tie,
            client_id=mid,
            expected=seen,
        )
        unit = functools.partial(appends.append_message, new, store.blobs.capabilities)
        try:
            await store.runner.run(unit, write=True)
        except appends.ChangedSinceRead:
            continue  # appended to or deleted from since the check: check again
        return f"repaired: appended {mid!r}, a tool result saying the call was interrupted"
    return "left alone: the conversation kept changing during the repair; run the doctor again"


def _counts(cid: str) -> Program[tuple[int, int]]:
    """(next_seq, message_count) of the conversation ((0, 0) when missing)."""
    record = yield from programs.visible_meta(cid)
    return (0, 0) if record is None else (record.next_seq, record.message_count)


async def _recheck(
    store: ConversationStore, cid: str, finding: HistoryFinding, call_id: str
) -> str | tuple[Any, dict[str, Any]]:
    """Why the result is not to be appended (an outcome), or its content and metadata."""
    call_mid = finding.message_ids[0]
    call = await store.get_message(cid, call_mid)
    session = finding.rule == rules.RULE_ORPHAN_SESSION_CALL
    if call is None:
        return "left alone: the calling message is gone"
    if session:
        item = call.content if isinstance(call.content, dict) else {}
        if item.get("call_id") != call_id or item.get("type") != "function_call":
            return "left alone: the calling item changed since the check"
    elif call_id not in rules.metadata_calls(call) + rules.content_calls(call):
        return "left alone: the message no longer makes the call"
    mid = interrupted_id(call_id)
    reached = False
    async for later in _messages(store, cid):  # by position: an id may be held twice
        if not reached:
            reached = later.message_id == call_mid
            continue
        if later.message_id == mid:
            return "already repaired: the interrupted result is there"
        if session:
            if rules.is_session_item(later) and session_call(later.content) == ("output", call_id):
                return "left alone: its output arrived since the check"
            continue
        answers = rules.result_ids(later)
        if call_id in answers:
            return "left alone: its result arrived since the check"
        if not answers:
            return "left alone: messages were appended after the call since the check"
    if session:
        run = (call.metadata or {}).get("run_id")
        content: Any = {
            "type": "function_call_output",
            "call_id": call_id,
            "output": rules.INTERRUPTED_RESULT,
        }
        metadata: dict[str, Any] = {
            rules.SESSION_MARKERS[0]: True,
            "item_type": "function_call_output",
            "run_id": run if isinstance(run, str) else "doctor",
        }
    else:
        content = rules.INTERRUPTED_RESULT
        metadata = {"tool_call_id": call_id, "is_error": True, "interrupted": True}
    return content, metadata


def _set_aside_call(cid: str, mid: str, call_id: str, now: int, caps: Any) -> Program[str]:
    """Move ``call_id`` out of message ``mid``'s ``metadata.tool_calls`` when
    it is still there and still unanswered in its turn (one unit of work; the
    write is conditional on the blob read)."""
    record, _ = yield from programs.load_live_meta(cid)
    found = None if record is None else (yield from locate(cid, record, mid))
    if record is None or found is None:
        return "left alone: the message is gone"
    seq, blob = found
    row = decode_json(blob.data, what="message")
    message = decode_message(blob.data)
    metadata = dict(message.metadata or {})
    calls = metadata.get("tool_calls")
    if call_id not in rules.metadata_calls(message) or not isinstance(calls, list):
        return "already repaired: the message no longer makes the call"
    state = yield from _turn_after(cid, record, seq, call_id, caps)
    if state == "answered":
        return "left alone: the call has its result now"
    if state == "open":  # only results follow: a result appended now lands right
        return "left alone: the call is at the end of the history now; run the doctor again"
    moved = [c for c in calls if isinstance(c, dict) and c.get("id") == call_id]
    kept = [c for c in calls if not (isinstance(c, dict) and c.get("id") == call_id)]
    if kept:
        metadata["tool_calls"] = kept
    else:
        del metadata["tool_calls"]
    aside = metadata.get("interrupted_tool_calls")
    metadata["interrupted_tool_calls"] = (aside if isinstance(aside, list) else []) + [
        {**call, "result": rules.INTERRUPTED_RESULT} for call in moved
    ]
    data = encode_message(
        message_id=message.message_id,
        role=message.role,
        content_json=validate.content_json(message.content),
        created_at=message.created_at,
        metadata_json=validate.metadata_json(metadata),
        updated_at=now,
        user_id=row[5] if isinstance(row[5], str) else None,
    )
    yield from put(keys.message_key(cid, seq, record.generation), data, if_match=blob.etag)
    return (
        f"repaired: moved the call to metadata.interrupted_tool_calls of {mid!r} "
        "(it has no result, and none can be placed after it)"
    )


def _turn_after(
    cid: str, record: ConversationRecord, seq: int, call_id: str, caps: Capabilities
) -> Generator[Op, Any, str]:
    """Whether the messages after ``seq`` answer ``call_id`` before the next
    message that is no result ("answered"), do not ("closed"), or are all
    results up to the end ("open")."""
    low = seq + 1
    while low < record.next_seq:
        entries = yield from message_range(
            cid, record, low, record.next_seq, _WINDOW_BATCH, reverse=False, caps=caps
        )
        if not entries:
            return "open"
        for entry, message in zip(entries, decode_messages([e.data for e in entries]), strict=True):
            answers = rules.result_ids(message)
            if call_id in answers:
                return "answered"
            if not answers:
                return "closed"
            low = keys.seq_from_message_key(entry.key) + 1
    return "open"


def _delete_duplicate(cid: str, kept_id: str, duplicate_id: str) -> Program[str]:
    """Delete ``duplicate_id`` when it is still an exact duplicate of
    ``kept_id`` (one unit of work, re-read and compared inside it)."""
    record, etag = yield from programs.load_live_meta(cid)
    if record is None:
        return "left alone: the conversation is gone"
    duplicate = yield from locate(cid, record, duplicate_id)
    if duplicate is None:
        return "already repaired: the duplicate is gone"
    kept = yield from locate(cid, record, kept_id)
    if kept is None:
        return "left alone: the message it repeats is gone, so it is the only copy"
    first, second = decode_message(kept[1].data), decode_message(duplicate[1].data)
    if not _exact_duplicates(first, second):
        return "left alone: the messages differ now"
    seq, blob = duplicate
    key = keys.message_key(cid, seq, record.generation)
    try:  # an update that read the blob before this now fails its if-match
        yield from put(key, blob.data, if_match=blob.etag)
    except PreconditionFailedError:
        return "left alone: the duplicate changed during the repair"
    yield from remove_messages(cid, record, etag, [seq])
    return f"repaired: deleted {duplicate_id!r}, an exact copy of {kept_id!r}"


def _exact_duplicates(first: Message, second: Message) -> bool:
    return (
        first.role == second.role
        and rules.value_digest(first.content) == rules.value_digest(second.content)
        and rules.value_digest(first.metadata or {}) == rules.value_digest(second.metadata or {})
        and abs(second.created_at - first.created_at) <= rules.DUPLICATE_WINDOW_MS
    )
