"""The LangGraph checkpointer: the public conformance suite (on every backend
but S3, whose semantics stepwise memory has: tests/backends.py), deletion with
the conversation, the sync bridge, and an interrupted graph that resumes after
a restart (a new store over the same SQLite file)."""

from __future__ import annotations

import asyncio
import operator
import re
import threading
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import makers_store
from makers_store._core import adapter_keys
from makers_store.adapters.langgraph.checkpoints import MakersCheckpointSaver
from makers_store.errors import MemoryValidationError, SyncCallInEventLoopError


async def test_conformance_full(make_store: Callable[[], makers_store.ContextStore]) -> None:
    stores: list[makers_store.ContextStore] = []

    async def factory() -> AsyncGenerator[BaseCheckpointSaver[Any], None]:
        store = make_store()  # a fresh saver per capability suite, as the suite asks
        stores.append(store)
        yield store.langgraph_checkpointer

    registered = checkpointer_test(name="MakersCheckpointSaver")(factory)
    try:
        report = await validate(registered)
    finally:
        for store in stores:
            await store.close()
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures, failures
    detected = {name for name, r in report.results.items() if r.detected and r.passed}
    assert detected == {cap.value for cap in ALL_CAPABILITIES}  # the extended ones included
    assert report.conformance_level() == "FULL"
    assert report.results["put"].tests_passed > 0


async def _put(saver: MakersCheckpointSaver, thread_id: str, ns: str = "") -> dict[str, Any]:
    checkpoint = generate_checkpoint(channel_values={"k": "v"}, channel_versions={"k": 1})
    config = generate_config(thread_id, checkpoint_ns=ns)
    stored = await saver.aput(config, checkpoint, generate_metadata(run_id="run-1"), {"k": 1})
    await saver.aput_writes(stored, [("ch", "val")], "task-1")
    return dict(stored)


async def test_delete_conversation_removes_checkpoints_and_writes(
    store: makers_store.ContextStore,
) -> None:
    saver = store.langgraph_checkpointer
    assert saver is store.langgraph_checkpointer
    for ns in ("", "child:1"):
        await _put(saver, "conv/1", ns)
    await _put(saver, "other")
    await store.append_message(conversation_id="conv/1", role="user", content="hi")
    prefix = adapter_keys.langgraph_prefix("conv/1")
    assert len(await store.blobs.list(prefix)) == 6  # 2 checkpoints, 2 writes, 2 markers

    await store.delete_conversation(conversation_id="conv/1")

    assert await store.blobs.list(prefix) == []
    assert await saver.aget_tuple(generate_config("conv/1")) is None
    assert [t async for t in saver.alist(generate_config("conv/1"))] == []
    assert await saver.aget_tuple(generate_config("other")) is not None


@pytest.mark.on_s3
async def test_checkpoint_ids_outside_the_key_alphabet(store: makers_store.ContextStore) -> None:
    saver = store.langgraph_checkpointer
    await _put(saver, "t")
    assert await saver.aget_tuple(generate_config("t", checkpoint_id="id with spaces")) is None
    bad = generate_checkpoint(checkpoint_id="é")
    with pytest.raises(makers_store.MemoryValidationError, match="checkpoint"):
        await saver.aput(generate_config("t"), bad, generate_metadata(), {})
    with pytest.raises(makers_store.MemoryValidationError, match="strategy"):
        await saver.aprune(["t"], strategy="sometimes")


@pytest.mark.on_s3
async def test_sync_call_on_the_store_loop_raises(store: makers_store.ContextStore) -> None:
    saver = store.langgraph_checkpointer
    with pytest.raises(SyncCallInEventLoopError, match="would block"):
        saver.get_tuple(generate_config("t"))
    # from another thread the sync twin runs on this loop
    await _put(saver, "t")
    found = await asyncio.to_thread(saver.get_tuple, generate_config("t"))
    assert found is not None and found.pending_writes == [("task-1", "ch", "val")]
    listed = await asyncio.to_thread(lambda: list(saver.list(generate_config("t"))))
    assert [t.checkpoint["id"] for t in listed] == [found.checkpoint["id"]]


