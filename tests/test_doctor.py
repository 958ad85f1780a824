"""The history doctor (issue 24, item 6): ``store.admin.check_history`` and
``store.admin.repair_history`` on every backend. One test per rule, each
history built through the public API and the framework adapters; every
repair makes its finding go away, a second run finds and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from langgraph.graph import END, START, MessagesState, StateGraph

import makers_store
from makers_store import ContextStore, MemoryCorruptError, MemoryNotFoundError
from makers_store._core import keys
from makers_store._core.codec import encode_message
from makers_store._core.programs import load_meta, save_meta
from makers_store.blob_ops import put
from makers_store.clock import FixedClock
from makers_store.lifecycle import history_rules as rules
from makers_store.lifecycle.convert import to_anthropic_messages, to_openai_input
from makers_store.lifecycle.history_rules import HistoryFinding
from makers_store.maintenance import doctor
from makers_store.maintenance.doctor import HistoryRepair
from makers_store.maintenance.search import BILLED_PAGE, LOCAL_PAGE

CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}


def call(call_id: str, name: str = "weather") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


async def findings(store: ContextStore, cid: str | None = None) -> list[HistoryFinding]:
    return [f async for f in store.admin.check_history(cid)]


async def repairs(store: ContextStore, cid: str | None = None) -> list[HistoryRepair]:
    return [r async for r in store.admin.repair_history(cid)]


def rules_of(found: list[HistoryFinding]) -> list[tuple[str, str]]:
    return [(f.conversation_id, f.rule) for f in found]


async def history(store: ContextStore, cid: str) -> list[tuple[str, Any, dict[str, Any] | None]]:
    return [(m.role, m.content, m.metadata) async for m in store.iter_messages(cid)]


async def assert_repaired_for_good(store: ContextStore, cid: str | None = None) -> None:
    """Nothing left to find, a second repair changes nothing."""
    assert await findings(store, cid) == []
    before = [await history(store, c.conversation_id) async for c in store.iter_conversations()]
    assert await repairs(store, cid) == []
    after = [await history(store, c.conversation_id) async for c in store.iter_conversations()]
    assert after == before


def assert_valid_for_both_apis(messages: list[Any]) -> None:
    """What the converters make of the history pairs every call with its
    result where each API wants it."""
    openai = to_openai_input(messages)
    for index, item in enumerate(openai):
        for tool_call in item.get("tool_calls") or []:
            answered = set()
            for later in openai[index + 1 :]:
                if later["role"] != "tool":
                    break
                answered.add(later["tool_call_id"])
            assert tool_call["id"] in answered, (tool_call, openai)
    anthropic = to_anthropic_messages(messages)
    for index, turn in enumerate(anthropic):
        uses = [b["id"] for b in turn["content"] if isinstance(turn["content"], list)
                and b.get("type") == "tool_use"]  # fmt: skip
        if uses:
            following = anthropic[index + 1]["content"]
            results = {b["tool_use_id"] for b in following if b.get("type") == "tool_result"}
            assert set(uses) <= results, anthropic


# --- a clean history -------------------------------------------------------------


async def test_a_long_realistic_history_is_clean(store: ContextStore) -> None:
    """Three hundred messages of a tool-using agent, in both tool shapes, with
    system text, multimodal parts and an OpenAI Agents SDK session beside it."""
    cid = "support-42"
    await store.append_message(cid, "system", "You are a support agent.")
    for turn in range(80):
        await store.append_message(cid, "user", f"question {turn}", user_id="u1")
        if turn % 4 == 0:  # Chat Completions shape, two calls answered in either order
            await store.append_message(
                cid, "assistant", "", {"tool_calls": [call(f"a{turn}"), call(f"b{turn}", "time")]}
            )
            await store.append_message(cid, "tool", f"time {turn}", {"tool_call_id": f"b{turn}"})
            await store.append_message(cid, "tool", f"sunny {turn}", {"tool_call_id": f"a{turn}"})
        elif turn % 4 == 1:  # Anthropic shape: tool_use in content, tool_result from the user
            await store.append_message(
                cid,
                "assistant",
                [
                    {"type": "text", "text": f"let me look {turn}"},
                    {"type": "tool_use", "id": f"tu{turn}", "name": "search", "input": {"q": "x"}},
                ],
            )
            await store.append_message(
                cid,
                "user",
                [{"type": "tool_result", "tool_use_id": f"tu{turn}", "content": f"found {turn}"}],
            )
        elif turn % 4 == 2:
            await store.append_message(
                cid,
                "user",
                [{"type": "text", "text": f"see picture {turn}"}],
                {"source": "web"},
            )
        await store.append_message(cid, "assistant", f"answer {turn}", {"run_id": f"run-{turn}"})
    assert (await store.get_conversation(cid)).message_count > 250

    @function_tool
    def clock() -> str:
        """The time."""
        return "21:07"

    model = ScriptedModel(
        [
            [function_call("clock", {}, call_id="c_1")],
            [assistant_message("It is 21:07.", item_id="m_1")],
            [assistant_message("You are welcome.", item_id="m_2")],
        ]
    )
    agent = Agent(name="a", model=model, tools=[clock])
    session = store.openai_session("agents-sdk")
    await Runner.run(agent, "What time is it?", session=session)
    await Runner.run(agent, "Thanks!", session=session)

    assert await findings(store) == []
    assert await findings(store, cid) == []
    assert await repairs(store) == []
    assert_valid_for_both_apis([m async for m in store.iter_messages(cid)])


async def test_an_empty_store_is_clean(store: ContextStore) -> None:
    assert await findings(store) == []


async def test_a_conversation_that_does_not_exist_is_not_found(store: ContextStore) -> None:
    with pytest.raises(MemoryNotFoundError):
        await findings(store, "nobody")
    with pytest.raises(MemoryNotFoundError):
        await repairs(store, "nobody")


# --- 1. tool calls and results ---------------------------------------------------


async def test_an_orphan_call_at_the_end_gets_an_interrupted_result(store: ContextStore) -> None:
    await store.append_message("c1", "user", "weather and time?")
    call_mid = await store.append_message(
        "c1", "assistant", "", {"tool_calls": [call("w1"), call("t1", "time")]}
    )
    await store.append_message("c1", "tool", "12:00", {"tool_call_id": "t1"})
    (found,) = await findings(store)
    assert (found.rule, found.message_ids, found.call_id) == (
        rules.RULE_ORPHAN_CALL,
        (call_mid,),
        "w1",
    )
    assert found.repair == rules.REPAIR_APPEND_RESULT
    assert "w1" in found.description

    (done,) = await repairs(store)
    assert done.repaired and done.finding == found
    last = (await store.get_messages("c1", order="desc", limit=1))[0]
    assert (last.message_id, last.role, last.content) == (
        "interrupted-w1",
        "tool",
        rules.INTERRUPTED_RESULT,
    )
    assert last.metadata == {"tool_call_id": "w1", "is_error": True, "interrupted": True}
    assert_valid_for_both_apis(await store.get_messages("c1"))
    await assert_repaired_for_good(store)


async def test_an_orphan_call_mid_history_is_set_aside(store: ContextStore) -> None:
    """A result cannot be put right after the call (the store appends), so the
    call moves out of the message's tool_calls, kept whole beside them."""
    await store.append_message("c1", "user", "weather?")
    call_mid = await store.append_message(
        "c1", "assistant", "checking", {"tool_calls": [call("w1"), call("t1", "time")], "k": 1}
    )
    await store.append_message("c1", "tool", "12:00", {"tool_call_id": "t1"})
    await store.append_message("c1", "user", "hello? anyone?")
    (found,) = await findings(store)
    assert (found.rule, found.call_id, found.repair) == (
        rules.RULE_ORPHAN_CALL,
        "w1",
        rules.REPAIR_SET_ASIDE_CALL,
    )
    (done,) = await repairs(store)
    assert done.repaired
    message = await store.get_message("c1", call_mid)
    assert message.content == "checking"
    assert message.updated_at is not None
    assert message.metadata == {
        "tool_calls": [call("t1", "time")],
        "k": 1,
        "interrupted_tool_calls": [{**call("w1"), "result": rules.INTERRUPTED_RESULT}],
    }
    assert_valid_for_both_apis(await store.get_messages("c1"))
    await assert_repaired_for_good(store)


