"""The adapters as the frameworks' own test suites use them: from several
event loops and threads, sync then async, many short loops. On every
backend, PostgreSQL and S3 included (they failed there and nowhere else).

Each test is the way of calling that a framework's suite exercises, written
for our adapters: the OpenAI Agents SDK's ``Runner.run_sync`` (a new loop
per call) and its threaded session test (threads with loops of their own,
closed bare), LangGraph's checkpointer used sync then async
(``TestMemorySaver::test_asearch``), LangGraph's store under a large async
batch (``test_large_batches_async``), and the Claude SDK's session store
from several threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

import makers_store
from tests.adapters.openai_worker import RUN_CONFIG
from tests.test_any_loop import bare_loop_run, held

pytestmark = pytest.mark.on_s3


def run_sync_in_a_new_loop(agent: Agent[Any], text: str, session: Any) -> Any:
    """``Runner.run_sync`` as a script or a Flask view calls it, here from a
    thread whose default loop is new (and closed after, as the SDK's test does)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, text, session=session, run_config=RUN_CONFIG)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


async def test_openai_run_sync_twice_with_one_session_then_close(url: str) -> None:
    store = makers_store.open_store(url)
    session = store.openai_session("chat")
    model = ScriptedModel([[assistant_message("San Francisco")], [assistant_message("California")]])
    agent = Agent(name="a", model=model)
    first = await asyncio.to_thread(run_sync_in_a_new_loop, agent, "Which city?", session)
    second = await asyncio.to_thread(run_sync_in_a_new_loop, agent, "Which state?", session)
    assert (first.final_output, second.final_output) == ("San Francisco", "California")
    last = model.last_call
    assert last is not None and len(last.input) == 3  # the first turn's two items, then the new
    assert len(await session.get_items()) == 4
    await store.close()  # from yet another loop, after theirs closed
    assert held(store) == 0


async def test_openai_one_session_from_threads_each_with_its_own_loop(url: str) -> None:
    async with makers_store.open_store(url) as store:
        session = store.openai_session("concurrent")
        items: list[Any] = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

        def add(item: Any) -> None:
            bare_loop_run(session.add_items([item]))  # new loop, run, bare close

        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
            list(pool.map(add, items))
        found = {item["content"] for item in await session.get_items()}  # type: ignore[index]
        assert found == {f"Message {i}" for i in range(10)}


async def test_langgraph_checkpointer_sync_then_async(url: str) -> None:
    async with makers_store.open_store(url) as store:
        # Built outside any event loop (a sync fixture), so its sync calls run
        # on the adapter's own portal loop, and the async ones on this loop.
        saver = await asyncio.to_thread(lambda: store.langgraph_checkpointer)
        for thread_id, ns in (("thread-1", ""), ("thread-2", ""), ("thread-2", "inner")):
            checkpoint = generate_checkpoint(channel_values={"k": thread_id})
            saver.put(generate_config(thread_id, checkpoint_ns=ns), checkpoint,
                      generate_metadata(source="input"), {})  # fmt: skip
        listed = [item async for item in saver.alist(None)]
        assert len(listed) == 3
        thread_2: Any = {"configurable": {"thread_id": "thread-2"}}
        by_thread = [item async for item in saver.alist(thread_2)]
        assert {item.config["configurable"]["checkpoint_ns"] for item in by_thread} == {"", "inner"}
        assert len(list(saver.list(None))) == 3  # and sync again


async def test_langgraph_store_large_async_batch(url: str) -> None:
    n, m = 12, 4
    async with makers_store.open_store(url) as store:
        lg = store.langgraph_store
        calls: list[Any] = []
        for j in range(m):
            namespace = ("test", "foo", "bar", "baz", str(j % 2))
            for i in range(n):
                calls += [
                    lg.aput(namespace, f"key{i}", value={"foo": f"bar{i}"}),
                    lg.aget(namespace, f"key{i}"),
                    lg.alist_namespaces(prefix=None, max_depth=j + 1),
                    lg.asearch(("test",)),
                    lg.aput(namespace, f"key{i}", value={"foo": f"bar{i}"}),
                    lg.adelete(namespace, f"key{i}"),
                ]
        assert len(await asyncio.gather(*calls)) == n * m * 6


async def test_claude_session_store_from_threads_each_with_its_own_loop(url: str) -> None:
    async with makers_store.open_store(url) as store:
        sessions = store.claude_session_store()
        key: Any = {"project_key": "proj", "session_id": "sess"}

        def append(n: int) -> None:
            asyncio.run(sessions.append(key, [{"type": "x", "uuid": f"u{n}", "n": n}]))

        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(append, range(8)))
        loaded = await sessions.load(key)
        assert loaded is not None and sorted(e["n"] for e in loaded) == list(range(8))
