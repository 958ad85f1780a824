"""Histories that reach a model are valid, always (issue 33, item 5): the
converters and the context window never hand a model an orphan tool call or
an orphan tool result, fix it in their output only, log each fix once, and
raise InvalidHistoryError with ``strict=True``.

Every output is checked against the SDKs' own request types (pydantic
validation of the TypedDicts ``anthropic`` and ``openai`` publish, the whole
``messages.create`` / ``chat.completions.create`` parameters) and against the
pairing rules those types cannot express, checked here independently of the
guard's own code.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from pydantic import TypeAdapter

import makers_store
from makers_store import (
    ContextWindow,
    InvalidHistoryError,
    MemoryValidationError,
    Message,
    to_anthropic_messages,
    to_anthropic_request,
    to_openai_input,
)
from makers_store.lifecycle import history_guard
from makers_store.lifecycle.tool_pairing import INTERRUPTED_RESULT

anthropic_params = pytest.importorskip("anthropic.types.message_create_params")
anthropic_types = pytest.importorskip("anthropic.types")
openai_params = pytest.importorskip("openai.types.chat.completion_create_params")

ANTHROPIC_REQUEST = TypeAdapter(anthropic_params.MessageCreateParamsNonStreaming)
# MessageParam types content as Iterable, which pydantic checks lazily: check blocks one by one.
ANTHROPIC_BLOCK = TypeAdapter(anthropic_types.ContentBlockParam)
OPENAI_REQUEST = TypeAdapter(openai_params.CompletionCreateParamsNonStreaming)


def call(call_id: str, name: str = "weather") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def asks(*call_ids: str) -> Message:
    """An assistant message making Chat Completions calls."""
    return Message(
        f"a-{'-'.join(call_ids)}", "assistant", "", 1, {"tool_calls": [call(c) for c in call_ids]}
    )


def answer(call_id: str, text: str = "sunny") -> Message:
    return Message(f"r-{call_id}", "tool", text, 2, {"tool_call_id": call_id})


def says(role: str, text: str) -> Message:
    return Message(f"m-{role}-{text}", role, text, 3, None)


# Each: the history, and the call ids the model must see answered as interrupted.
CASES: dict[str, tuple[list[Message], list[str]]] = {
    "orphan call at the tail": ([says("user", "hi"), asks("c1")], ["c1"]),
    "orphan call in the middle": (
        [says("user", "hi"), asks("c1"), says("user", "still there?"), says("assistant", "yes")],
        ["c1"],
    ),
    "several orphans in one message": (
        [says("user", "hi"), asks("c1", "c2", "c3"), says("user", "and?")],
        ["c1", "c2", "c3"],
    ),
    "parallel calls, one answered": (
        [says("user", "hi"), asks("c1", "c2"), answer("c2"), says("user", "and?")],
        ["c1"],
    ),
    "orphan result": (
        [says("user", "hi"), answer("ghost"), says("assistant", "hello")],
        [],
    ),
    "result after its turn closed": (
        [says("user", "hi"), asks("c1"), says("user", "hurry"), answer("c1")],
        ["c1"],
    ),
    "anthropic blocks, orphan use and orphan result": (
        [
            says("user", "hi"),
            Message("a1", "assistant", [{"type": "tool_use", "id": "tu1", "name": "w",
                                         "input": {}}], 1),
            Message("u1", "user", [{"type": "tool_result", "tool_use_id": "nope"},
                                   {"type": "text", "text": "go on"}], 2),
        ],
        ["tu1"],
    ),
}  # fmt: skip


def check_openai(items: list[dict[str, Any]]) -> None:
    """The Chat Completions request validates, and every assistant call is
    answered by the tool messages right after it, which answer nothing else."""
    OPENAI_REQUEST.validate_python({"model": "m", "messages": items})
    index = 0
    while index < len(items):
        item = items[index]
        assert item["role"] != "tool", f"a tool message answers no call: {item}"
        index += 1
        wanted = {c["id"] for c in item.get("tool_calls") or []}
        answered = set()
        while index < len(items) and items[index]["role"] == "tool":
            answered.add(items[index]["tool_call_id"])
            index += 1
        assert answered == wanted, (wanted, answered)


def check_anthropic(request: dict[str, Any]) -> None:
    """``messages.create`` parameters validate, roles alternate, and each
    turn's tool_use blocks are answered in the very next user turn, whose
    tool_result blocks answer those and nothing else."""
    ANTHROPIC_REQUEST.validate_python({"model": "m", "max_tokens": 1, **request})
    turns = request["messages"]
    assert all(a["role"] != b["role"] for a, b in pairwise(turns))
    uses: set[str] = set()
    for turn in turns:
        blocks = turn["content"] if isinstance(turn["content"], list) else []
        for block in blocks:
            ANTHROPIC_BLOCK.validate_python(block, strict=True)
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        assert results == uses, (uses, results)
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    assert not uses, "the last turn's calls are unanswered"


def interrupted_in(items: list[dict[str, Any]]) -> list[str]:
    return [
        i["tool_call_id"]
        for i in items
        if i["role"] == "tool" and i["content"] == INTERRUPTED_RESULT
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_every_converter_hands_out_valid_input(case: str) -> None:
    history, interrupted = CASES[case]
    before = copy.deepcopy(history)
    items = to_openai_input(history)
    turns = to_anthropic_messages(history)
    request = to_anthropic_request(history)
    if "anthropic" not in case:  # Anthropic blocks are not Chat Completions content
        check_openai(items)
    check_anthropic({"messages": turns})
    check_anthropic(dict(request))
    assert request["messages"] == turns
    assert interrupted_in(items) == interrupted
    assert history == before, "the caller's messages are not touched"
    # dicts, as get_messages(...).to_dict() gives them, convert the same
    assert to_openai_input([m.to_dict() for m in history]) == items


def test_the_interrupted_result_comes_right_after_its_turn() -> None:
    history, _ = CASES["parallel calls, one answered"]
    items = to_openai_input(history)
    assert [(i["role"], i.get("tool_call_id")) for i in items] == [
        ("user", None), ("assistant", None), ("tool", "c2"), ("tool", "c1"), ("user", None),
    ]  # fmt: skip
    assert items[3] == {"role": "tool", "content": INTERRUPTED_RESULT, "tool_call_id": "c1"}
    late, _ = CASES["result after its turn closed"]
    items = to_openai_input(late)
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "user"]
    assert items[2]["content"] == INTERRUPTED_RESULT  # and the late "sunny" is left out


def test_an_orphan_result_is_left_out_and_a_valid_history_passes_unchanged() -> None:
    history, _ = CASES["orphan result"]
    assert [i["role"] for i in to_openai_input(history)] == ["user", "assistant"]
    valid = [says("user", "hi"), asks("c1"), answer("c1"), says("assistant", "sunny it is")]
    assert to_openai_input(valid) == history_guard_free_openai(valid)


def history_guard_free_openai(messages: list[Message]) -> list[dict[str, Any]]:
    from makers_store.lifecycle.convert import openai_items

    return openai_items(messages)


@pytest.mark.parametrize("convert", [to_openai_input, to_anthropic_messages, to_anthropic_request])
@pytest.mark.parametrize("case", list(CASES))
def test_strict_raises_naming_the_doctors_rule(case: str, convert: Callable[..., Any]) -> None:
    history, _ = CASES[case]
    with pytest.raises(InvalidHistoryError, match=r"orphan-tool-|misplaced-tool-result") as info:
        convert(history, strict=True)
    assert isinstance(info.value, MemoryValidationError)
    assert info.value.findings and "doctor --fix" in str(info.value)


def test_strict_must_be_a_bool() -> None:
    with pytest.raises(MemoryValidationError, match="strict must be a bool"):
        to_openai_input([], strict="yes")  # type: ignore[arg-type]


def test_each_fix_is_logged_once_per_conversation(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, _ = CASES["parallel calls, one answered"]
    history = [*history, answer("ghost")]
    cid = f"chat-{uuid.uuid4().hex}"  # the memory is the process's: a new conversation
    window = ContextWindow(cid, None, history)
    with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
        for _ in range(3):
            to_openai_input(window)
            to_anthropic_request(window)
    said = [r.getMessage() for r in caplog.records if r.name == "makers_store.history_guard"]
    assert len(said) == 2, said  # the orphan call c1 and the orphan result, once each
    assert any("orphan-tool-call" in s and "'c1'" in s and cid in s for s in said)
    assert any("orphan-tool-result" in s and "'ghost'" in s for s in said)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
        to_openai_input(ContextWindow(cid + "-other", None, history))
    assert len(caplog.records) == 2  # another conversation logs its own
    # bounded memory: the oldest keys are forgotten, and logged again if met again
    monkeypatch.setattr(history_guard, "LOGGED_KEYS_MAX", 3)
    for n in range(5):
        to_openai_input(ContextWindow(f"{cid}-{n}", None, [asks("c9")]))
    assert len(history_guard._logged) == 3
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
        to_openai_input(ContextWindow(f"{cid}-0", None, [asks("c9")]))
    assert len(caplog.records) == 1


# --- the context window, on every backend --------------------------------------


async def test_context_window_is_guarded_and_the_store_unchanged(
    store: makers_store.ContextStore,
) -> None:
    cid = "chat"
    await store.append_message(cid, "user", "weather?")
    await store.append_message(cid, "assistant", "", {"tool_calls": [call("c1"), call("c2")]})
    await store.append_message(cid, "tool", "sunny", {"tool_call_id": "c2"})
    await store.append_message(cid, "user", "hello?")  # the run was cut before c1 returned
    await store.append_message(cid, "assistant", "", {"tool_calls": [call("c3")]})  # and c3
    stored = [m.to_dict() for m in await store.get_messages(cid)]
    window = await store.context_window(cid, last=20)
    roles = [(m.role, (m.metadata or {}).get("tool_call_id")) for m in window.messages]
    assert roles == [
        ("user", None), ("assistant", None), ("tool", "c2"), ("tool", "c1"), ("user", None),
        ("assistant", None), ("tool", "c3"),
    ]  # fmt: skip
    assert window.messages[3].content == INTERRUPTED_RESULT
    assert window.messages[3].message_id == "interrupted-c1"  # the doctor's id for it
    check_openai(to_openai_input(window))
    check_anthropic(dict(to_anthropic_request(window)))
    with pytest.raises(InvalidHistoryError, match="orphan-tool-call") as info:
        await store.context_window(cid, last=20, strict=True)
    assert [f.call_id for f in info.value.findings] == ["c3", "c1"]
    assert [m.to_dict() for m in await store.get_messages(cid)] == stored
    # the doctor repairs the store; then the window needs no fix
    repairs = [r async for r in store.admin.repair_history(cid)]
    assert [r.repaired for r in repairs] == [True, True]
    repaired = await store.context_window(cid, last=20, strict=True)
    check_openai(to_openai_input(repaired, strict=True))


async def test_a_window_cut_through_a_turn_is_not_an_orphan(
    store: makers_store.ContextStore, caplog: pytest.LogCaptureFixture
) -> None:
    cid = f"cut-{uuid.uuid4().hex[:8]}"
    await store.append_message(cid, "user", "weather?")
    await store.append_message(cid, "assistant", "", {"tool_calls": [call("c1")]})
    await store.append_message(cid, "tool", "sunny", {"tool_call_id": "c1"})
    await store.append_message(cid, "assistant", "sunny it is")
    with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
        window = await store.context_window(cid, last=2, strict=True)
    assert [m.role for m in window.messages] == ["assistant"] and window.truncated
    assert not caplog.records