async def test_an_orphan_tool_use_in_content(store: ContextStore) -> None:
    """Anthropic's shape: at the end a result is appended; in the middle, where
    only the content could change, it is reported alone."""
    use = {"type": "tool_use", "id": "tu_1", "name": "search", "input": {}}
    mid = await store.append_message("tail", "assistant", [{"type": "text", "text": "hm"}, use])
    stuck = await store.append_message("middle", "assistant", [use])
    await store.append_message("middle", "user", "still there?")
    found = {f.conversation_id: f for f in await findings(store)}
    assert (found["tail"].rule, found["tail"].message_ids) == (rules.RULE_ORPHAN_CALL, (mid,))
    assert found["tail"].repair == rules.REPAIR_APPEND_RESULT
    assert (found["middle"].message_ids, found["middle"].repair) == ((stuck,), None)

    done = await repairs(store)
    assert [(r.finding.conversation_id, r.repaired) for r in done] == [("tail", True)]
    assert_valid_for_both_apis(await store.get_messages("tail"))
    assert rules_of(await findings(store)) == [("middle", rules.RULE_ORPHAN_CALL)]
    assert await repairs(store) == []  # nothing repairable is left


async def test_a_result_without_its_call(store: ContextStore) -> None:
    await store.append_message("c1", "user", "hi")
    mid = await store.append_message("c1", "tool", "42", {"tool_call_id": "ghost"})
    (found,) = await findings(store)
    assert (found.rule, found.message_ids, found.call_id, found.repair) == (
        rules.RULE_ORPHAN_RESULT,
        (mid,),
        "ghost",
        None,
    )
    assert await repairs(store) == []
    assert len(await store.get_messages("c1")) == 2  # reported, never touched