async def test_whole_store_calls_skip_other_conversations(
    store: makers_store.ContextStore,
) -> None:
    """list(None) and delete_for_runs visit every conversation; those without
    checkpoints (plain message histories) are passed over untouched."""
    saver = store.langgraph_checkpointer
    for cid in ("a", "m1", "z/z"):
        await store.append_message(conversation_id=cid, role="user", content=cid)
    await _put(saver, "b")
    await _put(saver, "n")
    everything = [t async for t in saver.alist(None)]
    assert sorted(t.config["configurable"]["thread_id"] for t in everything) == ["b", "n"]
    ids = [t.checkpoint["id"] for t in everything]
    assert ids == sorted(ids, reverse=True)
    assert [t async for t in saver.alist(None, limit=1)] == everything[:1]

    await saver.adelete_for_runs(["run-1"])

    assert [t async for t in saver.alist(None)] == []
    assert (
        await store.blobs.list(adapter_keys.langgraph_prefix("b")) == []
    )  # writes and markers too
    assert len(await store.get_messages(conversation_id="m1")) == 1


def test_sync_facade_runs_a_graph(tmp_path: Path) -> None:
    with makers_store.open_sync_store(f"sqlite:///{tmp_path}/store.db") as store:
        saver = store.langgraph_checkpointer
        try:
            paused = _graph(saver).invoke({"request": "a", "log": []}, CONFIG)
            assert "__interrupt__" in paused
            assert _graph(saver).invoke(Command(resume="ok"), CONFIG)["decision"] == "ok"
        finally:
            saver.close()


# --- a graph that pauses for a human and resumes after a restart --------------


class Approval(TypedDict):
    request: str
    decision: str
    log: Annotated[list[str], operator.add]


def _ask(state: Approval) -> dict[str, Any]:
    decision = interrupt({"question": f"approve {state['request']}?"})
    return {"decision": decision, "log": ["asked"]}


def _finish(state: Approval) -> dict[str, Any]:
    return {"log": [f"done:{state['decision']}"]}


def _graph(saver: MakersCheckpointSaver) -> Any:
    builder = StateGraph(Approval)
    builder.add_node("ask", _ask)
    builder.add_node("finish", _finish)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


CONFIG: Any = {"configurable": {"thread_id": "conv-hitl"}}


