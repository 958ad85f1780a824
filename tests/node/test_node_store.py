"""The Node ``context.store`` against the Python store, through the store RPC.

Every generic method from Node (the platform's call styles), read back from
Python and the other way round; bad input gives Node the same error name and
message as Python; the synchronous conversions agree. The generic round trip
runs on every backend of tests/backends.py (S3 too); the rest on memory,
SQLite and PostgreSQL, since the RPC does not depend on the backend.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store import ContextStore
from makers_store.errors import StoreError
from tests.backends import BACKENDS, backend_url

from .harness import PROJECT, run_node, serving, snake_keys


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ContextStore]:
    async with makers_store.open_store(backend_url(request.param, tmp_path)) as opened:
        yield opened


async def test_every_generic_method_from_node(any_store: ContextStore) -> None:
    store = any_store
    await store.append_message("py-1", "user", {"text": "from python"}, metadata={"n": 1})
    await store.bind("py-1").state.set("from-python", [1, "two"])
    async with serving(store) as socket:
        out = await run_node(PROJECT / "generic.mjs", socket)

    python_messages = await store.get_messages("node-1", limit=50)
    assert snake_keys(out["messages"]) == [m.to_dict() for m in python_messages]
    assert [m["message_id"] for m in snake_keys(out["messages"])] == out["ids"][:2]
    assert out["updated"]["content"] == "corrected" and out["updated"]["metadata"] == {
        "edited": True
    }
    assert "updatedAt" in out["updated"] and "updatedAt" not in out["pageAfter"][-1]
    assert out["updatedBound"]["metadata"] == {"source": "cli"}  # bound conversation
    assert [m["messageId"] for m in out["pageDesc"]] == [out["ids"][2], out["ids"][1]]
    assert [m["messageId"] for m in out["pageAfter"]] == out["ids"][1:]
    assert [m["messageId"] for m in out["pageBefore"]] == out["ids"][:2]
    assert out["unknown"] == [] and out["missingMeta"] is None
    meta = await store.get_conversation("node-1")
    assert meta is not None
    assert snake_keys(out["meta"]) == snake_keys(out["metaPositional"])
    assert snake_keys(out["mergedPositional"]) == meta.to_dict()
    assert meta.metadata == {"title": "Chat", "summary": "s"}
    assert meta.message_count == 2
    page1, page2 = out["userPages"]
    assert [c["conversationId"] for c in page1["items"] + page2["items"]] == ["node-2", "node-1"]
    assert "previousCursor" not in page1 and "nextCursor" not in page2
    listed = await store.list_conversations(limit=100, order="asc")
    assert [snake_keys(item) for item in out["all"]["items"]] == [
        item.to_dict() for item in listed.items
    ]
    assert await store.bind("node-1").state.get("session") == out["state"]
    assert out["stateMissing"] is None and out["stateDeleted"] is None
    cleared = await store.get_conversation("node-2")
    assert cleared is not None and cleared.message_count == 0
    assert snake_keys(out["cleared"]) == cleared.to_dict()
    assert out["deleted"] is None and await store.get_conversation("node-3") is None
    assert out["binding"] == out["bindingAgain"] == await store.claude_session_binding("node-1")
    assert snake_keys(out["python"]) == [m.to_dict() for m in await store.get_messages("py-1")]
    assert out["pythonState"] == [1, "two"]
    assert out["openai"] == store.to_openai_input(python_messages)
    assert len(out["batch"]) == 2


def _python_cases(store: ContextStore) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The calls errors.mjs makes, made from Python."""
    bound = store.bind("c", run_id="run_e")
    cyclic: dict[str, Any] = {"a": 1}
    cyclic["self"] = cyclic
    deep: Any = "end"
    for _ in range(150):
        deep = [deep]

    def function() -> None: ...

    return {
        "limit0": lambda: bound.get_messages("c", limit=0),
        "limit101": lambda: bound.get_messages("c", limit=101),
        "limitText": lambda: bound.get_messages("c", limit="5"),  # type: ignore[arg-type]
        "order": lambda: bound.get_messages("c", order="up"),
        "bothCursors": lambda: bound.get_messages(
            "c", after="msg_0000000001_aaaa", before="msg_0000000002_aaaa"
        ),
        "longId": lambda: bound.get_messages("x" * 257),
        "emptyId": lambda: bound.append_message("", "user", "x"),
        "role": lambda: bound.append_message("c", "robot", "x"),
        "noContent": lambda: bound.append_message("c", "user"),
        "contentTooBig": lambda: bound.append_message("c", "user", "x" * (50 * 1024 * 1024 + 1)),
        "contentInfinity": lambda: bound.append_message("c", "user", {"x": math.inf}),
        "metadataFunction": lambda: bound.append_message(
            "c", "user", "x", metadata={"f": function}
        ),
        "metadataList": lambda: bound.append_message("c", "user", "x", metadata=[1]),  # type: ignore[arg-type]
        "loneSurrogate": lambda: bound.append_message("c", "user", "a\ud800b"),
        "unknownMessage": lambda: bound.update_message(
            "c", "msg_0000000009_ffffffffff", content="x"
        ),
        "badMessageId": lambda: bound.delete_message("c", "nope"),
        "unknownConversation": lambda: bound.update_conversation("nope", {"a": 1}),
        "stateNaN": lambda: bound.state.set("k", math.nan),
        "stateCycle": lambda: bound.state.set("k", cyclic),
        "stateDeep": lambda: bound.state.set("k", deep),
        "stateEmptyKey": lambda: bound.state.set("", 1),
        "stateLongKey": lambda: bound.state.get("k" * 257),
        "stateUnbound": lambda: store.state.get("k"),
        "sessionMaxItems": lambda: bound.openai_session("c", max_items=0).get_items(),
        # getMessages ignores userId, but checks it as append_message does
        "userIdType": lambda: bound.append_message("c", "user", "x", user_id=5),  # type: ignore[arg-type]
        "claudeKey": lambda: bound.claude_session_store().load({"project_key": "p"}),  # type: ignore[typeddict-item]
    }