async def test_a_result_after_its_turn_closed(store: ContextStore) -> None:
    call_mid = await store.append_message("c1", "assistant", "", {"tool_calls": [call("w1")]})
    await store.append_message("c1", "user", "while you look: thanks")
    late = await store.append_message("c1", "tool", "sunny", {"tool_call_id": "w1"})
    (found,) = await findings(store)
    assert (found.rule, found.message_ids, found.repair) == (
        rules.RULE_MISPLACED_RESULT,
        (call_mid, late),
        None,
    )


async def test_an_interrupted_agents_sdk_run_leaves_a_call_the_doctor_answers(
    store: ContextStore,
) -> None:
    """A run paused for approval and abandoned: the session holds the
    function_call without its output, and the SDK's next run sends it so."""

    @function_tool(needs_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    model = ScriptedModel([[function_call("send_email", {"to": "bob"}, call_id="call_9")]])
    agent = Agent(name="mailer", model=model, tools=[send_email])
    session = store.openai_session("chat-7")
    result = await Runner.run(agent, "Email bob.", session=session)
    assert result.interruptions
    (found,) = await findings(store)
    assert (found.conversation_id, found.rule, found.call_id) == (
        "chat-7",
        rules.RULE_ORPHAN_SESSION_CALL,
        "call_9",
    )
    assert found.repair == rules.REPAIR_APPEND_RESULT

    (done,) = await repairs(store)
    assert done.repaired
    items = await session.get_items()
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": rules.INTERRUPTED_RESULT,
    }
    tail = (await store.get_messages("chat-7", order="desc", limit=1))[0]
    call_item = (await store.get_messages("chat-7"))[1]
    assert tail.metadata["run_id"] == call_item.metadata["run_id"]
    await assert_repaired_for_good(store)

    # the next turn runs on the repaired session and sends the call paired
    model = ScriptedModel([[assistant_message("Sorry, not sent.", item_id="m_2")]])
    await Runner.run(Agent(name="mailer", model=model), "Never mind.", session=session)
    assert await findings(store) == []


async def test_a_session_output_without_its_call(store: ContextStore) -> None:
    session = store.openai_session("chat-8")
    await session.add_items(
        [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "lost", "output": "x"},
        ]
    )
    (found,) = await findings(store)
    assert (found.rule, found.call_id, found.repair) == (
        rules.RULE_ORPHAN_SESSION_OUTPUT,
        "lost",
        None,
    )


# --- 2. duplicates -----------------------------------------------------------------


async def test_an_exact_duplicate_within_a_second_is_deleted(store: ContextStore) -> None:
    await store.append_message("c1", "user", "hi")
    first = await store.append_message("c1", "assistant", "hello", {"run_id": "r1"})
    again = await store.append_message("c1", "assistant", "hello", {"run_id": "r1"})
    (found,) = await findings(store)
    assert (found.rule, found.message_ids, found.repair) == (
        rules.RULE_DUPLICATE,
        (first, again),
        rules.REPAIR_DELETE_DUPLICATE,
    )
    (done,) = await repairs(store)
    assert done.repaired
    assert [m.message_id for m in await store.get_messages("c1")][1:] == [first]
    assert (await store.get_conversation("c1")).message_count == 2
    await assert_repaired_for_good(store)


