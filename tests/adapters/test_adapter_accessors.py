"""The typed adapter accessors (store/adapters/__init__.py): what the store's
adapter entries return is what mypy is told they return, with no ``type:
ignore`` left at the call sites, and the LangGraph adapters are built once per
store. (Without their frameworks they name the extra: tests/adapters/test_extras.py.)"""

from __future__ import annotations

import inspect
import typing

import pytest

import makers_store
from makers_store import adapters
from makers_store.adapters.claude.sessions import ClaudeSessionStore
from makers_store.adapters.langgraph.checkpoints import MakersCheckpointSaver
from makers_store.adapters.langgraph.store import MakersLangGraphStore
from makers_store.adapters.openai.sessions import OpenAISession
from makers_store.api.conversation_store import ConversationStore
from makers_store.context_store import ContextStore

ENTRIES = {
    "claude_session_store": ClaudeSessionStore,
    "openai_session": OpenAISession,
    "langgraph_checkpointer": MakersCheckpointSaver,
    "langgraph_store": MakersLangGraphStore,
}


def test_each_accessor_is_typed_with_its_adapter_class() -> None:
    names = {"ContextStore": ContextStore, "ConversationStore": ConversationStore} | {
        cls.__name__: cls for cls in ENTRIES.values()
    }
    for name, cls in ENTRIES.items():
        accessor = getattr(adapters, f"make_{name}")
        assert inspect.isfunction(accessor), name  # not shadowed by a submodule of that name
        assert typing.get_type_hints(accessor, names)["return"] is cls, name
    assert typing.get_type_hints(adapters.claude_session_binding, names)["return"] is str


def test_the_store_entries_need_no_type_ignore() -> None:
    for name in [*ENTRIES, "claude_session_binding", "_adapter"]:
        member = inspect.getattr_static(ContextStore, name)
        function = member.fget if isinstance(member, property) else member
        assert "type: ignore" not in inspect.getsource(function), name


async def test_the_entries_return_their_adapters_and_langgraph_ones_are_built_once() -> None:
    async with makers_store.open_store("memory://") as store:
        assert isinstance(store.claude_session_store(), ClaudeSessionStore)
        session = store.openai_session("c1", max_items=3)
        assert isinstance(session, OpenAISession) and session.max_items == 3
        assert len(await store.claude_session_binding("c1")) == 36
        bound = store.bind("c1")
        for name in ("langgraph_checkpointer", "langgraph_store"):
            first = getattr(store, name)
            assert isinstance(first, ENTRIES[name])
            assert getattr(store, name) is first and getattr(bound, name) is first, name


async def test_the_conversation_is_checked_before_the_framework_is_needed() -> None:
    async with makers_store.open_store("memory://") as store:
        with pytest.raises(makers_store.MemoryValidationError, match="conversation_id"):
            await store.claude_session_binding()
