"""The asynchronous public API: :class:`ContextStore` and its ``state``.

Every method validates its arguments (raising before anything is written),
builds a program from :mod:`makers_store.programs`, and has the backend run
it as one unit of work (:class:`makers_store.runner.UnitRunner` runs it again
when it loses a race with another writer on a backend without transactions).
How the methods read positional, keyword and bound-store calls:
:mod:`makers_store.arguments`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import (
    adapters,
    appends,
    arguments,
    keys,
    listing,
    message_lookup,
    message_programs,
    programs,
    state_programs,
    validate,
)
from .arguments import UNSET as _UNSET
from .blob import BlobStore
from .clock import Clock, IdSource, random_suffix, system_clock
from .codec import encode_json
from .convert import MessageLike
from .convert import to_anthropic_messages as _to_anthropic
from .convert import to_openai_input as _to_openai
from .errors import MemoryValidationError
from .location import StoreLocation
from .models import ConversationMeta, ListConversationsResult, Message, Order, Role
from .runner import UnitRunner
from .watch import StoreWatch

if TYPE_CHECKING:
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

    from .adapters.claude_sessions import ClaudeSessionStore
    from .adapters.langgraph_checkpoints import MakersCheckpointSaver
    from .adapters.langgraph_store import MakersLangGraphStore
    from .adapters.openai_sessions import OpenAISession
    from .admin import StoreAdmin


class StateStore:
    """A JSON key-value store bound to one conversation."""

    def __init__(self, runner: UnitRunner, conversation_id: str) -> None:
        self._runner = runner
        self.conversation_id = conversation_id

    async def get(self, key: str) -> Any:
        """The value stored under ``key``, or None."""
        name = validate.state_key(key)
        return await self._runner.run(
            lambda: state_programs.state_get(self.conversation_id, name), write=False
        )

    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (strict JSON) under ``key``."""
        name = validate.state_key(key)
        value_json = encode_json(value, argument="value")
        await self._runner.run(
            lambda: state_programs.state_set(self.conversation_id, name, value_json), write=True
        )

    async def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        name = validate.state_key(key)
        await self._runner.run(
            lambda: state_programs.state_delete(self.conversation_id, name), write=True
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this conversation's state."""
        return await self._runner.run(
            lambda: state_programs.state_items(self.conversation_id), write=False
        )


class ContextStore:
    """``context.store``: conversations, messages and state over a Blob store.

    Create one with :func:`makers_store.open_store`; ``bind(conversation_id)``
    gives the store an agent sees as ``ctx.store``, whose ``state`` works and
    whose methods default ``conversation_id`` to the bound one.
    """

    def __init__(
        self,
        blobs: BlobStore,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        location: StoreLocation | None = None,
    ) -> None:
        self._runner = UnitRunner(blobs, clock=clock or system_clock, ids=ids or random_suffix)
        self._location = location
        #: adapters built once per store, shared with the views bound from it
        self._adapters: dict[str, Any] = {}
        self._closed = False
        self._conversation_id: str | None = None
        self._run_id: str | None = None
        self._owner = True

    # --- wiring ------------------------------------------------------------

    @property
    def blobs(self) -> BlobStore:
        """The Blob-store backend (the raw view ``makers-store blob`` shows)."""
        return self._runner.blobs

    @property
    def runner(self) -> UnitRunner:
        """The unit runner (backend, clock, ids, retry policy) every program of
        this store runs through: the framework adapters' too."""
        return self._runner

    @property
    def admin(self) -> StoreAdmin:
        """Maintenance over the whole store: counts, index check and rebuild,
        export, import, copy, raw blobs (:class:`~makers_store.admin.StoreAdmin`)."""
        from .admin import StoreAdmin  # imported on use: the import and copy machinery

        return StoreAdmin(self._runner)

    @property
    def location(self) -> StoreLocation | None:
        """Where the data lives and why that place was chosen."""
        return self._location

    @property
    def conversation_id(self) -> str | None:
        """The conversation this store is bound to, if any."""
        return self._conversation_id

    @property
    def run_id(self) -> str | None:
        """The agent run this store was bound in (``bind(..., run_id=)``), if any."""
        return self._run_id

    def bind(self, conversation_id: str | None, *, run_id: str | None = None) -> ContextStore:
        """A store over the same data, bound to ``conversation_id`` and to the
        run ``run_id``. ``None`` gives an unbound view (``ctx.store`` of a
        request without a conversation): its ``state`` raises."""
        bound = object.__new__(ContextStore)
        bound._runner = self._runner
        bound._location = self._location
        bound._adapters = self._adapters
        bound._closed = False
        bound._conversation_id = (
            None if conversation_id is None else validate.conversation_id(conversation_id)
        )
        bound._run_id = None if run_id is None else validate.identifier(run_id, "run_id")
        bound._owner = False
        return bound

    @property
    def state(self) -> StateStore:
        """The bound conversation's JSON key-value state."""
        if self._conversation_id is None:
            raise MemoryValidationError(
                "state needs a conversation: use store.bind(conversation_id).state"
            )
        return StateStore(self._runner, self._conversation_id)

    async def close(self) -> None:
        """Close the backend (a no-op on bound stores, which share it)."""
        if self._owner and not self._closed:
            self._closed = True
            for adapter in self._adapters.values():  # sweepers, portal threads
                aclose = getattr(adapter, "aclose", None)
                if aclose is not None:
                    await aclose()
            await self._runner.blobs.close()

    async def __aenter__(self) -> ContextStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- messages ----------------------------------------------------------
    # Parameters are positional-or-keyword in the platform's order; on a bound
    # store ``conversation_id`` may be omitted (see makers_store.arguments).

    async def append_message(
        self,
        conversation_id: str | None = None,
        role: Role | str = _UNSET,
        content: Any = _UNSET,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> str:
        """Append a message, creating the conversation if missing; returns its id."""
        cid = self._cid(conversation_id)
        role = validate.role(arguments.required(role, "role"))
        content_json = validate.content_json(arguments.required(content, "content"))
        metadata_json = validate.metadata_json(metadata)
        uid = validate.optional_user_id(user_id)
        now, tie = self._runner.stamp()
        new = appends.NewMessage(
            cid, role, content_json, metadata_json, uid, now, self._runner.ids(), tie
        )
        caps = self.blobs.capabilities
        return await self._runner.run(lambda: appends.append_message(new, caps), write=True)

    async def append_messages(
        self,
        conversation_id: str | None = None,
        messages: Sequence[Mapping[str, Any]] = _UNSET,
        user_id: str | None = None,
    ) -> list[str]:
        """Append several ``{role, content, metadata?}`` messages in one unit of
        work (one transaction where the backend has them); returns their ids.
        An addition to the platform's API, for batch writers such as adapters."""
        cid = self._cid(conversation_id)
        uid = validate.optional_user_id(user_id)
        batch = validate.message_batch(arguments.required(messages, "messages"))
        now, tie = self._runner.stamp()
        news = []
        for index, item in enumerate(batch):
            with validate.item_context(f"messages[{index}]"):
                news.append(
                    appends.NewMessage(
                        conversation_id=cid,
                        role=validate.role(item.get("role")),
                        content_json=validate.content_json(item.get("content")),
                        metadata_json=validate.metadata_json(item.get("metadata")),
                        user_id=uid,
                        now=now,
                        suffix=self._runner.ids(),
                        tie=tie,
                    )
                )
        caps = self.blobs.capabilities
        return await self._runner.run(lambda: appends.append_messages(news, caps), write=True)

    async def get_messages(
        self,
        conversation_id: str | None = None,
        limit: int = 20,
        order: Order | str = "asc",
        after: str | None = None,
        before: str | None = None,
    ) -> list[Message]:
        """A page of messages; ``after``/``before`` are message ids."""
        cid = self._cid(conversation_id)
        count = validate.limit(limit)
        direction = validate.order(order)
        validate.exclusive_cursors(after, before)
        after_seq = validate.message_cursor(after, "after")
        before_seq = validate.message_cursor(before, "before")
        return await self._runner.run(
            lambda: message_programs.get_messages(
                cid,
                count,
                direction,
                after_seq,
                before_seq,
                self.blobs.capabilities,
            ),
            write=False,
        )

    async def get_message(
        self, conversation_id: str | None = None, message_id: str | None = None
    ) -> Message | None:
        """One message by id, or None if the conversation or the message does
        not exist. Also ``get_message(message_id)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id, conversation_id, message_id, usage="get_message(message_id)"
        )
        return await self._runner.run(lambda: message_lookup.message_by_id(cid, mid), write=False)

    async def iter_messages(
        self,
        conversation_id: str | None = None,
        order: Order | str = "asc",
        after: str | None = None,
        before: str | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[Message]:
        """Every message of the conversation in ``order`` (after the message id
        ``after`` if given), or with ``before``, the messages that precede that
        id in ``order``, nearest first: ``get_messages`` pages of ``page_size``
        (1..100) followed by cursor, each read in its own unit of work
        (messages appended meanwhile are reached in ``asc`` order; one deleted
        meanwhile may still be yielded). Arguments are checked when the
        iteration starts."""
        cid = self._cid(conversation_id)
        direction = validate.order(order)
        size = validate.limit(page_size, "page_size")
        validate.exclusive_cursors(after, before)
        backward = before is not None
        cursor = before if backward else after
        while True:
            page = await self.get_messages(
                conversation_id=cid,
                limit=size,
                order=direction,
                after=None if backward else cursor,
                before=cursor if backward else None,
            )
            if backward:
                page.reverse()  # the page is in ``order``; the walk goes away from ``before``
            for message in page:
                yield message
            if len(page) < size:
                return
            cursor = page[-1].message_id

    async def update_message(
        self,
        conversation_id: str | None = None,
        message_id: str | None = None,
        content: Any = _UNSET,
        metadata: dict[str, Any] | None = _UNSET,
    ) -> Message:
        """Replace the content and/or the whole metadata of one message. Also
        ``update_message(message_id, content=..., metadata=...)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id,
            conversation_id,
            message_id,
            usage="update_message(message_id, content=..., metadata=...)",
        )
        content_json = None if content is _UNSET else validate.content_json(content)
        metadata_json = None if metadata is _UNSET else validate.metadata_json(metadata)
        seq = keys.seq_of_message_id(mid)
        now = self._runner.clock()
        return await self._runner.run(
            lambda: message_programs.update_message(
                cid, mid, seq, content_json, metadata_json, now
            ),
            write=True,
        )

    async def delete_message(
        self, conversation_id: str | None = None, message_id: str | None = None
    ) -> None:
        """Delete one message. Also ``delete_message(message_id)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id, conversation_id, message_id, usage="delete_message(message_id)"
        )
        seq = keys.seq_of_message_id(mid)
        await self._runner.run(lambda: message_programs.delete_message(cid, mid, seq), write=True)

    async def clear_messages(self, conversation_id: str | None = None) -> None:
        """Delete every message; the conversation and its metadata stay."""
        cid = self._cid(conversation_id)
        await self._runner.run(lambda: message_programs.clear_messages(cid), write=True)

    # --- conversations -----------------------------------------------------

    async def get_conversation(self, conversation_id: str | None = None) -> ConversationMeta | None:
        """The conversation's meta, or None if it does not exist."""
        cid = self._cid(conversation_id)
        return await self._runner.run(lambda: programs.get_conversation(cid), write=False)

    async def list_conversations(
        self,
        limit: int = 20,
        order: Order | str = "desc",
        after: str | None = None,
        before: str | None = None,
        user_id: str | None = None,
    ) -> ListConversationsResult:
        """A page of conversations by ``last_message_at``, optionally one user's."""
        count = validate.limit(limit)
        direction = validate.order(order)
        uid = validate.optional_user_id(user_id)
        validate.exclusive_cursors(after, before)
        prefix = keys.index_prefix(uid)
        after_key = validate.conversation_cursor(after, "after", prefix)
        before_key = validate.conversation_cursor(before, "before", prefix)
        return await self._runner.run(
            lambda: listing.list_conversations(
                count,
                direction,
                after_key,
                before_key,
                uid,
                self.blobs.capabilities,
            ),
            write=False,
        )

    async def iter_conversations(
        self, user_id: str | None = None, order: Order | str = "desc", page_size: int = 100
    ) -> AsyncIterator[ConversationMeta]:
        """Every conversation (or ``user_id``'s) by ``last_message_at``:
        ``list_conversations`` pages of ``page_size`` (1..100) followed by
        cursor, each read in its own unit of work (a conversation written
        meanwhile moves in the order, so it may be yielded twice or not at
        all). Arguments are checked when the iteration starts."""
        direction = validate.order(order)
        size = validate.limit(page_size, "page_size")
        cursor: str | None = None
        while True:
            page = await self.list_conversations(
                limit=size, order=direction, after=cursor, user_id=user_id
            )
            for meta in page.items:
                yield meta
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def update_conversation(
        self, conversation_id: str | None = None, metadata: dict[str, Any] = _UNSET
    ) -> ConversationMeta:
        """Shallow-merge ``metadata``; a value of None deletes that key."""
        cid = self._cid(conversation_id)
        patch = validate.metadata_patch(arguments.required(metadata, "metadata"))
        return await self._runner.run(lambda: programs.update_conversation(cid, patch), write=True)

    async def delete_conversation(self, conversation_id: str | None = None) -> None:
        """Delete the conversation and everything it owns. Not recoverable."""
        cid = self._cid(conversation_id)
        await self._runner.run(lambda: programs.delete_conversation(cid), write=True)

    def _cid(self, given: str | None) -> str:
        return arguments.conversation(self._conversation_id, given)

    # --- watching ----------------------------------------------------------

    def watch(
        self, conversation_id: str | None = None, *, poll_interval: float = 1.0
    ) -> StoreWatch:
        """Changes to ``conversation_id`` (on a bound store, the bound one by
        default), or to the list of conversations when there is none, as an
        async iterator of :class:`~makers_store.watch.StoreChange`, by any
        writer, in any process: ``async with store.watch("c1") as changes:
        async for change in changes: ...``. Memory and PostgreSQL push the
        keys written; SQLite notices commits within 0.1 s; object storage is
        polled every ``poll_interval`` seconds (see README, "Watching")."""
        given = self._conversation_id if conversation_id is None else conversation_id
        cid = None if given is None else validate.conversation_id(given)
        if (
            isinstance(poll_interval, bool)
            or not isinstance(poll_interval, int | float)
            or not 0 < poll_interval <= 3600
        ):
            raise MemoryValidationError(
                f"poll_interval must be a number of seconds in (0, 3600], got {poll_interval!r}"
            )
        return StoreWatch(self.blobs, cid, float(poll_interval))

    # --- conversions (synchronous) ----------------------------------------

    def to_anthropic_messages(self, messages: Iterable[MessageLike]) -> list[dict[str, Any]]:
        """``messages`` for the Anthropic Messages API (system turns left out)."""
        return _to_anthropic(messages)

    def to_openai_input(self, messages: Iterable[MessageLike]) -> list[dict[str, Any]]:
        """``{role, content}`` items for OpenAI Chat Completions."""
        return _to_openai(messages)

    # --- framework adapters (optional extras; see makers_store.adapters) ---

    def claude_session_store(self) -> ClaudeSessionStore:
        """A ``claude_agent_sdk`` ``SessionStore`` over this store (extra ``claude``)."""
        return adapters.make_claude_session_store(self)

    async def claude_session_binding(self, conversation_id: str | None = None) -> str:
        """The Claude session id (a UUID) of ``conversation_id``: the id itself
        if it is a UUID, else one generated once and persisted."""
        return await adapters.claude_session_binding(self, self._cid(conversation_id))

    def openai_session(self, session_id: str, max_items: int | None = None) -> OpenAISession:
        """An OpenAI Agents SDK ``Session`` kept as this conversation's messages
        (extra ``openai``); ``max_items`` caps the stored items, oldest trimmed."""
        return adapters.make_openai_session(self, session_id, max_items)

    # The Claude SDK's SessionStore protocol on the store itself, so that
    # ``session_store=ctx.store`` works as the platform's Python doc shows.
    # Each call delegates to claude_session_store(): same data, same rules.

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """``SessionStore.append``: ``claude_session_store().append(key, entries)``."""
        await self.claude_session_store().append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """``SessionStore.load``: ``claude_session_store().load(key)``."""
        return await self.claude_session_store().load(key)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """``SessionStore.list_sessions``, delegated to ``claude_session_store()``."""
        return await self.claude_session_store().list_sessions(project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """``SessionStore.list_session_summaries``, delegated to ``claude_session_store()``."""
        return await self.claude_session_store().list_session_summaries(project_key)

    async def delete(self, key: SessionKey) -> None:
        """``SessionStore.delete`` (a Claude session, not a conversation), delegated."""
        await self.claude_session_store().delete(key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """``SessionStore.list_subkeys``, delegated to ``claude_session_store()``."""
        return await self.claude_session_store().list_subkeys(key)

    @property
    def langgraph_checkpointer(self) -> MakersCheckpointSaver:
        """A LangGraph ``BaseCheckpointSaver`` over this store (extra ``langgraph``)."""
        return self._adapter("langgraph_checkpointer", adapters.make_langgraph_checkpointer)

    @property
    def langgraph_store(self) -> MakersLangGraphStore:
        """A LangGraph ``BaseStore`` over this store (extra ``langgraph``)."""
        return self._adapter("langgraph_store", adapters.make_langgraph_store)

    def _adapter(
        self, name: str, build: Callable[[ContextStore], adapters.AdapterT]
    ) -> adapters.AdapterT:
        """``build(self)``, made once per store: the views bound from it share it."""
        built = self._adapters
        if name not in built:
            built[name] = build(self)
        adapter: adapters.AdapterT = built[name]  # what ``build`` made under this name
        return adapter