async def test_three_copies_keep_the_first(store: ContextStore) -> None:
    ids = [await store.append_message("c1", "user", "ping") for _ in range(3)]
    assert [f.message_ids for f in await findings(store)] == [(ids[0], ids[1]), (ids[0], ids[2])]
    assert all(r.repaired for r in await repairs(store))
    assert [m.message_id for m in await store.get_messages("c1")] == ids[:1]
    await assert_repaired_for_good(store)


async def test_what_is_not_an_exact_duplicate(url: str) -> None:
    """Other metadata: reported, not deleted. Another run, another tool call,
    more than a second apart: no finding."""
    clock = FixedClock()
    async with makers_store.open_store(url, clock=clock) as store:
        first = await store.append_message("c1", "assistant", "ok", {"run_id": "r1"})
        other = await store.append_message("c1", "assistant", "ok", {"run_id": "r1", "n": 2})
        await store.append_message("c2", "assistant", "ok", {"run_id": "r1"})
        await store.append_message("c2", "assistant", "ok", {"run_id": "r2"})
        await store.append_message("c3", "assistant", "", {"tool_calls": [call("x")]})
        await store.append_message("c3", "tool", "ok", {"tool_call_id": "x"})
        await store.append_message("c3", "assistant", "", {"tool_calls": [call("y")]})
        await store.append_message("c3", "tool", "ok", {"tool_call_id": "y"})
        await store.append_message("c4", "user", "again")
        clock.now += rules.DUPLICATE_WINDOW_MS + 1
        await store.append_message("c4", "user", "again")
        (found,) = await findings(store)
        assert (found.rule, found.message_ids, found.repair) == (
            rules.RULE_DUPLICATE,
            (first, other),
            None,
        )
        assert await repairs(store) == []
        assert len(await store.get_messages("c1")) == 2


async def test_one_id_twice(store: ContextStore) -> None:
    """Old data can hold two messages with one id (the API refuses to write
    it): reported, never repaired (which one to keep is not the store's call)."""
    await store.append_message("c1", "user", "first", message_id="web-1")
    await store.append_message("c1", "user", "second", message_id="web-2")
    data = encode_message(
        message_id="web-1",
        role="user",
        content_json='"second"',
        created_at=1_700_000_000_500,
        metadata_json="null",
    )
    key = keys.message_key("c1", 1)
    await store.runner.run(lambda: put(key, data), write=True)
    found = await findings(store)
    assert [(f.rule, f.message_ids, f.repair) for f in found] == [
        (rules.RULE_DUPLICATE_ID, ("web-1",), None)
    ]
    assert await repairs(store) == []


async def test_one_id_twice_a_page_apart_is_walked_once(store: ContextStore) -> None:
    """An id two messages hold is no cursor: paging by it would read the page
    between them again and again. The doctor walks by position."""
    size = BILLED_PAGE if store.blobs.capabilities.costly_requests else LOCAL_PAGE
    await store.append_messages(
        "c1", [{"role": "user", "content": f"n{n}", "message_id": f"m{n}"} for n in range(3 * size)]
    )
    data = encode_message(
        message_id=f"m{size - 1}",  # the last of the second page takes the first page's last id
        role="user",
        content_json='"copy"',
        created_at=1_700_000_000_900,
        metadata_json="null",
    )
    key = keys.message_key("c1", 2 * size - 1)
    await store.runner.run(lambda: put(key, data), write=True)
    found = await findings(store)
    assert [(f.rule, f.message_ids) for f in found] == [
        (rules.RULE_DUPLICATE_ID, (f"m{size - 1}",))
    ]
    # paging by that id makes no progress: the page walker says so, it does not loop
    with pytest.raises(MemoryCorruptError, match="no progress"):
        async for _ in store.iter_messages("c1", page_size=size):
            pass


# --- 3. what the converters cannot turn into valid input -------------------------


