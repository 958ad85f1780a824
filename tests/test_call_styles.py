"""The platform's Python calling styles (spec platform-runtime.md section 3):
every store method positionally in the platform's order, by keyword, and
mixed, async and sync; a bound store (``ctx.store``) defaulting the
conversation; the runtime docs' one-argument ``update_message`` /
``delete_message``; ``bind(None, run_id=...)``; the store itself as a Claude
``SessionStore``; and an awaitable ``checkpointer.delete_thread``."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import get_session_info_from_store, project_key_for_directory
from claude_agent_sdk._internal.session_store_validation import _store_implements
from claude_agent_sdk.testing.session_store_conformance import run_session_store_conformance
from claude_agent_sdk.types import SessionKey, SessionStore
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

import makers_store
from makers_store import ContextStore, MemoryValidationError
from makers_store.adapters.langgraph.checkpoints import MakersCheckpointSaver
from makers_store.clock import FixedClock, counting_suffixes
from tests.backends import BACKENDS, backend_url

#: the in-process and file backends: call styles do not depend on the backend's
#: network protocol, which test_api.py covers on every backend
FAST = [kind for kind in BACKENDS if kind in ("memory", "stepwise", "sqlite")]
FORMS = ["positional", "keyword", "mixed"]
KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}


@pytest.fixture(params=FAST)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)


@pytest.fixture
async def store(url: str) -> AsyncIterator[ContextStore]:
    async with makers_store.open_store(url, clock=FixedClock(), ids=counting_suffixes()) as opened:
        yield opened


def call(method: Callable[..., Any], form: str, arguments: dict[str, Any]) -> Any:
    """``method`` called with ``arguments`` (written in the platform's order)
    all positionally, all by keyword, or the first positionally and the rest
    by keyword."""
    values = list(arguments.values())
    if form == "positional":
        return method(*values)
    if form == "keyword":
        return method(**arguments)
    rest = dict(list(arguments.items())[1:])
    return method(values[0], **rest)


async def every_method(store: Any, form: str) -> None:
    """Each public method once, in ``form``; async or sync ``store``."""

    async def do(name: str, **arguments: Any) -> Any:
        result = call(getattr(store, name), form, arguments)
        return await result if inspect.isawaitable(result) else result

    mid = await do(
        "append_message",
        conversation_id="c", role="user", content="hi", metadata={"k": 1}, user_id="u1",
    )  # fmt: skip
    [reply] = await do(
        "append_messages",
        conversation_id="c", messages=[{"role": "assistant", "content": "yo"}], user_id="u1",
    )  # fmt: skip
    newest = await do("get_messages", conversation_id="c", limit=1, order="desc")
    assert [m.message_id for m in newest] == [reply]
    later = await do("get_messages", conversation_id="c", limit=5, order="asc", after=mid)
    assert [m.message_id for m in later] == [reply]
    earlier = await do(
        "get_messages", conversation_id="c", limit=5, order="asc", after=None, before=reply
    )
    assert [(m.message_id, m.metadata) for m in earlier] == [(mid, {"k": 1})]
    updated = await do(
        "update_message", conversation_id="c", message_id=mid, content="hi!", metadata={"e": 1}
    )
    assert (updated.content, updated.metadata) == ("hi!", {"e": 1})
    await do("delete_message", conversation_id="c", message_id=reply)
    meta = await do("get_conversation", conversation_id="c")
    assert meta is not None and meta.message_count == 1
    page = await do(
        "list_conversations", limit=1, order="desc", after=None, before=None, user_id="u1"
    )
    assert [item.conversation_id for item in page.items] == ["c"]
    merged = await do("update_conversation", conversation_id="c", metadata={"title": "t"})
    assert merged.metadata == {"title": "t"}
    sid = await do("claude_session_binding", conversation_id="c")
    assert uuid.UUID(sid) and await do("claude_session_binding", conversation_id="c") == sid
    session = await do("openai_session", session_id="c", max_items=3)
    assert (session.session_id, session.max_items) == ("c", 3)

    await do("append", key=KEY, entries=[{"type": "x", "uuid": "e1"}])
    assert await do("load", key=KEY) == [{"type": "x", "uuid": "e1"}]
    assert [s["session_id"] for s in await do("list_sessions", project_key="proj")] == ["sess"]
    [summary] = await do("list_session_summaries", project_key="proj")
    assert summary["session_id"] == "sess"
    sub: SessionKey = {**KEY, "subpath": "subagents/a"}
    await do("append", key=sub, entries=[{"type": "x"}])
    assert await do("list_subkeys", key={**KEY}) == ["subagents/a"]
    await do("delete", key=KEY)
    assert await do("load", key=KEY) is None

    await do("clear_messages", conversation_id="c")
    assert await do("get_messages", conversation_id="c") == []
    assert await do("get_conversation", conversation_id="c") is not None  # clear keeps meta
    await do("delete_conversation", conversation_id="c")
    assert await do("get_conversation", conversation_id="c") is None


@pytest.mark.parametrize("form", FORMS)
async def test_every_method_in_every_form(store: ContextStore, form: str) -> None:
    await every_method(store, form)


@pytest.mark.parametrize("form", FORMS)
def test_every_sync_method_in_every_form(url: str, form: str) -> None:
    """Cloud functions call the blocking store positionally too."""
    with makers_store.open_sync_store(url) as store:
        asyncio.run(every_method(store, form))


# --- a bound store (ctx.store) ------------------------------------------------


async def test_a_bound_store_defaults_the_conversation(store: ContextStore) -> None:
    ctx_store = store.bind("c")
    mid = await ctx_store.append_message(role="user", content="hi")
    [second] = await ctx_store.append_messages(messages=[{"role": "assistant", "content": "a"}])
    assert [m.message_id for m in await ctx_store.get_messages()] == [mid, second]
    assert [m.message_id for m in await ctx_store.get_messages(limit=1, order="desc")] == [second]
    # the runtime docs' one-argument forms: the message id, in the bound conversation
    assert (await ctx_store.update_message(mid, content="hi!")).content == "hi!"
    assert (await ctx_store.update_message(message_id=mid, metadata={"m": 1})).metadata == {
        "m": 1
    }
    await ctx_store.delete_message(second)
    assert [m.content for m in await store.get_messages("c")] == ["hi!"]
    third = await ctx_store.append_message(role="user", content="x")
    await ctx_store.delete_message(message_id=third)
    # the two-argument form and an explicit conversation still win over the binding
    other = await ctx_store.append_message("other", "user", "o")
    await ctx_store.update_message("other", other, "o!")
    assert [m.content for m in await ctx_store.get_messages("other")] == ["o!"]
    assert (await ctx_store.update_conversation(metadata={"t": 1})).metadata == {"t": 1}
    meta = await ctx_store.get_conversation()
    assert meta is not None and meta.conversation_id == "c" and meta.message_count == 1
    assert await ctx_store.claude_session_binding() == await store.claude_session_binding("c")
    await ctx_store.clear_messages()
    assert await store.get_messages("c") == [] and len(await store.get_messages("other")) == 1
    await ctx_store.delete_conversation()
    assert await store.get_conversation("c") is None


def test_a_bound_sync_store_defaults_the_conversation(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        ctx_store = store.bind("c")
        mid = ctx_store.append_message(role="user", content="hi")
        ctx_store.update_message(mid, content="hi!")
        assert [m.content for m in store.get_messages("c")] == ["hi!"]
        ctx_store.delete_message(mid)
        assert ctx_store.get_messages() == []


UNBOUND_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("append_message", {"role": "user", "content": "x"}),
    ("append_messages", {"messages": [{"role": "user", "content": "x"}]}),
    ("get_messages", {}),
    ("update_message", {"message_id": "msg_0000000000_t1", "content": "x"}),
    ("delete_message", {"message_id": "msg_0000000000_t1"}),
    ("clear_messages", {}),
    ("get_conversation", {}),
    ("update_conversation", {"metadata": {"t": 1}}),
    ("delete_conversation", {}),
    ("claude_session_binding", {}),
]


@pytest.mark.parametrize("view", ["opened", "bind(None)"])
@pytest.mark.parametrize(("name", "arguments"), UNBOUND_CALLS)
async def test_omitting_the_conversation_needs_a_bound_store(
    store: ContextStore, view: str, name: str, arguments: dict[str, Any]
) -> None:
    unbound = store if view == "opened" else store.bind(None, run_id="run_1")
    with pytest.raises(MemoryValidationError, match="conversation_id is required"):
        await getattr(unbound, name)(**arguments)
    assert await store.blobs.list("") == []  # nothing was written


async def test_the_one_argument_message_forms_on_an_unbound_store(store: ContextStore) -> None:
    mid = await store.append_message("c", "user", "hi")
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        await store.update_message(mid, content="x")
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        await store.delete_message(mid)
    assert [m.content for m in await store.get_messages("c")] == ["hi"]


async def test_misread_arguments_get_a_helpful_error(store: ContextStore) -> None:
    ctx_store = store.bind("c")
    mid = await ctx_store.append_message(role="user", content="hi")
    cases: list[tuple[Callable[[], Any], str]] = [
        # content passed as the second positional, where the message id goes
        (lambda: ctx_store.update_message(mid, "text"), r"update_message\(message_id, content="),
        (lambda: ctx_store.update_message(mid, {"text": "t"}), "content="),  # type: ignore[arg-type]
        (lambda: ctx_store.delete_message(mid, "extra"), r"delete_message\(message_id\)"),
        # one argument that is no message id (a conversation id, say)
        (lambda: ctx_store.update_message("c", content="x"), "read as the message id"),
        (lambda: ctx_store.delete_message("c"), "read as the message id"),
        (lambda: ctx_store.update_message(content="x"), "message_id is required"),
        (lambda: ctx_store.delete_message(), "message_id is required"),
        (lambda: store.append_message("c", "user"), "content is required"),
        (lambda: store.append_message("c"), "role is required"),
        (lambda: store.append_messages("c"), "messages is required"),
        (lambda: store.update_conversation("c"), "metadata is required"),
    ]
    for make_call, message in cases:
        with pytest.raises(MemoryValidationError, match=message):
            await make_call()
    [kept] = await store.get_messages("c")
    assert (kept.message_id, kept.content, kept.metadata) == (mid, "hi", None)
    assert (await store.get_conversation("c")).metadata == {}  # type: ignore[union-attr]


# --- bind(None, run_id=...) ----------------------------------------------------


async def test_bind_none_is_an_unbound_view_with_a_run_id(store: ContextStore) -> None:
    view = store.bind(None, run_id="run_7")
    assert (view.conversation_id, view.run_id) == (None, "run_7")
    assert (store.run_id, store.bind("c").run_id) == (None, None)
    assert store.bind("c", run_id="run_8").run_id == "run_8"
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        await view.state.set("k", 1)
    await store.append_message("c", "user", "hi")
    assert [m.content for m in await view.get_messages("c")] == ["hi"]  # the same data
    await view.close()  # a view does not close the store it shares
    assert len(await store.get_messages("c")) == 1
    for bad in ("", 7):
        with pytest.raises(MemoryValidationError, match="run_id"):
            store.bind("c", run_id=bad)  # type: ignore[arg-type]


def test_sync_bind_none_with_a_run_id(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        view = store.bind(None, run_id="run_7")
        assert (view.conversation_id, view.run_id) == (None, "run_7")
        store.append_message("c", "user", "hi")
        assert len(view.get_messages("c")) == 1


# --- the OpenAI session's metadata ---------------------------------------------

USER_ITEM = {"role": "user", "content": "hi"}
CALL_ITEM = {"type": "function_call", "call_id": "k", "name": "f", "arguments": "{}"}


async def test_openai_items_carry_the_platform_metadata(store: ContextStore) -> None:
    session = store.bind("c", run_id="run_turn1").openai_session("c")
    await session.add_items([USER_ITEM])
    await session.add_items([CALL_ITEM])
    assert [m.metadata for m in await store.get_messages("c")] == [
        {"agent_sdk_session": True, "item_type": kind, "run_id": "run_turn1"}
        for kind in ("message", "function_call")
    ]
    # without a run: one id per session object, shared by everything it saves
    first, second = store.openai_session("d"), store.openai_session("d")
    await first.add_items([USER_ITEM, CALL_ITEM])
    await second.add_items([USER_ITEM])
    run_ids = [m.metadata["run_id"] for m in await store.get_messages("d")]  # type: ignore[index]
    assert run_ids == [first.run_id, first.run_id, second.run_id]
    assert first.run_id != second.run_id and first.run_id.startswith("run_")


async def test_openai_session_still_reads_the_old_marker(store: ContextStore) -> None:
    """Stores written before the platform's keys keep working as sessions."""
    old = [{"role": "user", "content": "old"}, {"type": "reasoning", "id": "r", "summary": []}]
    await store.append_messages(
        "c",
        [
            {"role": role, "content": item, "metadata": {"openai_agents_item": True, "type": t}}
            for role, item, t in [("user", old[0], "message"), ("assistant", old[1], "reasoning")]
        ],
    )
    await store.append_message("c", "user", "the app's own message")
    session = store.openai_session("c")
    await session.add_items([USER_ITEM])
    assert await session.get_items() == [*old, USER_ITEM]
    assert await session.get_items(2) == [old[1], USER_ITEM]
    assert await session.pop_item() == USER_ITEM
    assert await session.pop_item() == old[1]
    await session.clear_session()
    assert await session.get_items() == []
    assert [m.content for m in await store.get_messages("c")] == ["the app's own message"]


# --- ctx.store as a Claude SessionStore ----------------------------------------


async def test_the_store_itself_passes_the_session_store_conformance(url: str) -> None:
    opened: list[ContextStore] = []

    async def fresh() -> SessionStore:
        store = makers_store.open_store(url)
        opened.append(store)
        for info in await store.blobs.list(""):  # each contract wants an empty store
            await store.blobs.delete(info.key)
        return store.bind("chat", run_id="run_1")  # what ctx.store is

    probe = await fresh()
    for method in ("list_sessions", "list_session_summaries", "delete", "list_subkeys"):
        assert _store_implements(probe, method), method  # so no contract is skipped
    try:
        await run_session_store_conformance(fresh)
    finally:
        for store in opened:
            await store.close()


async def test_session_store_ctx_store_reads_what_the_adapter_wrote(
    store: ContextStore, tmp_path: Path
) -> None:
    ctx_store = store.bind("web chat")
    sid = await ctx_store.claude_session_binding()
    key: SessionKey = {"project_key": project_key_for_directory(str(tmp_path)), "session_id": sid}
    prompt = {
        "type": "user", "uuid": "u-1", "sessionId": sid, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hello there"},
    }  # fmt: skip
    await store.claude_session_store().append(key, [prompt])  # type: ignore[list-item]
    info = await get_session_info_from_store(ctx_store, sid, directory=str(tmp_path))
    assert info is not None and info.summary == "hello there"
    await ctx_store.delete(key)
    assert await store.claude_session_store().load(key) is None


# --- an awaitable checkpointer.delete_thread ------------------------------------


async def _checkpoint(saver: MakersCheckpointSaver, thread_id: str) -> None:
    checkpoint = generate_checkpoint(channel_values={"k": "v"}, channel_versions={"k": 1})
    await saver.aput(generate_config(thread_id), checkpoint, generate_metadata(), {"k": 1})


async def _exists(saver: MakersCheckpointSaver, thread_id: str) -> bool:
    return await saver.aget_tuple(generate_config(thread_id)) is not None


async def test_delete_thread_is_awaitable_on_the_loop(store: ContextStore) -> None:
    saver = store.langgraph_checkpointer
    for thread in ("awaited", "not awaited", "from a thread", "kept"):
        await _checkpoint(saver, thread)
    assert await saver.delete_thread("awaited") is None  # the docs' style
    assert not await _exists(saver, "awaited")
    task = saver.delete_thread("not awaited")
    for _ in range(200):  # the task runs while the loop does, awaited or not
        if task.done():
            break
        await asyncio.sleep(0.005)
    assert task.done() and not await _exists(saver, "not awaited")
    assert await asyncio.to_thread(saver.delete_thread, "from a thread") is None
    assert not await _exists(saver, "from a thread")
    assert await _exists(saver, "kept")
    with pytest.raises(MemoryValidationError, match="thread_id"):
        saver.delete_thread("")  # raised at the call, not later in a task


def test_sync_delete_thread_without_a_loop(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        saver = store.langgraph_checkpointer
        try:
            config = generate_config("t")
            saver.put(config, generate_checkpoint(), generate_metadata(), {})
            assert saver.get_tuple(config) is not None
            assert saver.delete_thread("t") is None
            assert saver.get_tuple(config) is None
        finally:
            saver.close()
