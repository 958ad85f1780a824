"""An OpenAI Agents SDK ``Session`` kept as the messages of one conversation.

The SDK's memory and the history a UI re-renders are the same list here: each
item the Runner saves becomes one message of the conversation ``session_id``,
so ``get_messages`` shows what the model remembers, and ``delete_conversation``
forgets it. A message that holds an SDK item looks like this::

    role      "user" / "assistant" / "system" / "tool", from the item (see role_of)
    content   the item itself, a dict, unchanged (get_items returns it JSON-equal)
    metadata  {"agent_sdk_session": true, "item_type": "<item type>", "run_id": "<turn>"}

These are the platform's keys, so history code written for it (which keeps
``item_type`` "message" and joins assistant fragments by ``run_id``) reads
ours. ``item_type`` is the item's ``type`` field, or ``"message"`` for the
short ``{"role": ..., "content": ...}`` form. ``run_id`` is the store's
``run_id`` (``ctx.store`` in ``serve`` is bound to the request's run), or else
one id made when the session object is, so the items one session object
saves share it. The marker is what the adapter recognises: messages the
application appends itself to the same conversation (without it) are never
returned, popped or cleared by the session. Messages written by earlier
versions carry ``{"openai_agents_item": true, "type": ...}`` instead; they are
still session items (read, popped, trimmed, cleared), and are not rewritten.

Items are encoded with the store's strict JSON codec (:mod:`makers_store._core.codec`):
what ``json.dumps`` accepts without NaN or Infinity round-trips exactly.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from ..._core import keys, message_programs, programs, validate
from ..._core.codec import ConversationRecord, decode_messages
from ...blob import Capabilities
from ...blob_ops import Op, Program
from ...errors import MemoryValidationError
from ...lifecycle.history_guard import guard_history
from ...lifecycle.tool_pairing import session_call
from ...models import Message

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from ...api.conversation_store import ConversationStore

#: metadata key that marks a message as an SDK session item (the platform's)
MARKER = "agent_sdk_session"
#: the marker earlier versions of this adapter wrote, still recognised
LEGACY_MARKER = "openai_agents_item"
_SCAN_BATCH = 200
_MESSAGE_ROLES = frozenset({"user", "assistant", "system"})
#: item types the SDK writes on behalf of a tool (the results of calls; OpenAI
#: Agents JS, whose sessions the Node runtime keeps here too, says "function_call_result")
_TOOL_OUTPUT_TYPES = frozenset(
    {"function_call_output", "function_call_result", "mcp_approval_response"}
)


def item_type(item: Mapping[str, Any]) -> str:
    """The item's ``type``; the short ``{"role", "content"}`` form is a message."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else "message"


def role_of(item: Mapping[str, Any]) -> str:
    """The message role an item is shown with.

    Messages keep their role (``developer`` shows as ``system``); the output of
    any tool call (``function_call_output``, ``computer_call_output``,
    ``shell_call_output``...) is ``tool``; everything else the model produced
    (function calls, reasoning, hosted tool calls, handoffs) is ``assistant``.
    """
    kind = item_type(item)
    if kind == "message":
        role = item.get("role")
        if role == "developer":
            return "system"
        return role if isinstance(role, str) and role in _MESSAGE_ROLES else "assistant"
    if kind in _TOOL_OUTPUT_TYPES or kind.endswith("_call_output"):
        return "tool"
    return "assistant"


def is_session_item(message: Message) -> bool:
    """Whether ``message`` holds an SDK item (carries the marker, new or legacy)."""
    metadata = message.metadata
    return isinstance(metadata, dict) and (
        metadata.get(MARKER) is True or metadata.get(LEGACY_MARKER) is True
    )


