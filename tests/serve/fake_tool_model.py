"""The fake gateway of :mod:`.fake_model`, taught one tool-using turn.

A turn whose user text contains ``tool:`` is answered in the Anthropic
Messages protocol as a model using the ``edgeone`` MCP tools would answer
it, in three model calls: ``mcp__edgeone__files_write`` of the text after
``tool:`` to :data:`NOTE_PATH`, then ``mcp__edgeone__files_read`` of that
file, then the text ``read back: <what the read returned>``. Each call is
recognised from the last message alone (a ``tool_result`` for the write,
then one for the read), so the server keeps no state between calls.

In Chat Completions, a last user text ``call: <tool> <JSON arguments>`` is
answered with that one tool call, and a request whose last message is a
``tool`` result with ``tool said: <the result>``, so an agent in any
framework can be made to call any of its tools.

Every other request gets the echo of :mod:`.fake_model`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .fake_model import FakeModel, _Handler, completion_id, fake_model, user_texts

NOTE_PATH = "/notes/tool.txt"
WRITE_TOOL = "mcp__edgeone__files_write"
READ_TOOL = "mcp__edgeone__files_read"
TRIGGER = "tool:"
_WRITE_ID = "toolu_write_"
_READ_ID = "toolu_read_"
#: a last user text ``call: <tool> <JSON arguments>`` makes a Chat Completions tool call
CALL_TRIGGER = "call:"


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (a string, or text blocks)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def next_step(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The scripted answer to ``messages``: a tool_use or a text block; None: echo."""
    if not messages:
        return None
    results = _tool_results(messages[-1])
    if results:
        answered = str(results[-1].get("tool_use_id", ""))
        if answered.startswith(_WRITE_ID):
            return {"type": "tool_use", "id": f"{_READ_ID}{uuid.uuid4().hex[:12]}",
                    "name": READ_TOOL, "input": {"path": NOTE_PATH}}
        if answered.startswith(_READ_ID):
            return {"type": "text", "text": f"read back: {result_text(results[-1])}"}
        return None
    texts = user_texts(messages[-1:])
    if texts and TRIGGER in texts[-1]:
        note = texts[-1].split(TRIGGER, 1)[1].strip()
        return {"type": "tool_use", "id": f"{_WRITE_ID}{uuid.uuid4().hex[:12]}",
                "name": WRITE_TOOL, "input": {"path": NOTE_PATH, "content": note}}
    return None


def chat_step(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The scripted Chat Completions answer: a ``tool_call`` or a ``text``; None: echo."""
    if not messages:
        return None
    last = messages[-1]
    if last.get("role") == "tool":
        content = last.get("content")
        said = content if isinstance(content, str) else result_text({"content": content})
        return {"type": "text", "text": f"tool said: {said}"}
    texts = user_texts(messages[-1:])
    if not texts or CALL_TRIGGER not in texts[-1]:
        return None
    name, _, arguments = texts[-1].split(CALL_TRIGGER, 1)[1].strip().partition(" ")
    return {"type": "tool_call", "id": f"call_{uuid.uuid4().hex[:12]}", "name": name,
            "arguments": arguments.strip() or "{}"}


class _ToolHandler(_Handler):
    def _chat_completions(self, body: dict[str, Any]) -> None:
        step = chat_step(body.get("messages") or [])
        if step is None:
            super()._chat_completions(body)
            return
        model = body.get("model", "fake")
        if step["type"] == "text":
            message: dict[str, Any] = {"role": "assistant", "content": step["text"]}
            finish = "stop"
        else:
            call = {"id": step["id"], "type": "function",
                    "function": {"name": step["name"], "arguments": step["arguments"]}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        base = {"id": completion_id(), "model": model, "created": int(time.time())}
        if not body.get("stream"):
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            self._json(200, {**base, "object": "chat.completion", "usage": usage,
                             "choices": [{"index": 0, "message": message,
                                          "finish_reason": finish}]})
            return
        self._start_stream()
        chunk = {**base, "object": "chat.completion.chunk"}
        if step["type"] == "text":
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": step["text"]}]
        else:
            opened = {"index": 0, "id": step["id"], "type": "function",
                      "function": {"name": step["name"], "arguments": ""}}
            filled = {"index": 0, "function": {"arguments": step["arguments"]}}
            deltas = [{"role": "assistant", "content": None, "tool_calls": [opened]},
                      {"tool_calls": [filled]}]
        for delta in deltas:
            self._frame({**chunk, "choices": [{"index": 0, "delta": delta,
                                               "finish_reason": None}]})
        self._frame({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        self._frame("[DONE]")

    def _anthropic_messages(self, body: dict[str, Any]) -> None:
        step = next_step(body.get("messages") or [])
        if step is None:
            super()._anthropic_messages(body)
            return
        stop_reason = "tool_use" if step["type"] == "tool_use" else "end_turn"
        message = {"id": "msg_fake_tool", "type": "message", "role": "assistant",
                   "model": body.get("model", "fake"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            self._json(200, {**message, "content": [step], "stop_reason": stop_reason})
            return
        self._start_stream()
        self._frame({"type": "message_start", "message": message}, "message_start")
        if step["type"] == "tool_use":
            start = {**step, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(step["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": step["text"]}
        self._frame({"type": "content_block_start", "index": 0, "content_block": start},
                    "content_block_start")
        self._frame({"type": "content_block_delta", "index": 0, "delta": delta},
                    "content_block_delta")
        self._frame({"type": "content_block_stop", "index": 0}, "content_block_stop")
        end = {"stop_reason": stop_reason, "stop_sequence": None}
        self._frame({"type": "message_delta", "delta": end, "usage": {"output_tokens": 1}},
                    "message_delta")
        self._frame({"type": "message_stop"}, "message_stop")


@contextmanager
def fake_tool_model() -> Iterator[FakeModel]:
    """A running fake gateway that also plays the tool turn; ``base_url`` ends in ``/v1``."""
    with fake_model(_ToolHandler) as model:
        yield model
