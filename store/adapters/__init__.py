"""Framework adapters: each speaks one agent framework's own storage protocol
over the same Blob store as the generic API.

==========================  ================================  ======================
entry on ``ContextStore``    module                            extra
==========================  ================================  ======================
``claude_session_store()``   :mod:`.claude.sessions`           ``makers-store[claude]``
``openai_session(id)``       :mod:`.openai.sessions`           ``makers-store[openai]``
``langgraph_checkpointer``   :mod:`.langgraph.checkpoints`     ``makers-store[langgraph]``
``langgraph_store``          :mod:`.langgraph.store`           ``makers-store[langgraph]``
==========================  ================================  ======================

The framework SDKs are optional: nothing here imports one until an adapter
is asked for, and a missing SDK raises ``MissingExtraError`` (an ImportError)
naming the extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TypeVar

from ..errors import missing_extra

if TYPE_CHECKING:
    from ..api.conversation_store import ConversationStore
    from .claude.sessions import ClaudeSessionStore
    from .langgraph.checkpoints import MakersCheckpointSaver
    from .langgraph.store import MakersLangGraphStore
    from .openai.sessions import OpenAISession

#: The type of one adapter object (for the store's built-once cache).
AdapterT = TypeVar("AdapterT")

#: adapter module -> (framework module it needs, extra that installs it)
REQUIREMENTS: dict[str, tuple[str, str]] = {
    "claude_sessions": ("claude_agent_sdk", "claude"),
    "openai_sessions": ("agents", "openai"),
    "langgraph_checkpoints": ("langgraph.checkpoint.base", "langgraph"),
    "langgraph_store": ("langgraph.store.base", "langgraph"),
}


def require(name: str) -> None:
    """Check that adapter module ``name`` can be imported: MissingExtraError
    naming the extra when its framework is not installed.

    The framework is imported first, on its own, so that an ImportError from
    the adapter module itself (a bug) is not mistaken for a missing extra.
    """
    framework, extra = REQUIREMENTS[name]
    try:
        importlib.import_module(framework)
    except ImportError as exc:
        raise missing_extra(framework.split(".")[0], extra) from exc


# One typed accessor per entry on ContextStore (the table above). Each imports
# its adapter module on first use, so `import makers_store` imports no framework.
# (``make_`` also keeps the names apart from the submodules: importing
# ``.langgraph_store`` sets this package's attribute of that name.)


def make_claude_session_store(store: ConversationStore) -> ClaudeSessionStore:
    require("claude_sessions")
    from .claude.sessions import ClaudeSessionStore

    return ClaudeSessionStore(store)


async def claude_session_binding(store: ConversationStore, conversation_id: str) -> str:
    require("claude_sessions")
    from .claude.sessions import session_binding

    return await session_binding(store, conversation_id)


def make_openai_session(
    store: ConversationStore, session_id: str, max_items: int | None, *, strict: bool = False
) -> OpenAISession:
    require("openai_sessions")
    from .openai.sessions import OpenAISession

    return OpenAISession(store, session_id, max_items=max_items, strict=strict)


def make_langgraph_checkpointer(store: ConversationStore) -> MakersCheckpointSaver:
    require("langgraph_checkpoints")
    from .langgraph.checkpoints import MakersCheckpointSaver

    return MakersCheckpointSaver(store)


def make_langgraph_store(store: ConversationStore) -> MakersLangGraphStore:
    require("langgraph_store")
    from .langgraph.store import MakersLangGraphStore

    return MakersLangGraphStore(store)
