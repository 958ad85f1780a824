"""Turn stored messages into the input shapes of the model APIs.

Every function accepts :class:`Message` objects or their ``to_dict()`` form,
or a :class:`~makers_store.lifecycle.context_window.ContextWindow`
(``store.context_window``), whose summary goes where each API takes system
text: a leading system message in OpenAI input, the separate ``system``
parameter of Anthropic's Messages API (:func:`to_anthropic_request`, which
returns it beside the messages; :func:`to_anthropic_messages` returns the
messages alone, leaving system text out as it always has).
Tool-calling ids travel in message metadata, as the platform's examples do:
``metadata["tool_calls"]`` on an assistant message (Chat Completions shape)
and ``metadata["tool_call_id"]`` (or ``"tool_use_id"``) on a tool message.

What they return is always valid input as far as tool calls go (issue 33): a
call without its result gets a result saying it was interrupted, right after
its turn, and a result without its call is left out, in the output only, each
fix logged once (:mod:`makers_store.lifecycle.history_guard`, by the doctor's
own rules); ``strict=True`` raises
:class:`~makers_store.InvalidHistoryError` instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NotRequired, TypedDict

from ..models import Message
from .context_window import ContextWindow
from .history_guard import guard_history

MessageLike = Message | Mapping[str, Any]
#: What the converters take: messages, or a context window (summary and messages).
MessageSource = ContextWindow | Iterable[MessageLike]


class AnthropicRequest(TypedDict):
    """The ``messages`` and, when there is system text, ``system`` arguments
    of Anthropic's ``messages.create``: spread it into the call,
    ``client.messages.create(model=..., max_tokens=..., **request)``
    (``system`` is left out rather than None, which the API refuses)."""

    messages: list[dict[str, Any]]
    system: NotRequired[str]


def _messages(source: MessageSource) -> Iterable[MessageLike]:
    return source.messages if isinstance(source, ContextWindow) else source


def _fields(message: MessageLike) -> tuple[str, Any, dict[str, Any]]:
    if isinstance(message, Message):
        return message.role, message.content, dict(message.metadata or {})
    return str(message["role"]), message.get("content"), dict(message.get("metadata") or {})


def _as_message(message: MessageLike) -> Message:
    if isinstance(message, Message):
        return message
    role, content, metadata = _fields(message)
    created = message.get("created_at")
    return Message(
        message_id=str(message.get("message_id") or ""),
        role=role,
        content=content,
        created_at=created if isinstance(created, int) else 0,
        metadata=metadata,
    )


def _guarded(source: MessageSource, strict: bool, where: str) -> list[Message]:
    """The messages of ``source`` with orphan tool calls and results fixed
    (or InvalidHistoryError when ``strict``)."""
    cid = source.conversation_id if isinstance(source, ContextWindow) else None
    listed = [_as_message(message) for message in _messages(source)]
    return guard_history(listed, conversation_id=cid, strict=strict, where=where)


def to_openai_input(messages: MessageSource, *, strict: bool = False) -> list[dict[str, Any]]:
    """``{role, content}`` items for Chat Completions (a Responses API
    ``input`` takes its system, user and assistant items as they are); roles
    and content pass through, plus ``tool_calls`` / ``tool_call_id`` /
    ``name`` from metadata. A context window's summary comes first, as a
    system message. Orphan tool calls get a result saying they were
    interrupted and orphan results are left out (``strict=True``:
    :class:`~makers_store.InvalidHistoryError` instead)."""
    out: list[dict[str, Any]] = []
    if isinstance(messages, ContextWindow) and messages.system_text is not None:
        out.append({"role": "system", "content": messages.system_text})
    return out + openai_items(_guarded(messages, strict, "to_openai_input"))


def openai_items(messages: Iterable[MessageLike]) -> list[dict[str, Any]]:
    """:func:`to_openai_input`'s items for ``messages`` as they are, unguarded:
    the doctor judges one message at a time with it."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role, content, metadata = _fields(message)
        item: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and metadata.get("tool_calls"):
            item["tool_calls"] = metadata["tool_calls"]
        if role == "tool":
            call_id = metadata.get("tool_call_id") or metadata.get("tool_use_id")
            if call_id:
                item["tool_call_id"] = call_id
        if isinstance(metadata.get("name"), str) and role in ("user", "assistant", "system"):
            item["name"] = metadata["name"]
        out.append(item)
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Anthropic content blocks for any stored content."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        blocks: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, str):
                if part:
                    blocks.append({"type": "text", "text": part})
            elif isinstance(part, dict):
                blocks.append(part)
            else:
                blocks.append({"type": "text", "text": json.dumps(part)})
        return blocks
    return [{"type": "text", "text": json.dumps(content)}] if content is not None else []


