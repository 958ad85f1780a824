"""Checkpoint retention (issue 24, item 2): ``store.admin.prune_checkpoints``
and the checkpointer's ``prune(keep_latest)`` keep what LangGraph's
DeltaChannel rebuilds state from, on every backend; orphaned Claude subagent
transcripts go."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph

from makers_store import CheckpointPruneReport, ContextStore, open_store
from makers_store.clock import FixedClock, counting_suffixes


def _extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class Chat(TypedDict):
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=3)]
    total: Annotated[int, operator.add]


def _step(state: Chat) -> dict[str, Any]:
    return {"log": [f"turn {len(state['log'])}"], "total": 1}


def _graph(store: ContextStore) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("step", _step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=store.langgraph_checkpointer)


async def _checkpoints(store: ContextStore, thread: str) -> int:
    saver = store.langgraph_checkpointer
    return len([c async for c in saver.alist({"configurable": {"thread_id": thread}})])


@pytest.fixture
async def store(url: str) -> Any:
    async with open_store(url, clock=FixedClock(), ids=counting_suffixes()) as opened:
        yield opened


@pytest.mark.on_s3  # listings and deletes in S3's order: checked there too
@pytest.mark.parametrize("way", ["admin", "checkpointer"])
async def test_keep_latest_keeps_what_delta_channels_rebuild_from(
    store: ContextStore, way: str
) -> None:
    graph = _graph(store)
    config = {"configurable": {"thread_id": "t1"}}
    turns = 7  # snapshots every 3 updates: the latest is not one
    for _ in range(turns):
        await graph.ainvoke({"log": [], "total": 0}, config)
    expected = [f"turn {n}" for n in range(turns)]
    before = await graph.aget_state(config)
    assert before.values["log"] == expected
    stored = await _checkpoints(store, "t1")
    if way == "admin":
        plan = await store.admin.prune_checkpoints(dry_run=True)
        assert plan.threads == 1 and plan.checkpoints_deleted > 0
        assert await _checkpoints(store, "t1") == stored  # a dry run deletes nothing
        report = await store.admin.prune_checkpoints()
        assert isinstance(report, CheckpointPruneReport)
        assert report.to_dict()["threads"] == 1
        assert report.checkpoints_deleted == plan.checkpoints_deleted
        assert report.checkpoints_kept_for_deltas >= 1  # the chain back to a snapshot
        assert await _checkpoints(store, "t1") == stored - report.checkpoints_deleted
    else:
        await store.langgraph_checkpointer.aprune(["t1"])
    left = await _checkpoints(store, "t1")
    assert 1 < left < stored
    after = await graph.aget_state(config)
    assert after.values["log"] == expected  # rebuilt from the kept ancestors
    assert after.values["total"] == turns
    await graph.ainvoke({"log": [], "total": 0}, config)
    assert (await graph.aget_state(config)).values["log"] == [*expected, f"turn {turns}"]
    # a second prune keeps the state whole too
    await store.admin.prune_checkpoints(conversation_id="t1")
    assert (await graph.aget_state(config)).values["log"] == [*expected, f"turn {turns}"]


async def test_a_thread_of_plain_channels_keeps_only_its_latest(store: ContextStore) -> None:
    class Plain(TypedDict):
        total: Annotated[int, operator.add]

    builder = StateGraph(Plain)
    builder.add_node("step", lambda state: {"total": 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    graph = builder.compile(checkpointer=store.langgraph_checkpointer)
    config = {"configurable": {"thread_id": "p1"}}
    for _ in range(4):
        await graph.ainvoke({"total": 0}, config)
    report = await store.admin.prune_checkpoints(conversation_id="p1")
    assert report.checkpoints_kept_for_deltas == 0
    assert await _checkpoints(store, "p1") == 1
    assert (await graph.aget_state(config)).values["total"] == 4


@pytest.mark.on_s3  # conditional deletes of the heads
async def test_orphaned_claude_subagent_transcripts_go(store: ContextStore) -> None:
    pytest.importorskip("claude_agent_sdk")
    sessions = store.claude_session_store()
    sid = "3f1e7c2a-0000-4000-8000-000000000002"
    kept = "3f1e7c2a-0000-4000-8000-000000000003"
    entry = [{"type": "user", "uuid": "e1", "message": {}}]
    for session in (sid, kept):
        await sessions.append({"project_key": "p", "session_id": session}, entry)  # type: ignore[arg-type, typeddict-item]
        sub = {"project_key": "p", "session_id": session, "subpath": "subagents/a1"}
        await sessions.append(sub, entry)  # type: ignore[arg-type, typeddict-item]
    # the main transcript's head went, the subagent's stayed (a delete cut short)
    head = f"c/{sid}/x/claude/p/p/h/m"
    assert await store.admin.get_blob(head) is not None
    await store.runner.blobs.delete(head)
    plan = await store.admin.prune_checkpoints(dry_run=True)
    assert plan.orphan_transcripts == 1
    report = await store.admin.prune_checkpoints()
    assert report.orphan_transcripts == 1
    assert [info.key async for info in store.admin.list_blobs(f"c/{sid}/x/claude/")] == []
    sub_kept = {"project_key": "p", "session_id": kept, "subpath": "subagents/a1"}
    assert await sessions.load(sub_kept) is not None  # type: ignore[arg-type]
    assert (await store.admin.prune_checkpoints()).orphan_transcripts == 0