def test_interrupt_resume_after_restart_sync(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    first = makers_store.open_store(url)
    try:
        paused = _graph(first.langgraph_checkpointer).invoke(
            {"request": "refund", "log": []}, CONFIG
        )
        assert paused["__interrupt__"][0].value == {"question": "approve refund?"}
    finally:
        first.langgraph_checkpointer.close()
        asyncio.run(first.close())

    second = makers_store.open_store(url)  # a restart: nothing shared but the file
    try:
        saver = second.langgraph_checkpointer
        done = _graph(saver).invoke(Command(resume="yes"), CONFIG)
        assert done["decision"] == "yes"
        assert done["log"] == ["asked", "done:yes"]
        history = list(saver.list(CONFIG))
        assert len(history) >= 4
        assert history[0].metadata["step"] > history[-1].metadata["step"]
    finally:
        saver.close()
        asyncio.run(second.close())
    assert not [t for t in threading.enumerate() if t.name == "makers-store-portal"]


async def test_interrupt_resume_after_restart_async(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    async with makers_store.open_store(url) as first:
        paused = await _graph(first.langgraph_checkpointer).ainvoke(
            {"request": "refund", "log": []}, CONFIG
        )
        assert paused["__interrupt__"][0].value == {"question": "approve refund?"}

    async with makers_store.open_store(url) as second:
        graph = _graph(second.langgraph_checkpointer)
        state = await graph.aget_state(CONFIG)
        assert state.next == ("ask",)
        done = await graph.ainvoke(Command(resume="no"), CONFIG)
        assert done["decision"] == "no"
        assert done["log"] == ["asked", "done:no"]


def _metadata_scenario(saver: BaseCheckpointSaver[Any]) -> dict[str, Any]:
    """Checkpoints whose metadata carries ``writes``, then metadata filters,
    as langgraph's own SqliteSaver tests exercise them (test_combined_metadata,
    test_search); the result is compared across savers."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    first = empty_checkpoint()
    second = create_checkpoint(first, {}, 1)
    third = empty_checkpoint()
    puts = [
        ({"thread_id": "t1", "checkpoint_ns": ""}, first, {"source": "input", "writes": {}}),
        (
            {"thread_id": "t2", "checkpoint_ns": "", "checkpoint_id": "p"},
            second,
            {"source": "loop", "step": 1, "writes": {"node": {"answer": [1, "x"]}}},
        ),
        ({"thread_id": "t2", "checkpoint_ns": "inner", "checkpoint_id": "q"}, third, {}),
    ]
    for configurable, checkpoint, metadata in puts:
        config: Any = {"configurable": configurable, "metadata": {"run_id": "r"}}
        saver.put(config, checkpoint, metadata, {})  # type: ignore[arg-type]

    def found(config: Any, query: dict[str, Any] | None) -> list[Any]:
        items = saver.list(config, filter=query)
        return sorted(
            (item.config["configurable"]["checkpoint_ns"], sorted(item.metadata.items(), key=str))
            for item in items
        )

    newest = saver.get_tuple({"configurable": {"thread_id": "t2", "checkpoint_ns": ""}})
    assert newest is not None
    return {
        "metadata": newest.metadata,
        "by_writes": found(None, {"writes": {"node": {"answer": [1, "x"]}}}),
        "by_two_keys": found(None, {"step": 1, "writes": {"node": {"answer": [1, "x"]}}}),
        "empty_writes": found(None, {"writes": {}}),
        "no_match": found(None, {"source": "update", "step": 1}),
        "all": len(found(None, {})),
        "thread": found({"configurable": {"thread_id": "t2"}}, None),
    }


async def test_metadata_writes_are_kept_and_filterable_like_sqlite_saver(
    store: makers_store.ContextStore, tmp_path: Path
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    def reference() -> dict[str, Any]:
        with SqliteSaver.from_conn_string(str(tmp_path / "reference.db")) as saver:
            return _metadata_scenario(saver)

    expected = await asyncio.to_thread(reference)
    assert await asyncio.to_thread(_metadata_scenario, InMemorySaver()) == expected
    assert expected["metadata"]["writes"] == {"node": {"answer": [1, "x"]}}
    assert len(expected["by_writes"]) == 1 and expected["all"] == 3
    ours = await asyncio.to_thread(_metadata_scenario, store.langgraph_checkpointer)
    assert ours == expected


async def test_lone_surrogates_in_names_are_refused_before_any_write(
    store: makers_store.ContextStore,
) -> None:
    saver = store.langgraph_checkpointer
    stored = await _put(saver, "t")
    before = [info.key for info in await store.blobs.list()]
    lone = "x\ud800"
    checkpoint = generate_checkpoint()
    calls = {
        "thread_id": lambda: saver.aput(generate_config(lone), checkpoint, {}, {}),
        "checkpoint_ns": lambda: saver.aput(
            generate_config("t", checkpoint_ns=lone), checkpoint, {}, {}
        ),
        "task_id": lambda: saver.aput_writes(stored, [("ch", 1)], lone),
        "task_path": lambda: saver.aput_writes(stored, [("ch", 1)], "t1", lone),
        "writes[1] channel": lambda: saver.aput_writes(stored, [("ch", 1), (lone, 2)], "t1"),
    }
    for argument, call in calls.items():
        with pytest.raises(
            MemoryValidationError, match=rf"^{re.escape(argument)} .*lone surrogate"
        ):
            await call()
    assert [info.key for info in await store.blobs.list()] == before
