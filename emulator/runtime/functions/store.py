"""``context.agent.store`` as cloud functions see it: the store without LangGraph.

On the platform the cloud-function store holds the same data as an agent's
``ctx.store`` but lacks ``langgraph_checkpointer`` and ``langgraph_store``
(platform-runtime.md §3.3); reading them fails. This view passes every other
attribute through to the store it wraps (message API, conversation meta,
``state``, ``openai_session``, ``claude_session_store``,
``claude_session_binding``) and refuses those two with an error that names
the rule, so code that works here also works there.

It wraps either store: the synchronous :class:`~makers_store.SyncContextStore`
(``self.context.agent.store`` of handler classes and framework apps) or the
async :class:`~makers_store.ContextStore` (``context.agent.store`` of context
handlers, which await it).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from makers_store import ContextStore, SyncContextStore

from ..errors import NotInCloudFunctionsError

_REMOVED = frozenset({"langgraph_checkpointer", "langgraph_store"})
StoreT = TypeVar("StoreT", SyncContextStore, ContextStore)


class CloudFunctionStore(Generic[StoreT]):
    """A store without the LangGraph adapters (a view: nothing is copied)."""

    __slots__ = ("_store",)

    def __init__(self, store: StoreT) -> None:
        self._store: StoreT = store

    def __getattr__(self, name: str) -> Any:
        if name in _REMOVED:
            raise NotInCloudFunctionsError(
                f"context.agent.store.{name}: the EdgeOne Makers platform gives cloud "
                "functions no LangGraph adapters (langgraph_checkpointer, langgraph_store); "
                f"use ctx.store.{name} from an agent under agents/ instead"
            )
        return getattr(self._store, name)

    def bind(
        self, conversation_id: str | None, *, run_id: str | None = None
    ) -> CloudFunctionStore[StoreT]:
        """The same view, bound to ``conversation_id`` (None: to no conversation)."""
        return CloudFunctionStore(self._store.bind(conversation_id, run_id=run_id))

    def __dir__(self) -> list[str]:
        return sorted((set(dir(self._store)) | {"bind"}) - _REMOVED)

    def __repr__(self) -> str:
        kind = "sync" if isinstance(self._store, SyncContextStore) else "async"
        return f"<cloud-function {kind} store conversation_id={self._store.conversation_id!r}>"