class OpenAISession:
    """``agents.memory.Session`` over a :class:`~makers_store.ContextStore`.

    ``session_id`` is the conversation id whose messages hold the items.
    ``get_items(limit)`` returns the latest ``limit`` items in chronological
    order; without a limit it uses ``session_settings.limit`` (None: all),
    exactly as ``SQLiteSession`` does, including its edge cases (0 returns
    nothing, a negative limit returns everything).

    ``max_items`` caps the stored items: after each ``add_items`` the oldest
    items beyond the cap are deleted (the application's own messages in the
    conversation are neither counted nor deleted). The cap is applied in a
    second unit of work right after the append; if the process dies in between,
    the next ``add_items`` trims. Every call is one unit of work on the backend
    (``add_items`` of more than 1,000 items: one per 1,000), retried on
    compare-and-swap conflicts like the rest of the store. A conversation holds
    at most 10,000 messages: beyond that ``add_items`` raises
    ``MemoryQuotaExceededError``, so long-lived sessions want ``max_items``.

    ``get_items`` hands the Runner valid input even when a run was cut
    between a function call and its output (a crash, a stop, a timeout): the
    call gets a ``function_call_output`` saying it was interrupted, right
    after it, and an output whose call is not among the items (cut off by
    ``limit``, or never saved) is left out, in what it returns only, each fix
    logged once (:mod:`makers_store.lifecycle.history_guard`, by the doctor's
    rules; the doctor's ``--fix`` repairs the stored items). ``strict=True``
    raises :class:`~makers_store.InvalidHistoryError` instead.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        store: ConversationStore,
        session_id: str,
        *,
        max_items: int | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        strict: bool = False,
    ) -> None:
        self.session_id = validate.identifier(session_id, "session_id")
        if max_items is not None and (
            isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1
        ):
            raise MemoryValidationError(
                f"max_items must be a positive int or None, got {max_items!r}"
            )
        self.max_items = max_items
        if not isinstance(strict, bool):
            raise MemoryValidationError(f"strict must be a bool, not {type(strict).__name__}")
        self.strict = strict
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._store = store
        #: the turn the items this object saves belong to (metadata ``run_id``)
        self.run_id = store.run_id or f"run_{store.runner.ids()}"

    def __repr__(self) -> str:
        return f"OpenAISession(session_id={self.session_id!r}, max_items={self.max_items!r})"

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (default ``session_settings.limit``), oldest first."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise MemoryValidationError(f"limit must be an int or None, got {limit!r}")
        count = resolve_session_limit(limit, self.session_settings)
        if count == 0:
            return []
        want = None if count is None or count < 0 else count
        cid, caps = self.session_id, self._store.blobs.capabilities
        found = await self._store.runner.run(lambda: _read_items(cid, want, caps), write=False)
        messages = [message for _, message in found]
        if want is not None and len(messages) == want:
            messages = _without_cut_outputs(messages)
        messages = guard_history(
            messages,
            conversation_id=cid,
            strict=self.strict,
            where="OpenAISession.get_items",
        )
        return [message.content for message in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` as messages in one unit of work, then apply ``max_items``."""
        if not isinstance(items, list | tuple):
            raise MemoryValidationError(f"items must be a list, not {type(items).__name__}")
        messages: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise MemoryValidationError(
                    f"items[{index}] must be a dict (an SDK input item), not {type(item).__name__}"
                )
            messages.append(
                {
                    "role": role_of(item),
                    "content": item,
                    "metadata": {MARKER: True, "item_type": item_type(item), "run_id": self.run_id},
                }
            )
        # One unit of work per call; only a batch above append_messages' limit
        # (1,000, far beyond what one Runner turn saves) takes several, in order,
        # and is checked whole first so that a bad item leaves nothing written.
        if len(messages) > validate.MAX_BATCH:
            for index, message in enumerate(messages):
                with validate.item_context(f"items[{index}]"):
                    validate.content_json(message["content"])
        for start in range(0, len(messages), validate.MAX_BATCH):
            chunk = messages[start : start + validate.MAX_BATCH]
            await self._store.append_messages(conversation_id=self.session_id, messages=chunk)
        if messages and self.max_items is not None:
            cid, cap, caps = self.session_id, self.max_items, self._store.blobs.capabilities
            await self._store.runner.run(lambda: _trim(cid, cap, caps), write=True)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, or None when the session is empty."""
        cid, caps = self.session_id, self._store.blobs.capabilities
        popped: Message | None = await self._store.runner.run(lambda: _pop(cid, caps), write=True)
        return None if popped is None else popped.content

    async def clear_session(self) -> None:
        """Delete every item of the session; the application's own messages stay."""
        cid, caps = self.session_id, self._store.blobs.capabilities
        await self._store.runner.run(lambda: _clear(cid, caps), write=True)


