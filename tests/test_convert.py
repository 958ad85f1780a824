"""to_openai_input / to_anthropic_messages produce what the real SDKs accept.

Each output is validated against the SDK's own request types (pydantic
validation of the TypedDicts that anthropic and openai publish), plus the
Messages API rules those types cannot express.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from pydantic import TypeAdapter

from makers_store import Message, to_anthropic_messages, to_openai_input

anthropic_types = pytest.importorskip("anthropic.types")
openai_types = pytest.importorskip("openai.types.chat")

ANTHROPIC = TypeAdapter(list[anthropic_types.MessageParam])
# MessageParam types content as Iterable, which pydantic checks lazily: check blocks one by one.
ANTHROPIC_BLOCK = TypeAdapter(anthropic_types.ContentBlockParam)
OPENAI = TypeAdapter(list[openai_types.ChatCompletionMessageParam])


def msg(role: str, content: Any, **metadata: Any) -> Message:
    return Message(f"msg_{id(content)}", role, content, 1, metadata or None)


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city": "SZ"}'},
}
HISTORY = [
    msg("system", "be brief"),
    msg("user", "hi"),
    msg("assistant", "hello"),
    msg("user", ["look", "at this"]),
    msg("user", {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}),
    msg("assistant", "", tool_calls=[CALL]),
    msg("tool", "sunny", tool_call_id="call_1"),
    msg("user", "thanks"),
    msg("assistant", [{"type": "text", "text": "bye"}]),
]


def check_anthropic_rules(turns: list[dict[str, Any]]) -> None:
    ANTHROPIC.validate_python(turns)
    roles = [t["role"] for t in turns]
    assert all(r in ("user", "assistant") for r in roles)
    assert all(a != b for a, b in pairwise(roles)), roles
    for i, turn in enumerate(turns):
        blocks = turn["content"] if isinstance(turn["content"], list) else []
        for block in blocks:
            ANTHROPIC_BLOCK.validate_python(block, strict=True)
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            assert blocks[: len(results)] == results, "tool results open the turn"
            previous = turns[i - 1]["content"]
            uses = {
                b["id"] for b in previous if isinstance(b, dict) and b.get("type") == "tool_use"
            }
            assert {r["tool_use_id"] for r in results} <= uses
        assert turn["content"], "no empty turns"


def test_anthropic_shape() -> None:
    turns = to_anthropic_messages(HISTORY)
    check_anthropic_rules(turns)
    assert turns[0] == {"role": "user", "content": "hi"}
    assert turns[3]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "SZ"}}
    ]
    assert turns[4]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": [{"type": "text", "text": "sunny"}],
    }
    assert turns[4]["content"][1] == {"type": "text", "text": "thanks"}
    assert turns[2]["content"][-1]["type"] == "image"


def test_anthropic_accepts_dicts_and_tool_without_ids() -> None:
    turns = to_anthropic_messages(
        [m.to_dict() for m in [msg("user", "a"), msg("tool", "raw output"), msg("assistant", "b")]]
    )
    check_anthropic_rules(turns)
    assert turns[0]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "raw output"},
    ]


def test_openai_shape() -> None:
    items = to_openai_input(HISTORY)
    OPENAI.validate_python(items)
    assert [i["role"] for i in items] == [m.role for m in HISTORY]
    assert [i["content"] for i in items] == [m.content for m in HISTORY]
    assert items[5]["tool_calls"] == [CALL] and items[6]["tool_call_id"] == "call_1"


def test_store_methods_are_the_same_functions() -> None:
    import makers_store

    store = makers_store.open_sync_store("memory://")
    try:
        assert store.to_openai_input(HISTORY) == to_openai_input(HISTORY)
        assert store.to_anthropic_messages(HISTORY) == to_anthropic_messages(HISTORY)
    finally:
        store.close()
