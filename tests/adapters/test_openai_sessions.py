"""The OpenAI Agents SDK adapter: ``store.openai_session(session_id, max_items)``.

The SDK ships no conformance suite for sessions, so the protocol tests run the
same sequence of calls against ``agents.memory.SQLiteSession`` (the reference
implementation) and against ours, and compare every result. The end-to-end
tests drive ``Runner.run`` offline with ``agents.testing.ScriptedModel``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Runner, SQLiteSession
from agents.memory import Session, SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call

import makers_store
from makers_store.adapters.openai.sessions import MARKER, OpenAISession, role_of
from makers_store.blob_ops import ListKeys, ListMany, Op, Scan
from makers_store.emulator.memory.backend import StepwiseMemoryBlobStore
from makers_store.errors import MemoryValidationError
from makers_store.lifecycle.tool_pairing import INTERRUPTED_RESULT
from tests.adapters.openai_worker import FINAL_TEXT, RUN_CONFIG, make_agent

MakeStore = Callable[[], makers_store.ContextStore]
WORKER = Path(__file__).with_name("openai_worker.py")

#: A mix of the item shapes the Runner saves, with text JSON must carry exactly.
ITEMS: list[Any] = [
    {"role": "user", "content": 'Wie spät ist es in Tōkyō? 🕐 "quoted" \\ back\nslash'},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "clock",
        "arguments": '{"city":"Tokyo"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "21:07"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is 21:07.", "annotations": []}],
    },
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": [{"type": "input_text", "text": "thanks"}], "n": 1.5},
]


async def script(session: Session) -> list[Any]:
    """The calls both implementations answer; returns every observable result."""
    seen: list[Any] = [await session.get_items(), await session.pop_item()]
    await session.add_items(ITEMS[:3])
    await session.add_items([])
    await session.add_items(ITEMS[3:])
    for limit in (None, 1, 2, 7, 50, 0, -1):
        seen.append(await session.get_items(limit))
    session.session_settings = SessionSettings(limit=2)
    seen += [await session.get_items(), await session.get_items(3), await session.get_items(0)]
    session.session_settings = SessionSettings()
    seen += [await session.pop_item(), await session.pop_item(), await session.get_items()]
    await session.clear_session()
    seen += [await session.get_items(), await session.get_items(3), await session.pop_item()]
    await session.add_items(ITEMS[:2])
    seen += [await session.get_items(), await session.pop_item(), await session.get_items(5)]
    return seen


async def test_protocol_matches_sqlite_session(make_store: MakeStore) -> None:
    reference = SQLiteSession("conversation-1")
    try:
        expected = await script(reference)
    finally:
        reference.close()
    async with make_store() as store:
        ours = store.openai_session("conversation-1")
        assert isinstance(ours, Session)
        assert await script(ours) == expected
    assert json.dumps(expected[2]) == json.dumps(ITEMS)  # all seven, exactly


async def test_session_settings_are_honoured_like_sqlite_session(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = OpenAISession(store, "c", session_settings=SessionSettings(limit=1))
        await session.add_items(ITEMS)
        assert await session.get_items() == ITEMS[-1:]
        assert await session.get_items(3) == ITEMS[-3:]
        assert store.openai_session("c").session_settings == SessionSettings()


async def test_items_render_as_messages_with_roles_and_marker(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = store.openai_session("c")
        await session.add_items(ITEMS)
        messages = await store.get_messages(conversation_id="c", limit=100)
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "system",
        "user",
    ]
    assert [m.content for m in messages] == ITEMS
    # The platform's keys (agent_sdk_session, item_type, run_id) replaced the
    # adapter's own {"openai_agents_item": true, "type": ...}; one session object
    # on an unbound store stamps one generated run id on everything it saves.
    assert session.run_id.startswith("run_")
    assert [m.metadata for m in messages] == [
        {MARKER: True, "item_type": kind, "run_id": session.run_id}
        for kind in (
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "message",
            "message",
        )
    ]


@pytest.mark.parametrize(
    ("item", "role"),
    [
        ({"role": "system", "content": "s"}, "system"),
        ({"type": "message", "role": "developer", "content": "d"}, "system"),
        ({"type": "computer_call_output", "call_id": "c", "output": {}}, "tool"),
        ({"type": "custom_tool_call_output", "call_id": "c", "output": "o"}, "tool"),
        ({"type": "mcp_approval_response", "approve": True}, "tool"),
        ({"type": "web_search_call", "id": "ws"}, "assistant"),
        ({"type": "item_reference", "id": "x"}, "assistant"),
    ],
)
def test_role_of_item(item: dict[str, Any], role: str) -> None:
    assert role_of(item) == role


async def test_app_messages_are_not_session_items(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = store.openai_session("c")
        await store.append_message(conversation_id="c", role="user", content="ui: hello")
        await session.add_items(ITEMS[:2])
        await store.append_message(
            conversation_id="c", role="assistant", content={"ui": 1}, metadata={"x": 1}
        )
        await session.add_items(ITEMS[2:4])
        await store.append_message(conversation_id="c", role="system", content="ui: last")

        assert await session.get_items() == ITEMS[:4]
        assert await session.get_items(3) == ITEMS[1:4]
        assert await session.pop_item() == ITEMS[3]  # skips the app's newer message
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        left = await store.get_messages(conversation_id="c")
        meta = await store.get_conversation(conversation_id="c")
    assert [m.content for m in left] == ["ui: hello", {"ui": 1}, "ui: last"]
    assert meta is not None and meta.message_count == 3


async def test_clear_session_of_a_pure_session_conversation(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = store.openai_session("c")
        await session.add_items(ITEMS)
        await session.clear_session()
        meta = await store.get_conversation(conversation_id="c")
        assert meta is not None and meta.message_count == 0
        await session.add_items(ITEMS[:1])
        assert await session.get_items() == ITEMS[:1]
        assert len(await store.get_messages(conversation_id="c")) == 1
        await session.clear_session()
        await session.clear_session()  # idempotent, and so is clearing an unknown session
        await store.openai_session("unknown").clear_session()
        assert await store.get_conversation(conversation_id="unknown") is None


async def test_many_items_span_scan_batches(make_store: MakeStore) -> None:
    items: list[Any] = [{"role": "user", "content": f"item {i}"} for i in range(450)]
    async with make_store() as store:
        session = store.openai_session("c")
        await session.add_items(items[:200])
        await store.append_message(conversation_id="c", role="user", content="app")
        await session.add_items(items[200:])
        assert await session.get_items() == items
        assert await session.get_items(420) == items[-420:]
        assert await session.pop_item() == items[-1]


@pytest.mark.on_s3
async def test_concurrent_pops_and_adds_lose_nothing(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = store.openai_session("c")
        await session.add_items(ITEMS)
        popped = await asyncio.gather(
            *(store.openai_session("c").pop_item() for _ in range(3)),
            store.openai_session("c").add_items([{"role": "user", "content": "late"}]),
        )
        left = await session.get_items()
    taken = [item for item in popped if item is not None]
    assert len(taken) == 3
    # Every item is either still stored or was popped by exactly one caller.
    assert sorted(map(json.dumps, [*left, *taken])) == sorted(
        map(json.dumps, [*ITEMS, {"role": "user", "content": "late"}])
    )


async def test_add_items_beyond_one_batch(make_store: MakeStore) -> None:
    items: list[Any] = [{"role": "user", "content": str(i)} for i in range(1_234)]
    async with make_store() as store:
        session = OpenAISession(store, "c", max_items=1_200)
        await session.add_items(items)
        assert await session.get_items() == items[-1_200:]
        bad = [*items, {"role": "user", "content": float("inf")}]
        with pytest.raises(MemoryValidationError, match=r"items\[1234\]"):
            await session.add_items(bad)
        assert len(await session.get_items()) == 1_200  # nothing of the bad call was written
        assert OpenAISession(store, "d", session_settings={"limit": 2}).session_settings == (
            SessionSettings(limit=2)
        )


async def test_max_items_trims_the_oldest_items(make_store: MakeStore) -> None:
    async with make_store() as store:
        session = store.openai_session("c", max_items=3)
        await session.add_items(ITEMS[:2])
        await store.append_message(conversation_id="c", role="user", content="app")
        assert await session.get_items() == ITEMS[:2]
        await session.add_items(ITEMS[2:4])
        assert await session.get_items() == ITEMS[1:4]
        await session.add_items(ITEMS[4:])  # one batch larger than the cap
        assert await session.get_items() == ITEMS[-3:]
        messages = await store.get_messages(conversation_id="c")
        meta = await store.get_conversation(conversation_id="c")
        # An uncapped session over the same conversation sees the same three.
        assert await store.openai_session("c").get_items() == ITEMS[-3:]
    assert [m.content for m in messages] == ["app", *ITEMS[-3:]]
    assert meta is not None and meta.message_count == 4


async def test_add_items_is_one_unit_of_work(make_store: MakeStore) -> None:
    async with make_store() as store:
        await store.bind("other").state.set("k", 1)  # a first write checks the layout
        runs: list[bool] = []
        original = store.blobs.run

        async def counting_run(program: Any, *, write: bool) -> Any:
            runs.append(write)
            return await original(program, write=write)

        store.blobs.run = counting_run  # type: ignore[method-assign]
        await store.openai_session("c").add_items(ITEMS)
        assert runs == [True]


class ForwardListingStore(StepwiseMemoryBlobStore):
    """Object storage's listing cost in memory: keys list ascending only, so a
    reverse listing reads its whole window, as the S3 backend does
    (emulator/s3/requests.py). ``keys_listed`` adds up the keys read."""

    def __init__(self) -> None:
        super().__init__()
        self.keys_listed = 0

    async def execute(self, op: Op) -> object:
        listings = op.listings if isinstance(op, ListMany) else (op,)
        for listing in listings:
            if isinstance(listing, ListKeys | Scan):
                limit = None if listing.reverse else listing.limit
                window = ListKeys(
                    listing.prefix, listing.start_after, listing.end_before, False, limit
                )
                with self.data.lock:
                    self.keys_listed += len(self.data.apply(window))  # type: ignore[arg-type]
        return await super().execute(op)


async def test_get_items_reads_the_newest_like_get_messages_without_backward_listing() -> None:
    """On a backend without backward listing, ``get_items(limit)`` and
    ``pop_item`` read a window at the end of the conversation through the
    reader ``get_messages`` uses, not a listing of the whole conversation."""
    blobs = ForwardListingStore()
    store = makers_store.ContextStore(blobs)
    assert not blobs.capabilities.lists_backward
    items: list[Any] = [{"role": "user", "content": f"item {i}"} for i in range(2_000)]
    session = store.openai_session("c")
    await session.add_items(items)
    blobs.keys_listed = 0
    newest = await store.get_messages(conversation_id="c", limit=20, order="desc")
    by_get_messages, blobs.keys_listed = blobs.keys_listed, 0
    assert [m.content for m in reversed(newest)] == items[-20:]
    assert await session.get_items(20) == items[-20:]
    assert blobs.keys_listed == by_get_messages == 20
    blobs.keys_listed = 0
    assert await session.pop_item() == items[-1]
    assert blobs.keys_listed == 1
    # Past the application's own message: the first window, then one batch more
    # (the pop left a gap in the seqs: each window's keys are listed, then read).
    await store.append_message(conversation_id="c", role="user", content="app")
    blobs.keys_listed = 0
    assert await session.get_items(20) == items[-21:-1]
    assert blobs.keys_listed <= 2 * (21 + 201)


@pytest.mark.parametrize("session_id", ["", "x" * 257, 7, None])
async def test_session_id_is_validated(session_id: Any) -> None:
    async with makers_store.open_store("memory://") as store:
        with pytest.raises(MemoryValidationError, match="session_id"):
            store.openai_session(session_id)


@pytest.mark.parametrize("max_items", [0, -1, True, 2.5, "3"])
async def test_max_items_is_validated(max_items: Any) -> None:
    async with makers_store.open_store("memory://") as store:
        with pytest.raises(MemoryValidationError, match="max_items"):
            store.openai_session("c", max_items=max_items)


async def test_bad_items_and_limits_are_rejected_before_writing() -> None:
    async with makers_store.open_store("memory://") as store:
        session = store.openai_session("c")
        with pytest.raises(MemoryValidationError, match=r"items\[1\]"):
            await session.add_items([ITEMS[0], "not an item"])  # type: ignore[list-item]
        with pytest.raises(MemoryValidationError, match="content"):
            nan: Any = {"role": "user", "content": float("nan")}
            await session.add_items([nan])
        with pytest.raises(MemoryValidationError, match="limit"):
            await session.get_items("2")  # type: ignore[arg-type]
        assert await store.get_conversation(conversation_id="c") is None


# --- end to end, offline ----------------------------------------------------


async def run_turn(url: str, text: str, reply: str, item_id: str) -> ScriptedModel:
    """One request of an app: a fresh store and a fresh session object."""
    model = ScriptedModel([[assistant_message(reply, item_id=item_id)]])
    agent = make_agent(model, "/dev/null")
    async with makers_store.open_store(url) as store:
        session = store.openai_session("chat-1")
        result = await Runner.run(agent, text, session=session, run_config=RUN_CONFIG)
    assert result.final_output == reply
    model.assert_complete()
    return model


async def test_the_model_remembers_across_fresh_sessions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    await run_turn(url, "My name is Ada.", "Hello Ada!", "msg_a")
    second = await run_turn(url, "What is my name?", "Ada.", "msg_b")
    async with makers_store.open_store(url) as store:
        first_turn: list[Any] = (await store.openai_session("chat-1").get_items())[:2]
        messages = await store.get_messages(conversation_id="chat-1")
    assert first_turn[0] == {"role": "user", "content": "My name is Ada."}
    assert first_turn[1]["id"] == "msg_a"
    call = second.first_call
    assert call is not None
    assert call.input == [*first_turn, {"role": "user", "content": "What is my name?"}]
    # metadata key renamed to the platform's "item_type" (was "type")
    assert [(m.role, m.metadata and m.metadata["item_type"]) for m in messages] == [
        ("user", "message"),
        ("assistant", "message"),
        ("user", "message"),
        ("assistant", "message"),
    ]


@pytest.mark.slow
async def test_human_in_the_loop_resumes_in_a_fresh_process(tmp_path: Path) -> None:
    url, log = f"sqlite:///{tmp_path}/store.db", tmp_path / "sent.log"
    model = ScriptedModel([[function_call("send_email", {"to": "bob"}, call_id="call_1")]])
    agent = make_agent(model, str(log))
    async with makers_store.open_store(url) as store:
        session = store.openai_session("chat-2")
        result = await Runner.run(agent, "Email bob.", session=session, run_config=RUN_CONFIG)
        assert [item.tool_name for item in result.interruptions] == ["send_email"]
        await store.bind("chat-2").state.set("run_state", result.to_state().to_string())
        before = await session.get_items()
    assert not log.exists()  # nothing ran before the approval

    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        url,
        "chat-2",
        str(log),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(worker.communicate(), timeout=120)
    assert worker.returncode == 0, stderr.decode()
    report = json.loads(stdout)
    assert report["approved"] == ["send_email"]
    assert report["final_output"] == FINAL_TEXT
    assert log.read_text() == "bob\n"  # the tool ran exactly once

    async with makers_store.open_store(url) as store:
        items = await store.openai_session("chat-2").get_items()
        roles = [m.role for m in await store.get_messages(conversation_id="chat-2")]
        assert await store.bind("chat-2").state.get("run_state") is None
    # read while the approval was pending, the call reads as interrupted (the
    # read-path guard, issue 33); resumed from its RunState, the run saved the real output
    assert before[:2] == items[:2] and before[2]["output"] == INTERRUPTED_RESULT
    assert [item.get("type", "message") for item in items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    encoded = [json.dumps(item, sort_keys=True) for item in items]
    assert len(set(encoded)) == len(encoded)  # no item was saved twice
    assert items[2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "sent to bob",
    }
    assert report["model_input"] == [items[:3]]  # the resumed model saw the whole history
    assert roles == ["user", "assistant", "tool", "assistant"]
