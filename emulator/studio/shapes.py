"""What the Studio's templates show, built from what the store returns.

Plain functions from store objects (:class:`makers_store.Message`,
:class:`makers_store.ConversationMeta`, state values) to small dicts of
*text*: the templates escape every string they print (Jinja2 autoescape) and
show its control characters visibly (:func:`.config.shown`), so nothing here
produces markup. Times stay milliseconds: the templates' ``moment`` shows them.
JSON text has its control characters as ``\\uNNNN`` escapes
(:func:`makers_store.text.printable_json`): still the same JSON when edited
and saved back.
"""

from __future__ import annotations

import json
from typing import Any

from makers_store import ConversationMeta, Message
from makers_store.text import printable_json

#: Longest text shown for one value before it is cut (the page stays fast
#: with megabyte messages; the whole value is one click away in its JSON).
SHOWN_CHARS = 20_000
_TOOL_PART_TYPES = {"tool_use", "function_call", "tool_call", "computer_call"}
_RESULT_PART_TYPES = {"tool_result", "function_call_output", "computer_call_output"}


def pretty(value: Any) -> str:
    """``value`` as indented JSON text, cut at :data:`SHOWN_CHARS`."""
    if isinstance(value, str):
        text = value
    else:
        text = printable_json(json.dumps(value, indent=2, ensure_ascii=False, default=str))
    return cut(text)


def cut(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}\n... ({len(text) - SHOWN_CHARS:,} more characters)"


def title_of(meta: ConversationMeta) -> str:
    title = meta.metadata.get("title")
    return title if isinstance(title, str) else ""


def conversation_row(meta: ConversationMeta) -> dict[str, Any]:
    return {
        "id": meta.conversation_id,
        "title": title_of(meta),
        "count": meta.message_count,
        "last": meta.last_message_at,
        "created": meta.created_at,
    }


def _part(part: Any) -> dict[str, str]:
    """One piece of multimodal content: a label and its text."""
    if not isinstance(part, dict):
        return {"kind": "value", "label": "", "text": pretty(part)}
    kind = str(part.get("type", ""))
    if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
        return {"kind": "text", "label": "", "text": cut(part["text"])}
    if kind in _TOOL_PART_TYPES:
        name = part.get("name") or part.get("id") or ""
        return {"kind": "tool-call", "label": f"tool call {name}".strip(), "text": pretty(part)}
    if kind in _RESULT_PART_TYPES:
        return {"kind": "tool-result", "label": "tool result", "text": pretty(part)}
    return {"kind": "json", "label": kind or "object", "text": pretty(part)}


def content_parts(content: Any) -> list[dict[str, str]]:
    """A message's content as the pieces the transcript shows."""
    if isinstance(content, str):
        return [{"kind": "text", "label": "", "text": cut(content)}]
    if isinstance(content, list):
        return [_part(part) for part in content]
    return [_part(content)]


def framework_label(metadata: dict[str, Any]) -> str:
    """What wrote a message, when its metadata says: an OpenAI Agents SDK
    session item (``store.openai_session``) is marked ``agent_sdk_session``
    (``openai_agents_item`` by earlier versions)."""
    if metadata.get("agent_sdk_session") is True or metadata.get("openai_agents_item") is True:
        kind = metadata.get("item_type") or metadata.get("type") or "item"
        return f"OpenAI session item: {kind}"
    return ""


def message_view(message: Message) -> dict[str, Any]:
    metadata = message.metadata or {}
    tool_calls = metadata.get("tool_calls")
    return {
        "framework": framework_label(metadata),
        "id": message.message_id,
        "role": message.role,
        "parts": content_parts(message.content),
        "created": message.created_at,
        "edited": message.updated_at,
        "metadata": pretty(metadata) if metadata else "",
        "tool_calls": pretty(tool_calls) if tool_calls else "",
        "raw": pretty(message.to_dict()),
    }


def state_kind(value: Any) -> str:
    """What a state value looks like it is, when recognisable: an OpenAI
    Agents SDK ``RunState`` (``result.to_state().to_string()``, a paused
    human-in-the-loop run) is JSON text with ``$schemaVersion`` and
    ``currentAgent``."""
    data = value
    if isinstance(value, str) and value.startswith("{"):
        try:
            data = json.loads(value)
        except ValueError:
            return ""
    if isinstance(data, dict) and "$schemaVersion" in data and "currentAgent" in data:
        agent = data.get("currentAgent")
        name = agent.get("name") if isinstance(agent, dict) else None
        return f"OpenAI RunState (paused run{f' of {name}' if name else ''})"
    return ""


def state_view(key: str, value: Any) -> dict[str, str]:
    return {
        "key": key,
        "json": printable_json(json.dumps(value, indent=2, ensure_ascii=False)),
        "kind": state_kind(value),
    }
