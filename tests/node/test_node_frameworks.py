"""OpenAI Agents JS and the Claude Agent SDK (TypeScript) over the store RPC:
offline turns in separate Node processes remember through the store, and
Python reads (and adds to) what Node wrote."""

from __future__ import annotations

from makers_store import ContextStore

from .harness import CLAUDE_PROJECT, PROJECT, run_node, serving


async def test_openai_agents_js_session(store: ContextStore) -> None:
    cid = "oa:chat 1"
    async with serving(store) as socket:
        await run_node(PROJECT / "openai_turn.mjs", socket, cid, "hello")
        two = await run_node(PROJECT / "openai_turn.mjs", socket, cid, "again")
        assert two["reply"] == "sum 3; heard: hello, again"
        session = store.openai_session(cid)
        assert await session.get_items() == two["items"]  # the same items, from Python
        await session.add_items([{"role": "user", "content": "from python"}])
        three = await run_node(PROJECT / "openai_turn.mjs", socket, cid, "third")
    assert three["reply"] == "sum 3; heard: hello, again, from python, third"
    messages = await store.get_messages(cid, limit=100)
    first_turn = messages[:4]
    assert [m.role for m in first_turn] == ["user", "assistant", "tool", "assistant"]
    assert [m.metadata["item_type"] for m in first_turn if m.metadata] == [
        "message",
        "function_call",
        "function_call_result",
        "message",
    ]
    run_ids = {m.metadata["run_id"] for m in first_turn if m.metadata}
    assert len(run_ids) == 1 and all(
        m.metadata and m.metadata["agent_sdk_session"] for m in messages
    )


async def test_openai_agents_js_human_in_the_loop(store: ContextStore) -> None:
    """The platform's HITL pattern: the paused RunState in ``state``, restored
    by the next request in another process."""
    cid = "oa-hitl"
    async with serving(store) as socket:
        paused = await run_node(PROJECT / "openai_hitl.mjs", socket, cid, "start")
        assert paused == {"status": "awaiting_approval", "tool": "submit_order"}
        saved = await store.bind(cid).state.get("openai.run-state")
        assert isinstance(saved, str) and "submit_order" in saved  # readable from Python
        done = await run_node(PROJECT / "openai_hitl.mjs", socket, cid, "approve")
    assert done == {
        "status": "completed",
        "output": "done: order-submitted:2 coffees",
        "left": None,
    }


async def test_claude_agent_sdk_session_store(store: ContextStore) -> None:
    cid = "chat-2026-08-12-abc"
    async with serving(store) as socket:
        out = await run_node(CLAUDE_PROJECT / "claude_sessions.mjs", socket, cid)
    session_id = await store.claude_session_binding(cid)
    assert out["sessionId"] == session_id
    sessions = store.claude_session_store()
    key = {"project_key": out["projectKey"], "session_id": session_id}
    assert await sessions.load(key) == out["loaded"]  # type: ignore[arg-type]
    assert out["info"]["sessionId"] == session_id and out["info"]["summary"] == "Plan the trip"
    assert [s["sessionId"] for s in out["listed"]] == [session_id]
    assert out["subkeys"] == ["subagents/agent-1"]
    assert out["messages"] == ["plan a trip", "Where to?"]
    assert out["subagents"] == ["1"]
    assert out["summaries"] == [out["folded"]]  # what the TypeScript SDK itself would fold
    async with serving(store) as socket:
        gone = await run_node(
            CLAUDE_PROJECT / "claude_sessions.mjs", socket, cid, "delete", out["projectKey"]
        )
    assert gone == {"afterDelete": None}
    assert await sessions.load(key) is None  # type: ignore[arg-type]
