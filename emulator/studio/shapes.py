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
from makers_store.lifecycle.history_rules import result_ids, session_call
from makers_store.text import printable_json

#: Longest text shown for one value before it is cut (the page stays fast
#: with megabyte messages; the whole value is one click away in its JSON).
SHOWN_CHARS = 20_000
_TOOL_PART_TYPES = {"tool_use", "function_call", "tool_call", "computer_call"}
_RESULT_PART_TYPES = {"tool_result", "function_call_output", "computer_call_output"}
#: Longest arguments a compact call shows (``weather({"city": "Lisbon"})``).
CALL_CHARS = 300


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


def call_text(name: Any, arguments: Any) -> str:
    """One tool call as a person reads it: ``weather({"city": "Lisbon"})``
    (arguments given as JSON text are parsed and written on one line)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # not JSON after all: shown as the text it is
    if arguments is None or arguments == "":
        shown = ""
    elif isinstance(arguments, str):
        shown = arguments
    else:
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(shown) > CALL_CHARS:
        shown = f"{shown[:CALL_CHARS]}…"
    return printable_json(f"{name if isinstance(name, str) and name else '?'}({shown})")


def _call_of_block(block: Any) -> dict[str, str] | None:
    """A content block or session item that is a tool call, as (id, text)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "tool_use" and isinstance(block.get("id"), str):
        return {"id": block["id"], "text": call_text(block.get("name"), block.get("input"))}
    pair = session_call(block)
    if pair is not None and pair[0] == "call":
        name = block.get("name") or kind
        return {"id": pair[1], "text": call_text(name, block.get("arguments"))}
    return None


def tool_calls(message: Message) -> list[dict[str, str]]:
    """The tool calls a message makes, wherever they live (the rules of
    :mod:`makers_store.lifecycle.history_rules`): an assistant message's
    ``metadata["tool_calls"]`` (Chat Completions), its ``tool_use`` content
    blocks (Anthropic), an OpenAI session item that is a call. Each
    ``{"id", "text"}``."""
    found: list[dict[str, str]] = []
    calls = (message.metadata or {}).get("tool_calls")
    if message.role == "assistant" and isinstance(calls, list):
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                continue
            given = call.get("function")
            function: dict[str, Any] = given if isinstance(given, dict) else {}
            name = function.get("name") or call.get("name")
            found.append({"id": call["id"], "text": call_text(name, function.get("arguments"))})
    content = message.content
    for block in content if isinstance(content, list) else [content]:
        call = _call_of_block(block)
        if call is not None:
            found.append(call)
    return found


def answered_calls(message: Message) -> list[str]:
    """The ids of the tool calls a message holds the results of (a tool
    message's ``tool_call_id``, ``tool_result`` blocks, a session item that is
    a call's output)."""
    found = result_ids(message)
    pair = session_call(message.content)
    if pair is not None and pair[0] == "output" and pair[1] not in found:
        found.append(pair[1])
    return found


def message_view(message: Message) -> dict[str, Any]:
    metadata = message.metadata or {}
    return {
        "framework": framework_label(metadata),
        "id": message.message_id,
        "role": message.role,
        "parts": content_parts(message.content),
        "created": message.created_at,
        "edited": message.updated_at,
        "metadata": pretty(metadata) if metadata else "",
        "calls": tool_calls(message),
        "answers": answered_calls(message),
        # how a reply stopped mid-way is marked (init's agents: finish_turn's metadata)
        "aborted": metadata.get("aborted") is True,
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