#: errors only JavaScript values can cause, with the message Python gives
#: for a value of a type JSON cannot hold, and the RPC's own argument checks
_NODE_ONLY = {
    "stateBigInt": "value must be strict JSON: a value of type bigint is not JSON serializable",
    "stateSymbol": "value must be strict JSON: a value of type symbol is not JSON serializable",
    "stateNoValue": "value is required",
}


async def _python_error(call: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    try:
        await call()
    except StoreError as exc:
        return {"name": type(exc).__name__, "message": str(exc), "isError": True}
    raise AssertionError("the Python call did not fail")


async def test_bad_input_gives_node_the_python_error(store: ContextStore) -> None:
    async with serving(store) as socket:
        node = await run_node(PROJECT / "errors.mjs", socket)
    python = {name: await _python_error(call) for name, call in _python_cases(store).items()}
    for name, message in _NODE_ONLY.items():
        python[name] = {"name": "MemoryValidationError", "message": message, "isError": True}
    python["noFramework"] = {
        "name": "MissingExtraError",
        "message": "@langchain/langgraph-checkpoint is not installed in /; install it with: "
        "npm install @langchain/langgraph-checkpoint",
        "isError": True,
    }
    assert node == python
    assert await store.get_conversation("c") is None  # nothing was written


async def test_conversions_match_python(store: ContextStore) -> None:
    cid = "convert"
    await store.append_message(cid, "system", "be brief")
    await store.append_message(cid, "user", ["look", {"type": "image", "url": "u"}, 3, ""])
    calls = [{"id": "call_1", "function": {"name": "add", "arguments": '{"a": 1}'}}]
    await store.append_message(cid, "assistant", "", metadata={"tool_calls": calls})
    await store.append_message(
        cid, "tool", {"sum": 2, "é": True}, metadata={"tool_call_id": "call_1"}
    )
    await store.append_message(cid, "tool", "plain", metadata={"is_error": True})
    await store.append_message(cid, "user", "thanks", metadata={"name": "ana"})
    await store.append_message(cid, "assistant", [])
    # orphans, fixed alike by both (issue 33): calls c2 and c3, only c3 answered in
    # its turn, c2's result late; a result of no call; a tool_use at the tail
    calls = [{"id": f"c{n}", "function": {"name": "add", "arguments": "{}"}} for n in (2, 3)]
    await store.append_message(cid, "assistant", "", metadata={"tool_calls": calls})
    await store.append_message(cid, "tool", "3", metadata={"tool_call_id": "c3"})
    await store.append_message(cid, "user", "go on")
    await store.append_message(cid, "tool", "late", metadata={"tool_call_id": "c2"})
    await store.append_message(cid, "tool", "?", metadata={"tool_call_id": "ghost"})
    use = {"type": "tool_use", "id": "tu9", "name": "add", "input": {}}
    await store.append_message(cid, "assistant", [{"type": "text", "text": "x"}, use])
    messages = await store.get_messages(cid, limit=100)
    payload = json.dumps([m.to_dict() for m in messages]).encode()
    async with serving(store) as socket:
        node = await run_node(PROJECT / "convert.mjs", socket, stdin=payload)
    python_openai = store.to_openai_input(messages)
    assert [i.get("tool_call_id") for i in python_openai if i["role"] == "tool"] == [
        "call_1",
        None,
        "c3",
        "c2",
        "tu9",
    ]  # c2 and tu9 answered as interrupted; the late c2 and ghost left out
    assert node["openai"] == python_openai
    assert node["anthropic"] == store.to_anthropic_messages(messages)


async def test_pipelined_calls_on_one_connection(store: ContextStore) -> None:
    async with serving(store) as socket:
        out = await run_node(PROJECT / "pipelined.mjs", socket, "pipe", "40")
    messages = await store.get_messages("pipe", limit=100)
    assert sorted(out["ids"]) == sorted(m.message_id for m in messages)
    assert len(set(out["ids"])) == 40 and all(0 <= n <= 40 for n in out["counts"])
    assert out["mixed"] == ["MemoryValidationError", 0]  # one failure fails only its call
    meta = await store.get_conversation("pipe")
    assert meta is not None and meta.message_count == 40
    assert await store.bind("pipe").state.get("k39") == 39


async def test_answers_larger_than_a_socket_read(store: ContextStore) -> None:
    """The client reads 256 KB at a time into one reused buffer: lines that span
    reads (split inside a multi-byte character, some) come back whole, in
    calls in flight together, and the next small answer after them too."""
    async with serving(store) as socket:
        out = await run_node(PROJECT / "large_answer.mjs", socket, "large")
    assert out["equal"] == [True, True, True]
    assert out["bytes"] > 3 * 256 * 1024 and out["small"] is None
    messages = await store.get_messages("large", limit=10)
    assert [m.content.split(":")[0] for m in messages] == ["1", "2", "3"]


async def test_option_objects_read_as_javascript_reads_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A key a method does not take is ignored with one warning per method and
    key (on memory only: the rule is the RPC's, and its warnings are once per
    process); ``userId`` is taken where templates pass it and means nothing."""
    async with makers_store.open_store("memory://") as store:
        with caplog.at_level("WARNING", logger="makers_store.serve"):
            async with serving(store) as socket:
                out = await run_node(PROJECT / "options.mjs", socket)
        assert out["page"] == ["one", "two"] and len(out["ids"]) == 2
        assert len(out["batch"]) == 1 and out["cleared"] == 0
        assert out["owned"] == ["opts"]  # userId on appendMessage still owns the conversation
        assert out["deleted"] is None and await store.get_conversation("opts") is None
    warnings = [r.getMessage() for r in caplog.records if "not an option it" in r.getMessage()]
    assert sorted(warnings) == sorted(
        [
            "context.store.appendMessage: 'traceLabel' is not an option it takes (conversationId, "
            "role, content, metadata, userId, messageId); ignored, as JavaScript ignores a "
            "property nobody reads",
            "context.store.getMessages: 'includeDrafts' is not an option it takes (conversationId, "
            "limit, order, after, before, userId); ignored, as JavaScript ignores a property "
            "nobody reads",
            "context.store.appendMessages: 'messages[].draft' is not an option it takes (role, "
            "content, metadata, messageId); ignored, as JavaScript ignores a property nobody reads",
        ]
    )


async def test_message_ids_chosen_by_node_reach_the_python_store(store: ContextStore) -> None:
    async with serving(store) as socket:
        out = await run_node(PROJECT / "options.mjs", socket, "messageId")
    assert out["single"] == "client-q-1"
    assert out["batch"][0] == "client-a-1" and out["batch"][1].startswith("msg_")
    assert out["listed"] == ["client-q-1", *out["batch"]]
    found = await store.get_message("opts", "client-a-1")
    assert found is not None and found.content == "a"


async def test_quota_error_from_node() -> None:
    async with makers_store.open_store("memory://") as store:
        batch = [{"role": "user", "content": "m"}] * 1000
        for _ in range(10):
            await store.append_messages("full", batch)
        async with serving(store) as socket:
            node = await run_node(PROJECT / "quota.mjs", socket, "full")
        python = await _python_error(lambda: store.append_message("full", "user", "one more"))
    assert node == {"name": "MemoryQuotaExceededError", "message": python["message"]}


def test_typescript_types_compile() -> None:
    """store.d.ts types the platform's calling styles under ``tsc --strict``,
    and the adapters' types are accepted where LangGraph.js and OpenAI Agents
    JS take a saver, a store and a session (types_check.ts)."""
    tsc = PROJECT / "node_modules" / "typescript" / "bin" / "tsc"
    done = subprocess.run(
        ["node", str(tsc), "-p", "tsconfig.json"], cwd=PROJECT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