async def test_messages_the_converters_cannot_make_valid(store: ContextStore) -> None:
    odd = await store.append_message("c1", "assistant", {"answer": 42})
    loose = await store.append_message("c1", "tool", "no id")
    args = await store.append_message(
        "c1",
        "assistant",
        "",
        {
            "tool_calls": [
                {"id": "k", "type": "function", "function": {"name": "f", "arguments": {}}}
            ]
        },
    )
    await store.append_message("c1", "tool", "done", {"tool_call_id": "k"})
    # written for one API (its own block kinds), judged by that one alone
    await store.append_message(
        "c1", "user", [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]
    )
    await store.append_message("c1", "user", [{"type": "text", "text": "see"}, {"type": "image",
                               "source": {"type": "url", "url": "https://x/y.png"}}])  # fmt: skip
    blank = await store.append_message("c1", "user", [{"type": "text", "text": ""}])
    misplaced = await store.append_message(
        "c1", "user", [{"type": "tool_use", "id": "u", "name": "f", "input": {}}]
    )
    mixed = await store.append_message(
        "c1", "assistant", [{"type": "refusal", "refusal": "no"}, {"type": "thinking"}]
    )
    found = [(f.rule, f.message_ids[0]) for f in await findings(store)]
    assert found == [
        (rules.RULE_OPENAI_INVALID, odd),
        (rules.RULE_ANTHROPIC_INVALID, odd),
        (rules.RULE_OPENAI_INVALID, loose),  # Anthropic takes it as user text
        (rules.RULE_OPENAI_INVALID, args),  # arguments must be a JSON string
        (rules.RULE_ANTHROPIC_INVALID, blank),  # Chat Completions takes an empty text part
        (rules.RULE_ANTHROPIC_INVALID, misplaced),  # a tool_use in a user turn
        (rules.RULE_OPENAI_INVALID, mixed),
        (rules.RULE_ANTHROPIC_INVALID, mixed),
    ]
    assert await repairs(store) == []


# --- 4. adapter data without its conversation -------------------------------------


async def test_adapter_data_whose_conversation_is_gone(store: ContextStore) -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("echo", lambda state: {"messages": [("ai", "pong")]})
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    app = graph.compile(checkpointer=store.langgraph_checkpointer)
    for thread in ("lg-alone", "lg-with-history"):
        await app.ainvoke({"messages": [("user", "ping")]}, {"configurable": {"thread_id": thread}})
    await store.append_message("lg-with-history", "user", "ping")

    sessions = store.claude_session_store()
    bound = await store.claude_session_binding("claude-alone")  # no message ever written
    live = await store.claude_session_binding("claude-live")
    await store.append_message("claude-live", "user", "hi")
    for sid in (bound, live):
        await sessions.append({"project_key": "app", "session_id": sid}, [{"uuid": "e1"}])

    found = {f.conversation_id: f for f in await findings(store)}
    assert sorted(found) == ["claude-alone", "lg-alone"]
    for cid in found:
        assert found[cid].rule == rules.RULE_ORPHAN_ADAPTER_DATA
        assert found[cid].message_ids == () and found[cid].repair is None
    assert "LangGraph checkpoints" in found["lg-alone"].description
    assert "Claude session binding" in found["claude-alone"].description
    assert rules_of(await findings(store, "lg-alone")) == [
        ("lg-alone", rules.RULE_ORPHAN_ADAPTER_DATA)
    ]
    assert await repairs(store) == []

    await store.delete_conversation("lg-alone")
    await store.delete_conversation("claude-alone")  # and the session bound to it
    assert await findings(store) == []


async def test_a_deletion_cut_short(store: ContextStore) -> None:
    """Meta marked as being deleted, the rest still there: what a crash in
    the middle of delete_conversation leaves on object storage."""
    session = store.openai_session("c1")
    await session.add_items([{"role": "user", "content": "hi"}])
    await store.bind("c1").state.set("step", 1)

    def mark() -> Any:
        record, etag = yield from load_meta("c1")
        record.deleting = True
        yield from save_meta("c1", record, etag)

    await store.runner.run(mark, write=True)
    (found,) = await findings(store)
    assert found.rule == rules.RULE_ORPHAN_ADAPTER_DATA
    assert "cut short" in found.description
    assert "message blobs" in found.description and "state entries" in found.description
    await store.delete_conversation("c1")
    assert await findings(store) == []


# --- repairs re-check what they repair --------------------------------------------


async def test_a_repair_leaves_alone_what_changed_since_the_check(store: ContextStore) -> None:
    """Findings read before a concurrent writer acted: each repair reads again."""
    await store.append_message("tail", "assistant", "", {"tool_calls": [call("w1")]})
    mid_call = await store.append_message("mid", "assistant", "", {"tool_calls": [call("w2")]})
    await store.append_message("mid", "user", "hm")
    await store.append_message("dup", "user", "x", {"run_id": "r"})
    dup = await store.append_message("dup", "user", "x", {"run_id": "r"})
    stale = await findings(store)
    assert len(stale) == 3

    await store.append_message("tail", "tool", "sunny", {"tool_call_id": "w1"})  # arrived
    await store.update_message("mid", mid_call, metadata={})  # someone fixed it by hand
    await store.update_message("dup", dup, content="y")  # no longer a copy
    snapshot = {cid: await history(store, cid) for cid in ("tail", "mid", "dup")}
    for finding in stale:
        done = await doctor.repair_finding(store, finding)
        assert done.outcome.startswith(("left alone", "already repaired")), done
    assert {cid: await history(store, cid) for cid in snapshot} == snapshot
    assert await findings(store) == []