def _tool_use_blocks(tool_calls: Any) -> list[dict[str, Any]]:
    blocks = []
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments else {}
            except json.JSONDecodeError:
                arguments = {"arguments": arguments}
        if isinstance(call, dict) and call.get("id") and function.get("name"):
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}
            )
    return blocks


def to_anthropic_messages(messages: MessageSource, *, strict: bool = False) -> list[dict[str, Any]]:
    """``messages`` for the Anthropic Messages API.

    System messages, and a context window's summary, are left out (the API
    takes them as the separate ``system`` parameter: use
    :func:`to_anthropic_request` to get it too). Tool messages become ``tool_result`` blocks in a
    user turn when their metadata carries the call id, otherwise user text.
    Consecutive turns of one role merge into one, tool results first, and
    empty turns are dropped, as the API requires. Orphan tool calls get a
    result saying they were interrupted and orphan results are left out
    (``strict=True``: :class:`~makers_store.InvalidHistoryError` instead).
    """
    return anthropic_turns(_guarded(messages, strict, "to_anthropic_messages"))


def anthropic_turns(messages: Iterable[MessageLike]) -> list[dict[str, Any]]:
    """:func:`to_anthropic_messages` for ``messages`` as they are, unguarded:
    the doctor judges one message at a time with it."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content, metadata = _fields(message)
        if role == "system":
            continue
        if role == "tool":
            call_id = metadata.get("tool_use_id") or metadata.get("tool_call_id")
            if call_id:
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
                result_blocks = _blocks(content)
                if result_blocks:
                    result["content"] = result_blocks
                if metadata.get("is_error"):
                    result["is_error"] = True
                blocks = [result]
            else:
                blocks = _blocks(content)
            role = "user"
        else:
            blocks = _blocks(content)
            if role == "assistant":
                blocks += _tool_use_blocks(metadata.get("tool_calls"))
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            merged = turns[-1]["content"] + blocks
            # tool_result blocks must open a user turn
            merged.sort(key=lambda block: block.get("type") != "tool_result")
            turns[-1]["content"] = merged
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # plain single-text turns read best as strings
        content = turn["content"]
        if (
            len(content) == 1
            and content[0].get("type") == "text"
            and set(content[0]) == {"type", "text"}
        ):
            turn["content"] = content[0]["text"]
    return turns


def to_anthropic_request(messages: MessageSource, *, strict: bool = False) -> AnthropicRequest:
    """``messages`` and ``system`` for the Anthropic Messages API: the
    messages as :func:`to_anthropic_messages` makes them, and the system text
    it leaves out, joined by blank lines: a context window's summary first,
    then the text of stored system messages in their order (a non-text part
    as its JSON). ``system`` is absent when there is none. Tool calls and
    results are guarded as :func:`to_anthropic_messages` guards them."""
    parts: list[str] = []
    if isinstance(messages, ContextWindow) and messages.system_text is not None:
        parts.append(messages.system_text)
    listed = _guarded(messages, strict, "to_anthropic_request")  # read twice: a list
    for message in listed:
        role, content, _ = _fields(message)
        if role == "system":
            text = _text(content)
            if text:
                parts.append(text)
    request: AnthropicRequest = {"messages": anthropic_turns(listed)}
    if parts:
        request["system"] = "\n\n".join(parts)
    return request


def _text(content: Any) -> str:
    """Stored content as plain text: text blocks' text, other blocks as JSON."""
    return "\n".join(
        block["text"]
        if block.get("type") == "text" and isinstance(block.get("text"), str)
        else json.dumps(block, ensure_ascii=False)
        for block in _blocks(content)
    )
