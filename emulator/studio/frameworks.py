"""The framework data kept under a conversation, read through the public
adapters: LangGraph checkpoints (``store.langgraph_checkpointer``), Claude
session transcripts (``store.claude_session_store()``) and OpenAI session
items (``store.openai_session(...)``). A framework that is not installed is
left out (its adapter raises ``MissingExtraError``), never an error page.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from makers_store import ContextStore, MissingExtraError

from .shapes import pretty

#: Newest checkpoints / items shown per conversation.
CHECKPOINTS_SHOWN = 50
ITEMS_SHOWN = 50
INTERRUPT_CHANNEL = "__interrupt__"


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-like data for display: framework objects (LangChain
    messages, ``Interrupt``, ``Send``, dataclasses) become dicts, anything
    else unknown its ``repr``."""
    if depth > 20:
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return {"_type": type(value).__name__, **plain(dump(), depth + 1)}
        except Exception:  # a model that cannot dump itself is shown as its repr
            return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"_type": type(value).__name__, **plain(fields, depth + 1)}
    return repr(value)


async def langgraph_timeline(store: ContextStore, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's (thread's) checkpoints, newest first, every namespace."""
    try:
        saver = store.langgraph_checkpointer
    except MissingExtraError:
        return []
    config: Any = {"configurable": {"thread_id": conversation_id}}
    timeline = []
    async for item in saver.alist(config, limit=CHECKPOINTS_SHOWN):
        conf = item.config["configurable"]
        parent = (item.parent_config or {}).get("configurable", {})
        writes = [
            {"task": task, "channel": channel, "value": pretty(plain(value))}
            for task, channel, value in (item.pending_writes or [])
        ]
        timeline.append(
            {
                "id": conf.get("checkpoint_id", ""),
                "namespace": conf.get("checkpoint_ns", ""),
                "parent": parent.get("checkpoint_id", ""),
                "ts": item.checkpoint.get("ts", ""),
                "step": item.metadata.get("step", ""),
                "source": item.metadata.get("source", ""),
                "channels": pretty(plain(item.checkpoint.get("channel_values", {}))),
                "metadata": pretty(plain(dict(item.metadata))),
                "writes": [w for w in writes if w["channel"] != INTERRUPT_CHANNEL],
                "interrupts": [w for w in writes if w["channel"] == INTERRUPT_CHANNEL],
            }
        )
    return timeline


def openai_installed() -> bool:
    """Whether the OpenAI Agents SDK (the ``openai`` extra) can be imported."""
    import importlib.util

    return importlib.util.find_spec("agents") is not None


async def openai_items(store: ContextStore, conversation_id: str) -> list[str]:
    """The newest OpenAI Agents SDK session items kept as this conversation's
    messages, oldest first, as JSON text. Finding them reads the conversation's
    messages (they are messages marked in their metadata), so the page asks
    for them only when opened."""
    try:
        session = store.openai_session(conversation_id)
    except MissingExtraError:
        return []
    items = await session.get_items(limit=ITEMS_SHOWN)
    return [pretty(plain(item)) for item in items]


async def claude_transcripts(store: ContextStore, conversation_id: str) -> list[dict[str, Any]]:
    """The Claude Agent SDK transcripts kept for this conversation (main and
    subagents'), each with its entries as JSON text."""
    try:
        sessions = store.claude_session_store()
    except MissingExtraError:
        return []
    shown = []
    for key in await sessions.conversation_transcripts(conversation_id):
        entries = await sessions.load(key) or []
        shown.append(
            {
                "project": key["project_key"],
                "session": key["session_id"],
                "subpath": key.get("subpath") or "",
                "count": len(entries),
                "entries": [pretty(plain(e)) for e in entries[-ITEMS_SHOWN:]],
            }
        )
    return shown
