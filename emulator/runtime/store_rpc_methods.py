"""The generic store API and ``state`` as store RPC handlers.

Each Node method takes one object of camelCase arguments (the platform's Node
API) and runs the Python method of the same meaning on the store bound to the
caller's conversation and run (``$bind``), so an omitted ``conversationId``
defaults exactly as it does on a bound Python ``ctx.store``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from makers_store import ContextStore

from .store_rpc_values import keyword_arguments, required, take_bind, to_node

Handler = Callable[[dict[str, Any]], Awaitable[Any]]

#: Node method -> its arguments, in the platform's order (Python: the same in snake_case)
GENERIC: dict[str, tuple[str, ...]] = {
    "appendMessage": ("conversationId", "role", "content", "metadata", "userId"),
    "appendMessages": ("conversationId", "messages", "userId"),
    "getMessages": ("conversationId", "limit", "order", "after", "before"),
    "updateMessage": ("conversationId", "messageId", "content", "metadata"),
    "deleteMessage": ("conversationId", "messageId"),
    "clearMessages": ("conversationId",),
    "getConversation": ("conversationId",),
    "listConversations": ("limit", "order", "after", "before", "userId"),
    "updateConversation": ("conversationId", "metadata"),
    "deleteConversation": ("conversationId",),
    "claudeSessionBinding": ("conversationId",),
}


def bound(store: ContextStore, params: dict[str, Any]) -> ContextStore:
    """``store`` bound as the caller's ``context.store`` is (``$bind``)."""
    conversation_id, run_id = take_bind(params)
    if conversation_id is None and run_id is None:
        return store
    return store.bind(conversation_id, run_id=run_id)


def _generic(store: ContextStore, method: str, accepted: tuple[str, ...]) -> Handler:
    python_name = "".join("_" + c.lower() if c.isupper() else c for c in method)

    async def handle(params: dict[str, Any]) -> Any:
        target = bound(store, params)
        kwargs = keyword_arguments(method, params, accepted)
        return to_node(await getattr(target, python_name)(**kwargs))

    return handle


def _state(store: ContextStore) -> dict[str, Handler]:
    async def get(params: dict[str, Any]) -> Any:
        state = bound(store, params).state
        kwargs = keyword_arguments("state.get", params, ("key",))
        return await state.get(required(kwargs, "key"))

    async def set_(params: dict[str, Any]) -> None:
        state = bound(store, params).state
        kwargs = keyword_arguments("state.set", params, ("key", "value"))
        await state.set(required(kwargs, "key"), required(kwargs, "value"))

    async def delete(params: dict[str, Any]) -> None:
        state = bound(store, params).state
        kwargs = keyword_arguments("state.delete", params, ("key",))
        await state.delete(required(kwargs, "key"))

    return {"state.get": get, "state.set": set_, "state.delete": delete}


def handlers(store: ContextStore) -> dict[str, Handler]:
    """The generic methods and ``state.*`` by Node name."""
    table = {method: _generic(store, method, accepted) for method, accepted in GENERIC.items()}
    table.update(_state(store))
    return table
