"""Framework data under a conversation (a real LangGraph run, Claude
transcripts, OpenAI session items) and index health, in the browser."""

from __future__ import annotations

import operator
import uuid
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, answer, wait_live
from .test_studio_live import LIVE_MS, in_another_process


class Trip(TypedDict):
    steps: Annotated[list[str], operator.add]


def plan(state: Trip) -> Trip:
    return {"steps": ["planned"]}


def book(state: Trip) -> Trip:
    return {"steps": ["booked"]}


def approve(state: Trip) -> Trip:
    answer = interrupt({"question": "book it?"})
    return {"steps": [f"approved: {answer}"]}


def run_graph(store: makers_store.SyncContextStore, cid: str, *, ask: bool) -> None:
    graph = StateGraph(Trip)
    graph.add_node("plan", plan)
    graph.add_node("book", book)
    graph.add_edge(START, "plan")
    if ask:
        graph.add_node("approve", approve)
        graph.add_edge("plan", "approve")
        graph.add_edge("approve", "book")
    else:
        graph.add_edge("plan", "book")
    graph.add_edge("book", END)
    app = graph.compile(checkpointer=store.langgraph_checkpointer)
    app.invoke({"steps": []}, {"configurable": {"thread_id": cid}})


def test_a_langgraph_run_shows_as_a_checkpoint_timeline(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, artifacts: Path
) -> None:
    seed.append_message(cid, "user", "plan my trip")
    run_graph(seed, cid, ask=False)
    stored = list(seed.langgraph_checkpointer.list({"configurable": {"thread_id": cid}}))
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    timeline = page.locator("#checkpoints .checkpoint")
    expect(timeline).to_have_count(len(stored))
    newest = timeline.first
    expect(newest).to_have_attribute(
        "data-checkpoint-id", stored[0].config["configurable"]["checkpoint_id"]
    )
    expect(newest).to_contain_text(f"step {stored[0].metadata['step']}")
    parent = stored[0].parent_config
    assert parent is not None
    expect(newest).to_contain_text(f"parent {parent['configurable']['checkpoint_id']}")
    newest.locator("summary", has_text="channel values").click()
    expect(newest).to_contain_text('"booked"')
    expect(timeline.last).to_contain_text("input")
    newest.locator("a", has_text=parent["configurable"]["checkpoint_id"]).click()
    assert page.url.endswith(f"#cp-{parent['configurable']['checkpoint_id']}")
    page.locator("#panel-frameworks").screenshot(path=artifacts / "langgraph-timeline.png")


def test_an_interrupt_and_a_checkpoint_written_elsewhere_show_live(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "book it")
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    expect(page.locator("#checkpoints .checkpoint")).to_have_count(0)
    in_another_process(
        studio.store_url,
        "from tests.studio.test_studio_frameworks import run_graph\n"
        f"run_graph(store, {cid!r}, ask=True)",
    )
    newest = page.locator("#checkpoints .checkpoint").first
    expect(newest.locator(".badge.warn")).to_have_text("interrupted", timeout=LIVE_MS)
    expect(newest).to_contain_text("book it?")


def test_claude_transcripts_openai_items_and_a_paused_run_state(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore
) -> None:
    cid = str(uuid.uuid4())  # a UUID conversation id is its own Claude session id
    seed.append_message(cid, "user", "hi")
    entry = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "message": {"role": "user", "content": "hello claude"},
    }
    sub = {
        "type": "assistant",
        "uuid": str(uuid.uuid4()),
        "message": {"content": "from the subagent"},
    }
    in_another_process(
        studio.store_url,
        "import asyncio\n"
        "async def main():\n"
        f"    async with makers_store.open_store({studio.store_url!r}) as s:\n"
        "        claude = s.claude_session_store()\n"
        f"        main = {{'project_key': 'proj', 'session_id': {cid!r}}}\n"
        f"        await claude.append(main, [{entry!r}])\n"
        f"        await claude.append({{**main, 'subpath': 'agent-1'}}, [{sub!r}])\n"
        f"        items = [{{'role': 'user', 'content': 'openai item'}}]\n"
        f"        await s.openai_session({cid!r}).add_items(items)\n"
        "asyncio.run(main())",
    )
    run_state = '{"$schemaVersion": "1.4", "currentAgent": {"name": "Booker"}, "currentStep": {}}'
    seed.bind(cid).state.set("openai_run_state", run_state)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    frameworks = page.locator("#panel-frameworks")
    expect(frameworks).to_contain_text("Claude session transcripts")
    expect(frameworks.locator(".transcript-claude")).to_have_count(2)
    frameworks.locator(".transcript-claude summary").first.click()
    expect(frameworks).to_contain_text("hello claude")
    expect(frameworks).to_contain_text("subagent agent-1")
    page.click('button[data-action="openai-items"]')
    expect(frameworks.locator(".openai-item")).to_have_count(1)
    expect(frameworks.locator(".openai-item")).to_contain_text("openai item")
    expect(page.locator("#messages .message").last).to_contain_text("OpenAI session item")
    expect(page.locator("#panel-state .badge")).to_have_text(
        "OpenAI RunState (paused run of Booker)"
    )


def test_index_health_checks_and_rebuilds(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    seed.append_message(cid, "user", "hi")
    in_another_process(  # lose one index entry, as a crash on object storage could
        studio.store_url,
        "import asyncio\n"
        "async def main():\n"
        f"    async with makers_store.open_store({studio.store_url!r}) as s:\n"
        "        async for e in s.admin.iter_index_entries():\n"
        f"            if e.conversation_id == {cid!r}:\n"
        "                await s.blobs.delete(e.key)\n"
        "                return\n"
        "asyncio.run(main())",
    )
    page.goto(studio.at("/index"))
    page.click('button[data-action="index-check"]')
    expect(page.locator("#index-check")).to_contain_text("missing")
    expect(page.locator("#index-check")).to_contain_text(cid)
    page.click('button[data-action="index-rebuild"]')
    answer(page)
    expect(page.locator("#index-result")).to_contain_text('"created":1')
    page.click('button[data-action="index-check"]')
    expect(page.locator("#index-check tr").first).to_contain_text("true")
