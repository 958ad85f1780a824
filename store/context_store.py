"""``ContextStore``, the store a user holds: :class:`ConversationStore` (the
store's own API, :mod:`makers_store.api`) and the entries to the rooms above
it, which take the store from outside: ``store.admin`` (the maintenance room,
built on first use) and the methods that hand out an adapter (Claude Agent
SDK, OpenAI Agents SDK, LangGraph), each an optional extra
(:mod:`makers_store.adapters`), with the Claude SDK's ``SessionStore``
protocol on the store itself.

This module is the facade's (the top of ``store/``'s map): nothing below it
imports it, so neither the adapters nor the maintenance room know this class,
only the :class:`ConversationStore` they are handed. The sync facade's
generator (``python -m devtools.sync_codegen``) reads both classes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._core import arguments
from .api.conversation_store import ConversationStore

if TYPE_CHECKING:  # the adapters' entries are imported by the methods that use them
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

    from . import adapters
    from .adapters.claude.sessions import ClaudeSessionStore
    from .adapters.langgraph.checkpoints import MakersCheckpointSaver
    from .adapters.langgraph.store import MakersLangGraphStore
    from .adapters.openai.sessions import OpenAISession
    from .maintenance.admin import StoreAdmin


class ContextStore(ConversationStore):
    """``context.store``: conversations, messages and state over a Blob store.

    Create one with :func:`makers_store.open_store`; ``bind(conversation_id)``
    gives the store an agent sees as ``ctx.store``, whose ``state`` works and
    whose methods default ``conversation_id`` to the bound one.
    """

    @property
    def admin(self) -> StoreAdmin:
        """Maintenance over the whole store: counts, index check and rebuild,
        export, import, copy, search, raw blobs
        (:class:`~makers_store.maintenance.admin.StoreAdmin`)."""
        from .maintenance.admin import StoreAdmin  # imported on use: import and copy machinery

        return StoreAdmin(self.runner, self)

    def claude_session_store(self) -> ClaudeSessionStore:
        """A ``claude_agent_sdk`` ``SessionStore`` over this store (extra ``claude``)."""
        from . import adapters

        return adapters.make_claude_session_store(self)

    async def claude_session_binding(self, conversation_id: str | None = None) -> str:
        """The Claude session id (a UUID) of ``conversation_id``: the id itself
        if it is a UUID, else one generated once and persisted."""
        from . import adapters

        cid = arguments.conversation(self.conversation_id, conversation_id)
        return await adapters.claude_session_binding(self, cid)

    def openai_session(
        self, session_id: str, max_items: int | None = None, *, strict: bool = False
    ) -> OpenAISession:
        """An OpenAI Agents SDK ``Session`` kept as this conversation's messages
        (extra ``openai``); ``max_items`` caps the stored items, oldest trimmed.
        ``get_items`` never returns a function call without its output (it
        gets one saying the call was interrupted) or an output without its
        call; ``strict=True`` raises InvalidHistoryError instead."""
        from . import adapters

        return adapters.make_openai_session(self, session_id, max_items, strict=strict)

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
        from . import adapters

        return self._adapter("langgraph_checkpointer", adapters.make_langgraph_checkpointer)

    @property
    def langgraph_store(self) -> MakersLangGraphStore:
        """A LangGraph ``BaseStore`` over this store (extra ``langgraph``)."""
        from . import adapters

        return self._adapter("langgraph_store", adapters.make_langgraph_store)

    def _adapter(
        self, name: str, build: Callable[[ConversationStore], adapters.AdapterT]
    ) -> adapters.AdapterT:
        """``build(self)``, made once per store: the views bound from it share it."""
        built = self._adapters
        if name not in built:
            built[name] = build(self)
        adapter: adapters.AdapterT = built[name]  # what ``build`` made under this name
        return adapter