async def test_two_repairs_of_one_finding_store_one_result(store: ContextStore) -> None:
    await store.append_message("c1", "assistant", "", {"tool_calls": [call("w1")]})
    (found,) = await findings(store)
    first = await doctor.repair_finding(store, found)
    second = await doctor.repair_finding(store, found)
    assert first.repaired and second.repaired
    assert second.outcome.startswith("already repaired")
    assert len(await store.get_messages("c1")) == 2


def test_the_blocking_store_checks_and_repairs(tmp_path: Path) -> None:
    with makers_store.open_sync_store(f"sqlite:///{tmp_path}/s.db") as store:
        store.append_message("c1", "assistant", "", {"tool_calls": [CALL]})
        assert [f.rule for f in store.admin.check_history()] == [rules.RULE_ORPHAN_CALL]
        assert [r.repaired for r in store.admin.repair_history("c1")] == [True]
        assert list(store.admin.check_history("c1")) == []
        assert found_dict_shape(store)


def found_dict_shape(store: makers_store.SyncContextStore) -> bool:
    store.append_message("c2", "tool", "x", {"tool_call_id": "nope"})
    (found,) = store.admin.check_history("c2")
    assert found.to_dict() == {
        "conversation_id": "c2",
        "rule": "orphan-tool-result",
        "message_ids": [found.message_ids[0]],
        "description": found.description,
        "repair": None,
        "call_id": "nope",
    }
    return True


def _arrive_at(step: int, blobs: Any, store: ContextStore) -> Any:
    """A hook that stores call w1's real result at the ``step``-th step."""
    seen = 0

    async def arrive() -> None:
        nonlocal seen
        seen += 1
        if seen == step + 1:
            blobs.hook = None
            await store.append_message("c1", "tool", "sunny", {"tool_call_id": "w1"})

    return arrive


@pytest.mark.parametrize("kind", ["stepwise", "atomic"])
async def test_a_result_stored_at_any_step_of_the_repair_is_never_answered_twice(
    kind: str,
) -> None:
    """The real result arrives between any two steps of the repair (every
    operation on a stepwise backend, every unit on an atomic one): the
    interrupted result is appended only onto the conversation the re-check
    read, so it never follows a stored real result (issue 35: on S3 the
    re-check read, then the append went ahead in another unit)."""
    from makers_store.blob_ops import Op, Program
    from makers_store.emulator.memory.backend import (
        MemoryBlobStore,
        StepwiseMemoryBlobStore,
    )

    class Stepped(StepwiseMemoryBlobStore):
        hook: Any = None

        async def execute(self, op: Op) -> Any:
            if self.hook is not None:
                await self.hook()
            return await super().execute(op)

    class Units(MemoryBlobStore):
        hook: Any = None

        async def run(self, program: Program[Any], *, write: bool) -> Any:
            if self.hook is not None:
                await self.hook()
            return await super().run(program, write=write)

    step = 0
    while True:
        blobs = Stepped() if kind == "stepwise" else Units()
        store = ContextStore(blobs, clock=FixedClock())
        await store.append_message("c1", "assistant", "", {"tool_calls": [call("w1")]})
        (found,) = await findings(store)
        blobs.hook = _arrive_at(step, blobs, store)
        done = await doctor.repair_finding(store, found)
        arrived = blobs.hook is None
        blobs.hook = None
        contents = [m.content for m in await store.get_messages("c1")][1:]
        if not arrived:  # the repair ran out of steps first
            assert contents == [rules.INTERRUPTED_RESULT] and done.repaired
            break
        # the real result first means the doctor saw it, or wrote nothing
        assert contents in (["sunny"], [rules.INTERRUPTED_RESULT, "sunny"]), (step, done)
        assert done.repaired == (contents[0] == rules.INTERRUPTED_RESULT), (step, done)
        step += 1
    assert step > (8 if kind == "stepwise" else 2)