def _without_cut_outputs(messages: list[Message]) -> list[Message]:
    """``messages`` (the newest ``limit`` items) without the outputs at their
    start whose call the limit cut off: the cut's, not orphans the guard
    would log (or refuse, strict)."""
    calls = set()
    for message in messages:
        pair = session_call(message.content)
        if pair is not None and pair[0] == "call":
            calls.add(pair[1])
    start = 0
    while start < len(messages):
        pair = session_call(messages[start].content)
        if pair is None or pair[0] != "output" or pair[1] in calls:
            break
        start += 1
    return messages[start:]


# --- programs --------------------------------------------------------------


def _session_messages(
    cid: str,
    record: ConversationRecord,
    caps: Capabilities,
    *,
    newest_first: bool,
    want: int | None,
) -> Generator[Op, Any, list[tuple[int, Message]]]:
    """Up to ``want`` (None: all) visible SDK-item messages with their seqs,
    newest first or oldest first, read in batches by the message-range reader
    of ``get_messages`` (:func:`makers_store._core.message_programs.message_range`),
    so that on object storage the newest are found without listing the whole
    conversation. The first batch is as large as ``want`` can need when every
    message is an item, so ``get_items(limit)`` reads and decodes about
    ``limit`` messages; later ones (the application's own messages sit among
    the items) are ``_SCAN_BATCH`` long."""
    if want is None and newest_first:
        # All of them: one forward walk turned around, which costs the same on
        # every backend (walking backward computes a window per batch).
        found = yield from _session_messages(cid, record, caps, newest_first=False, want=None)
        found.reverse()
        return found
    found = []
    low, high = record.cleared_below, record.next_seq
    size = _SCAN_BATCH if want is None else min(_SCAN_BATCH, want)
    while want is None or len(found) < want:
        batch = yield from message_programs.message_range(
            cid, record, low, high, size, reverse=newest_first, caps=caps
        )
        seqs = [keys.seq_from_message_key(entry.key) for entry in batch]
        for seq, message in zip(seqs, decode_messages([e.data for e in batch]), strict=True):
            if is_session_item(message):
                found.append((seq, message))
                if want is not None and len(found) == want:
                    break
        if len(batch) < size:  # the range holds no more
            break
        size = _SCAN_BATCH
        if newest_first:
            high = seqs[-1]
        else:
            low = seqs[-1] + 1
    return found


def _read_items(
    cid: str, want: int | None, caps: Capabilities
) -> Program[list[tuple[int, Message]]]:
    record = yield from programs.visible_meta(cid)
    if record is None:
        return []
    if want is None:
        return (yield from _session_messages(cid, record, caps, newest_first=False, want=None))
    newest = yield from _session_messages(cid, record, caps, newest_first=True, want=want)
    newest.reverse()
    return newest


def _pop(cid: str, caps: Capabilities) -> Program[Message | None]:
    record, etag = yield from programs.load_live_meta(cid)
    if record is None:
        return None
    newest = yield from _session_messages(cid, record, caps, newest_first=True, want=1)
    if not newest:
        return None
    seq, message = newest[0]
    yield from message_programs.remove_messages(cid, record, etag, [seq])
    return message


def _trim(cid: str, cap: int, caps: Capabilities) -> Program[None]:
    record, etag = yield from programs.load_live_meta(cid)
    if record is None or record.message_count <= cap:
        return  # fewer messages than the cap, so fewer items too: nothing to read
    items = yield from _session_messages(cid, record, caps, newest_first=True, want=None)
    yield from message_programs.remove_messages(cid, record, etag, [seq for seq, _ in items[cap:]])


def _clear(cid: str, caps: Capabilities) -> Program[None]:
    record, etag = yield from programs.load_live_meta(cid)
    if record is None:
        return
    items = yield from _session_messages(cid, record, caps, newest_first=False, want=None)
    if not items:
        return
    if len(items) == record.message_count:
        # Nothing but session items: one meta write hides them all (clear_messages).
        yield from message_programs.clear_messages(cid)
    else:
        yield from message_programs.remove_messages(cid, record, etag, [seq for seq, _ in items])
