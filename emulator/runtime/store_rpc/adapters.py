"""The framework adapters as store RPC handlers: each Node adapter is a thin
client of the Python adapter of the same framework (makers_store.adapters).

=====================================  ==============================================
Node method                            Python adapter
=====================================  ==============================================
``claude.sessionStore.<method>``       ``store.claude_session_store()``
``openai.session.<method>``            ``store.openai_session(id, max_items)``
``langgraph.checkpointer.<method>``    ``MakersCheckpointSaver`` (typed bytes relayed)
``langgraph.store.batch``              ``store.langgraph_store.abatch``
=====================================  ==============================================

Python names become Node's at this edge (``session_id`` -> ``sessionId``);
the Python adapters need their extras, as for Python agents
(``MissingExtraError`` names the one to install).
"""

from __future__ import annotations

from typing import Any

from makers_store import ContextStore
from makers_store.errors import MemoryValidationError

from . import langgraph
from .methods import bound
from .values import Handler, camel, keyword_arguments, required


def _session_key(value: Any) -> Any:
    """A Node ``SessionKey`` (``{projectKey, sessionId, subpath?}``) in Python's names."""
    if not isinstance(value, dict):
        return value  # the Python adapter names the error
    names = {"projectKey": "project_key", "sessionId": "session_id", "subpath": "subpath"}
    return {names.get(name, name): item for name, item in value.items()}


def _claude(store: ContextStore) -> dict[str, Handler]:
    def adapter(params: dict[str, Any], method: str, accepted: tuple[str, ...]) -> Any:
        sessions = bound(store, params).claude_session_store()
        return sessions, keyword_arguments(f"claude.sessionStore.{method}", params, accepted)

    async def append(params: dict[str, Any]) -> None:
        sessions, kw = adapter(params, "append", ("key", "entries"))
        await sessions.append(_session_key(required(kw, "key")), required(kw, "entries"))

    async def load(params: dict[str, Any]) -> Any:
        sessions, kw = adapter(params, "load", ("key",))
        return await sessions.load(_session_key(required(kw, "key")))

    async def list_sessions(params: dict[str, Any]) -> Any:
        sessions, kw = adapter(params, "listSessions", ("projectKey",))
        found = await sessions.list_sessions(required(kw, "project_key"))
        return [{"sessionId": item["session_id"], "mtime": item["mtime"]} for item in found]

    async def list_session_summaries(params: dict[str, Any]) -> Any:
        sessions, kw = adapter(params, "listSessionSummaries", ("projectKey",))
        found = await sessions.list_session_summaries(required(kw, "project_key"))
        # The summary is folded by the Python SDK, whose fields are the
        # TypeScript SDK's in snake_case (first_prompt: firstPrompt)
        return [
            {
                "sessionId": item["session_id"],
                "mtime": item["mtime"],
                "data": {camel(name): value for name, value in item["data"].items()},
            }
            for item in found
        ]

    async def delete(params: dict[str, Any]) -> None:
        sessions, kw = adapter(params, "delete", ("key",))
        await sessions.delete(_session_key(required(kw, "key")))

    async def list_subkeys(params: dict[str, Any]) -> Any:
        sessions, kw = adapter(params, "listSubkeys", ("key",))
        key = _session_key(required(kw, "key"))
        if not isinstance(key, dict):
            raise MemoryValidationError(f"key must be a dict, not {type(key).__name__}")
        return await sessions.list_subkeys(key)

    prefix = "claude.sessionStore."
    return {
        prefix + "append": append,
        prefix + "load": load,
        prefix + "listSessions": list_sessions,
        prefix + "listSessionSummaries": list_session_summaries,
        prefix + "delete": delete,
        prefix + "listSubkeys": list_subkeys,
    }


def _openai(store: ContextStore) -> dict[str, Handler]:
    def session(params: dict[str, Any], method: str, extra: tuple[str, ...]) -> Any:
        target = bound(store, params)
        kw = keyword_arguments(
            f"openai.session.{method}", params, ("sessionId", "maxItems", *extra)
        )
        return target.openai_session(required(kw, "session_id"), kw.get("max_items")), kw

    async def get_items(params: dict[str, Any]) -> Any:
        adapter, kw = session(params, "getItems", ("limit",))
        return await adapter.get_items(kw.get("limit"))

    async def add_items(params: dict[str, Any]) -> None:
        adapter, kw = session(params, "addItems", ("items",))
        await adapter.add_items(required(kw, "items"))

    async def pop_item(params: dict[str, Any]) -> Any:
        adapter, _ = session(params, "popItem", ())
        return await adapter.pop_item()

    async def clear_session(params: dict[str, Any]) -> None:
        adapter, _ = session(params, "clearSession", ())
        await adapter.clear_session()

    prefix = "openai.session."
    return {
        prefix + "getItems": get_items,
        prefix + "addItems": add_items,
        prefix + "popItem": pop_item,
        prefix + "clearSession": clear_session,
    }


def handlers(store: ContextStore) -> dict[str, Handler]:
    """Every adapter method by its Node name."""
    table = _claude(store)
    table.update(_openai(store))
    table.update(langgraph.handlers(store))
    return table
