"""The generic store API and ``state`` as store RPC handlers.

Each Node method takes one object of camelCase arguments (the platform's Node
API) and runs the Python method of the same meaning on the store bound to the
caller's conversation and run (``$bind``), so an omitted ``conversationId``
defaults exactly as it does on a bound Python ``ctx.store``.

The object is read as JavaScript reads one: a key the method does not take is
ignored (logged once per method and key), while a key it takes is checked by
the Python store, so a wrong type is still a ``MemoryValidationError``.

Which keys a method takes is read from the Python method's signature
(:data:`GENERIC`), not restated here, so a parameter added to
``store/api/conversation_store.py`` is a Node option at once; ``store.d.ts`` declares the same
keys (``tests/node/test_store_rpc_server.py`` checks all three agree).
"""

from __future__ import annotations

import inspect
from typing import Any

from makers_store import ContextStore
from makers_store.limits import identifier

from .values import (
    Handler,
    camel,
    ignore_unknown,
    keyword_arguments,
    option_arguments,
    required,
    snake,
    take_bind,
    to_node,
)

#: The generic methods by Node name; each runs the :class:`~makers_store.ContextStore`
#: method of the same name in snake_case (``appendMessage`` -> ``append_message``).
GENERIC_METHODS = (
    "appendMessage", "appendMessages", "getMessages", "updateMessage", "deleteMessage",
    "clearMessages", "getConversation", "listConversations", "updateConversation",
    "deleteConversation", "claudeSessionBinding",
)

#: ``userId`` where the platform's store doc gives it no meaning (it is the
#: owner a conversation gets from ``appendMessage``, which ``listConversations``
#: filters by), though official templates pass it: checked as a user id (a
#: wrong type is refused as ``appendMessage`` refuses it), then left out.
IGNORED_USER_ID = ("getMessages", "clearMessages", "deleteConversation")


def node_arguments(method: str) -> tuple[str, ...]:
    """The keys Node's ``method`` takes, in order: the Python method's parameters in
    camelCase, as its signature names them, then ``userId`` where it is accepted and
    ignored (:data:`IGNORED_USER_ID`)."""
    python = getattr(ContextStore, snake(method))
    names = tuple(camel(name) for name in inspect.signature(python).parameters if name != "self")
    return (*names, "userId") if method in IGNORED_USER_ID else names


#: Node method -> its arguments, in the platform's order (Python: the same in snake_case)
GENERIC: dict[str, tuple[str, ...]] = {method: node_arguments(method) for method in GENERIC_METHODS}

#: One ``appendMessages`` item's keys, Node -> Python.
ITEM_KEYS = {"role": "role", "content": "content", "metadata": "metadata",
             "messageId": "message_id"}


def bound(store: ContextStore, params: dict[str, Any]) -> ContextStore:
    """``store`` bound as the caller's ``context.store`` is (``$bind``)."""
    conversation_id, run_id = take_bind(params)
    if conversation_id is None and run_id is None:
        return store
    return store.bind(conversation_id, run_id=run_id)


def _item(item: Any) -> Any:
    """An ``appendMessages`` item with Python's keys, unknown ones left out as
    :func:`.values.option_arguments` leaves them out."""
    if not isinstance(item, dict):
        return item  # the store names the error
    out = {}
    for name, value in item.items():
        if name in ITEM_KEYS:
            out[ITEM_KEYS[name]] = value
        else:
            ignore_unknown("appendMessages", f"messages[].{name}", tuple(ITEM_KEYS))
    return out


def _generic(store: ContextStore, method: str, accepted: tuple[str, ...]) -> Handler:
    python_name = snake(method)

    async def handle(params: dict[str, Any]) -> Any:
        target = bound(store, params)
        kwargs = option_arguments(method, params, accepted)
        if method in IGNORED_USER_ID:
            if (user_id := kwargs.pop("user_id", None)) is not None:
                identifier(user_id, "user_id")
        if method == "appendMessages" and isinstance(kwargs.get("messages"), list):
            kwargs["messages"] = [_item(item) for item in kwargs["messages"]]
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
