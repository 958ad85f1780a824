"""The asynchronous public API: :class:`ContextStore` and its ``state``.

Every method validates its arguments (raising before anything is written),
builds a program from :mod:`makers_store.programs`, and has the backend run
it as one unit of work. Units that lose a race with another writer on a
backend without transactions are run again.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from . import appends, keys, listing, programs, validate
from .adapters import load_adapter
from .blob import BlobStore, Program
from .clock import Clock, IdSource, random_suffix, system_clock
from .codec import encode_json
from .convert import MessageLike
from .convert import to_anthropic_messages as _to_anthropic
from .convert import to_openai_input as _to_openai
from .errors import MemoryConflictError, MemoryValidationError, PreconditionFailedError
from .location import StoreLocation
from .models import ConversationMeta, ListConversationsResult, Message, Order, Role

if TYPE_CHECKING:
    from .adapters.claude_sessions import ClaudeSessionStore
    from .adapters.langgraph_checkpoints import MakersCheckpointSaver
    from .adapters.langgraph_store import MakersLangGraphStore
    from .adapters.openai_sessions import OpenAISession

T = TypeVar("T")
_ATTEMPTS = 50
_UNSET: Any = object()


class _Shared:
    """What a store and every store bound from it share."""

    def __init__(
        self, blobs: BlobStore, clock: Clock, ids: IdSource, location: StoreLocation | None
    ) -> None:
        self.blobs = blobs
        self.clock = clock
        self.ids = ids
        self.location = location
        self.closed = False
        #: adapters built once per store (``langgraph_checkpointer``, ...)
        self.adapters: dict[str, Any] = {}

    async def run(self, make: Callable[[], Program[T]], *, write: bool) -> T:
        for attempt in range(_ATTEMPTS):
            try:
                return await self.blobs.run(make(), write=write)
            except PreconditionFailedError:
                if attempt == _ATTEMPTS - 1:
                    raise MemoryConflictError(
                        f"gave up after {_ATTEMPTS} attempts: other writers kept changing "
                        "the same conversation"
                    ) from None
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise AssertionError("unreachable")


class StateStore:
    """A JSON key-value store bound to one conversation."""

    def __init__(self, shared: _Shared, conversation_id: str) -> None:
        self._shared = shared
        self.conversation_id = conversation_id

    async def get(self, key: str) -> Any:
        """The value stored under ``key``, or None."""
        name = validate.state_key(key)
        return await self._shared.run(
            lambda: programs.state_get(self.conversation_id, name), write=False
        )

    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (strict JSON) under ``key``."""
        name = validate.state_key(key)
        value_json = encode_json(value, argument="value")
        await self._shared.run(
            lambda: programs.state_set(self.conversation_id, name, value_json), write=True
        )

    async def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        name = validate.state_key(key)
        await self._shared.run(
            lambda: programs.state_delete(self.conversation_id, name), write=True
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this conversation's state."""
        return await self._shared.run(
            lambda: programs.state_items(self.conversation_id), write=False
        )


class ContextStore:
    """``context.store``: conversations, messages and state over a Blob store.

    Create one with :func:`makers_store.open_store`; ``bind(conversation_id)``
    gives the store an agent sees as ``ctx.store``, whose ``state`` works.
    """

    def __init__(
        self,
        blobs: BlobStore,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        location: StoreLocation | None = None,
    ) -> None:
        self._shared = _Shared(blobs, clock or system_clock, ids or random_suffix, location)
        self._conversation_id: str | None = None
        self._owner = True

    # --- wiring ------------------------------------------------------------

    @property
    def blobs(self) -> BlobStore:
        """The Blob-store backend (the raw view ``makers-store blob`` shows)."""
        return self._shared.blobs

    @property
    def location(self) -> StoreLocation | None:
        """Where the data lives and why that place was chosen."""
        return self._shared.location

    @property
    def conversation_id(self) -> str | None:
        """The conversation this store is bound to, if any."""
        return self._conversation_id

    def bind(self, conversation_id: str) -> ContextStore:
        """A store over the same data, bound to ``conversation_id``."""
        bound = object.__new__(ContextStore)
        bound._shared = self._shared
        bound._conversation_id = validate.conversation_id(conversation_id)
        bound._owner = False
        return bound

    @property
    def state(self) -> StateStore:
        """The bound conversation's JSON key-value state."""
        if self._conversation_id is None:
            raise MemoryValidationError(
                "state needs a conversation: use store.bind(conversation_id).state"
            )
        return StateStore(self._shared, self._conversation_id)

    async def close(self) -> None:
        """Close the backend (a no-op on bound stores, which share it)."""
        if self._owner and not self._shared.closed:
            self._shared.closed = True
            for adapter in self._shared.adapters.values():  # sweepers, portal threads
                aclose = getattr(adapter, "aclose", None)
                if aclose is not None:
                    await aclose()
            await self._shared.blobs.close()

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

    async def append_message(
        self,
        *,
        conversation_id: str,
        role: Role | str,
        content: Any,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> str:
        """Append a message, creating the conversation if missing; returns its id."""
        new = appends.NewMessage(
            conversation_id=validate.conversation_id(conversation_id),
            role=validate.role(role),
            content_json=validate.content_json(content),
            metadata_json=validate.metadata_json(metadata),
            user_id=validate.optional_user_id(user_id),
            now=self._shared.clock(),
            suffix=self._shared.ids(),
        )
        costly = self.blobs.costly_requests
        return await self._shared.run(lambda: appends.append_message(new, costly), write=True)

    async def append_messages(
        self,
        *,
        conversation_id: str,
        messages: Sequence[Mapping[str, Any]],
        user_id: str | None = None,
    ) -> list[str]:
        """Append several ``{role, content, metadata?}`` messages in one unit of
        work (one transaction where the backend has them); returns their ids.
        An addition to the platform's API, for batch writers such as adapters."""
        cid = validate.conversation_id(conversation_id)
        uid = validate.optional_user_id(user_id)
        now = self._shared.clock()
        news = []
        for index, item in enumerate(validate.message_batch(messages)):
            with validate.item_context(f"messages[{index}]"):
                news.append(
                    appends.NewMessage(
                        conversation_id=cid,
                        role=validate.role(item.get("role")),
                        content_json=validate.content_json(item.get("content")),
                        metadata_json=validate.metadata_json(item.get("metadata")),
                        user_id=uid,
                        now=now,
                        suffix=self._shared.ids(),
                    )
                )
        costly = self.blobs.costly_requests
        return await self._shared.run(lambda: appends.append_messages(news, costly), write=True)

    async def get_messages(
        self,
        *,
        conversation_id: str,
        limit: int = 20,
        order: Order | str = "asc",
        after: str | None = None,
        before: str | None = None,
    ) -> list[Message]:
        """A page of messages; ``after``/``before`` are message ids."""
        cid = validate.conversation_id(conversation_id)
        count = validate.limit(limit)
        direction = validate.order(order)
        validate.exclusive_cursors(after, before)
        after_seq = validate.message_cursor(after, "after")
        before_seq = validate.message_cursor(before, "before")
        return await self._shared.run(
            lambda: programs.get_messages(
                cid,
                count,
                direction,
                after_seq,
                before_seq,
                self.blobs.lists_backward,
            ),
            write=False,
        )

    async def update_message(
        self,
        *,
        conversation_id: str,
        message_id: str,
        content: Any = _UNSET,
        metadata: dict[str, Any] | None = _UNSET,
    ) -> Message:
        """Replace the content and/or the whole metadata of one message."""
        cid = validate.conversation_id(conversation_id)
        mid = validate.message_id(message_id)
        content_json = None if content is _UNSET else validate.content_json(content)
        metadata_json = None if metadata is _UNSET else validate.metadata_json(metadata)
        seq = keys.seq_of_message_id(mid)
        now = self._shared.clock()
        return await self._shared.run(
            lambda: programs.update_message(cid, mid, seq, content_json, metadata_json, now),
            write=True,
        )

    async def delete_message(self, *, conversation_id: str, message_id: str) -> None:
        """Delete one message."""
        cid = validate.conversation_id(conversation_id)
        mid = validate.message_id(message_id)
        seq = keys.seq_of_message_id(mid)
        await self._shared.run(lambda: programs.delete_message(cid, mid, seq), write=True)

    async def clear_messages(self, *, conversation_id: str) -> None:
        """Delete every message; the conversation and its metadata stay."""
        cid = validate.conversation_id(conversation_id)
        await self._shared.run(lambda: programs.clear_messages(cid), write=True)

    # --- conversations -----------------------------------------------------

    async def get_conversation(self, *, conversation_id: str) -> ConversationMeta | None:
        """The conversation's meta, or None if it does not exist."""
        cid = validate.conversation_id(conversation_id)
        return await self._shared.run(lambda: programs.get_conversation(cid), write=False)

    async def list_conversations(
        self,
        *,
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
        return await self._shared.run(
            lambda: listing.list_conversations(
                count,
                direction,
                after_key,
                before_key,
                uid,
                self.blobs.lists_backward,
                self.blobs.costly_requests,
            ),
            write=False,
        )

    async def update_conversation(
        self, *, conversation_id: str, metadata: dict[str, Any]
    ) -> ConversationMeta:
        """Shallow-merge ``metadata``; a value of None deletes that key."""
        cid = validate.conversation_id(conversation_id)
        patch = validate.metadata_patch(metadata)
        return await self._shared.run(lambda: programs.update_conversation(cid, patch), write=True)

    async def delete_conversation(self, *, conversation_id: str) -> None:
        """Delete the conversation and everything it owns. Not recoverable."""
        cid = validate.conversation_id(conversation_id)
        await self._shared.run(lambda: programs.delete_conversation(cid), write=True)

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
        return load_adapter("claude_sessions").ClaudeSessionStore(self)  # type: ignore[no-any-return]

    async def claude_session_binding(self, conversation_id: str) -> str:
        """The Claude session id (a UUID) of ``conversation_id``: the id itself
        if it is a UUID, else one generated once and persisted."""
        cid = validate.conversation_id(conversation_id)
        module = load_adapter("claude_sessions")
        return await module.session_binding(self, cid)  # type: ignore[no-any-return]

    def openai_session(self, session_id: str, max_items: int | None = None) -> OpenAISession:
        """An OpenAI Agents SDK ``Session`` kept as this conversation's messages
        (extra ``openai``); ``max_items`` caps the stored items, oldest trimmed."""
        module = load_adapter("openai_sessions")
        return module.OpenAISession(self, session_id, max_items=max_items)  # type: ignore[no-any-return]

    @property
    def langgraph_checkpointer(self) -> MakersCheckpointSaver:
        """A LangGraph ``BaseCheckpointSaver`` over this store (extra ``langgraph``)."""
        return self._adapter("langgraph_checkpoints", "MakersCheckpointSaver")  # type: ignore[no-any-return]

    @property
    def langgraph_store(self) -> MakersLangGraphStore:
        """A LangGraph ``BaseStore`` over this store (extra ``langgraph``)."""
        return self._adapter("langgraph_store", "MakersLangGraphStore")  # type: ignore[no-any-return]

    def _adapter(self, module_name: str, class_name: str) -> Any:
        adapters = self._shared.adapters
        if class_name not in adapters:
            adapters[class_name] = getattr(load_adapter(module_name), class_name)(self)
        return adapters[class_name]
