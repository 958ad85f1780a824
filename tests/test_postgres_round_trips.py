"""Round trips per call on PostgreSQL, counted by the backend (``round_trips``:
waits for the server; ``statements``; ``rows_read``), so a program that reads
one row at a time, or waits for an answer nobody reads, fails here."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

import makers_store
from makers_store._core.activity import TOUCH_RESOLUTION_MS
from makers_store.blob_ops import Program, delete_many, put
from makers_store.clock import FixedClock
from makers_store.emulator.postgres.backend import PostgresBlobStore
from makers_store.errors import BackendError
from tests.servers.postgres import postgres_url


@pytest.fixture
async def store() -> AsyncIterator[makers_store.ContextStore]:
    opened = makers_store.open_store(postgres_url())
    await opened.get_conversation(conversation_id="warm-up")  # the pool and the layout check
    try:
        yield opened
    finally:
        await opened.close()


def backend(store: makers_store.ContextStore) -> PostgresBlobStore:
    blobs = store.blobs
    assert isinstance(blobs, PostgresBlobStore)
    return blobs


async def cost(store: makers_store.ContextStore, call: Callable[[], Awaitable[Any]]) -> int:
    """The round trips ``call`` costs."""
    blobs = backend(store)
    before = blobs.round_trips
    await call()
    return blobs.round_trips - before


async def test_a_page_of_conversations_is_a_listing_and_one_batch_read(
    store: makers_store.ContextStore,
) -> None:
    for n in range(30):
        await store.append_message(conversation_id=f"c{n}", role="user", content="hi")
    blobs = backend(store)
    statements, rows = blobs.statements, blobs.rows_read
    page: makers_store.ListConversationsResult | None = None

    async def first_page() -> None:
        nonlocal page
        page = await store.list_conversations(limit=20)

    assert await cost(store, first_page) == 2
    assert blobs.statements - statements == 2
    assert blobs.rows_read - rows == 21 + 21  # 21 entries (one to know there is more), 21 metas
    assert page is not None and len(page.items) == 20 and page.next_cursor is not None
    assert [item.conversation_id for item in page.items] == [f"c{n}" for n in range(29, 9, -1)]
    cursor = page.next_cursor
    rest: makers_store.ListConversationsResult | None = None

    async def next_page() -> None:
        nonlocal rest
        rest = await store.list_conversations(limit=20, after=cursor)

    # after a cursor, the probe behind it (for previous_cursor) is listed with the page
    statements = blobs.statements
    assert await cost(store, next_page) == 2
    assert blobs.statements - statements == 3  # two listings in one pipeline, one batch read
    assert rest is not None and [item.conversation_id for item in rest.items] == [
        f"c{n}" for n in range(9, -1, -1)
    ]
    assert rest.next_cursor is None and rest.previous_cursor is not None
    back = await store.list_conversations(limit=20, before=rest.previous_cursor)
    assert back.items == page.items and back.previous_cursor is None


async def test_a_page_of_messages_is_meta_and_one_scan(store: makers_store.ContextStore) -> None:
    await store.append_messages(
        conversation_id="c", messages=[{"role": "user", "content": str(n)} for n in range(200)]
    )
    for order in ("asc", "desc"):
        assert await cost(store, lambda o=order: store.get_messages("c", limit=50, order=o)) == 2
    newest = await store.get_messages("c", limit=3, order="desc")
    assert [m.content for m in newest] == ["199", "198", "197"]


async def test_appending_waits_for_what_it_reads_only(store: makers_store.ContextStore) -> None:
    await store.append_message(conversation_id="c", role="user", content="first")
    # meta (locked), the message created if absent, meta replaced if unchanged, COMMIT
    assert await cost(store, lambda: store.append_message("c", "user", "next")) == 4


async def test_checkpoint_listing_costs_the_same_for_any_limit(
    store: makers_store.ContextStore,
) -> None:
    saver = store.langgraph_checkpointer
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for n in range(15):
        checkpoint: Any = {
            "v": 1,
            "id": f"1ef4f797-8335-6428-8001-{n:012x}",
            "ts": "2024-07-31T20:14:19.804150+00:00",
            "channel_values": {"n": n},
            "channel_versions": {},
            "versions_seen": {},
        }
        config = await saver.aput(config, checkpoint, {"step": n}, {})
        await saver.aput_writes(config, [("a", n), ("b", -n)], task_id=f"task{n}")

    async def listed(limit: int) -> list[Any]:
        conf: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        return [item async for item in saver.alist(conf, limit=limit)]

    costs = {}
    for limit in (1, 3, 10):
        costs[limit] = await cost(store, lambda limit=limit: listed(limit))
    assert costs == {1: 2, 3: 2, 10: 2}  # the checkpoints, then every one's writes in one scan
    items = await listed(10)
    assert [item.metadata["step"] for item in items] == list(range(14, 4, -1))
    for item in items:
        n = item.metadata["step"]
        assert sorted((w[1], w[2]) for w in item.pending_writes or []) == [("a", n), ("b", -n)]


async def test_pending_writes_are_sent_without_waiting_for_answers(
    store: makers_store.ContextStore,
) -> None:
    saver = store.langgraph_checkpointer
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint: Any = {
        "v": 1,
        "id": "1ef4f797-8335-6428-8001-000000000001",
        "ts": "2024-07-31T20:14:19.804150+00:00",
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
    }
    config = await saver.aput(config, checkpoint, {}, {})
    writes = [("a", 1), ("b", 2)]
    assert await cost(store, lambda: saver.aput_writes(config, writes, task_id="task")) == 1
    # a retry of the same task keeps what the first attempt stored
    await saver.aput_writes(config, [("a", "retried"), ("b", "retried")], task_id="task")
    stored = await saver.aget_tuple(config)
    assert stored is not None
    assert sorted((w[1], w[2]) for w in stored.pending_writes or []) == [("a", 1), ("b", 2)]


async def test_session_items_read_about_what_they_return(store: makers_store.ContextStore) -> None:
    session = store.openai_session("s")
    await session.add_items([{"role": "user", "content": f"m{n}"} for n in range(200)])
    blobs = backend(store)
    rows = blobs.rows_read
    got: list[Any] = []

    async def read() -> None:
        got.extend(await session.get_items(limit=20))

    assert await cost(store, read) == 2
    assert blobs.rows_read - rows == 1 + 20  # meta and the 20 items
    assert [item["content"] for item in got] == [f"m{n}" for n in range(180, 200)]


async def test_a_unit_that_only_writes_is_all_or_nothing_without_begin(
    store: makers_store.ContextStore,
) -> None:
    blobs = backend(store)

    def writes(second: str) -> Program[None]:
        yield from put("first", b"1")
        yield from put(second, b"2")

    statements = blobs.statements
    assert await cost(store, lambda: blobs.run(writes("second"), write=True)) == 1
    # the two upserts (WITH clauses) and the change notice in one statement
    assert blobs.statements - statements == 1
    assert await blobs.get("second") is not None
    # a key past the server's index row limit (incompressible) fails the second
    # statement at the server, after the first was sent: the first is not kept either
    await blobs.delete("first")
    with pytest.raises(BackendError):
        await blobs.run(writes(secrets.token_urlsafe(9000)), write=True)
    assert await blobs.get("first") is None
    # a unit that waits for an answer begins an explicit transaction first
    statements = blobs.statements
    assert await cost(store, lambda: blobs.put("third", b"3", if_none_match=True)) == 2
    assert blobs.statements - statements == 4  # BEGIN, the insert, the notice, COMMIT


async def test_writes_of_one_key_in_a_unit_keep_their_order(
    store: makers_store.ContextStore,
) -> None:
    """The clauses of one statement see one snapshot: a unit that writes a
    key twice sends its writes one by one (still one round trip), in order."""
    blobs = backend(store)
    await blobs.put("gone", b"0")

    def rewrites() -> Program[None]:
        yield from put("k", b"1")
        yield from put("k", b"2")
        yield from delete_many(["gone"])
        yield from put("gone", b"back")

    statements = blobs.statements
    assert await cost(store, lambda: blobs.run(rewrites(), write=True)) == 1
    assert blobs.statements - statements == 5  # four writes and the notice
    k, gone = await blobs.get("k"), await blobs.get("gone")
    assert k is not None and k.data == b"2"
    assert gone is not None and gone.data == b"back"

    def many() -> Program[None]:
        for n in range(6):
            yield from put(f"n{n}", b"x")

    statements = blobs.statements
    assert await cost(store, lambda: blobs.run(many(), write=True)) == 1
    assert blobs.statements - statements == 7  # more than four: one by one
    assert [info.key for info in await blobs.list("n")] == [f"n{n}" for n in range(6)]


async def test_a_checkpoint_put_waits_once_and_reads_meta_once_a_second() -> None:
    """``aput`` is one round trip, as before the retention stamp (issue 36):
    the saver reads the thread's meta (to stamp it) once per resolution,
    whether it found meta to stamp, a stamp another writer left, or no meta."""
    clock = FixedClock(step=0)
    store = makers_store.open_store(postgres_url(), clock=clock)
    # the pool, and the layout marker the first write of a store writes
    await store.append_message(conversation_id="warm-up", role="user", content="hi")
    try:
        saver = store.langgraph_checkpointer
        blobs = backend(store)
        steps = itertools.count()

        async def put(thread_id: str) -> tuple[int, int]:
            """The round trips and statements of one ``aput`` with a run id."""
            n = next(steps)
            checkpoint: Any = {
                "v": 1,
                "id": f"1ef4f797-8335-6428-8001-{n:012x}",
                "ts": "2024-07-31T20:14:19.804150+00:00",
                "channel_values": {"n": n},
                "channel_versions": {},
                "versions_seen": {},
            }
            config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            trips, statements = blobs.round_trips, blobs.statements
            await saver.aput(config, checkpoint, {"run_id": "run-1"}, {})
            return blobs.round_trips - trips, blobs.statements - statements

        # no meta: BEGIN, meta FOR UPDATE (a wait), marker, checkpoint, notice, COMMIT
        assert await put("bare") == (2, 6)
        # then, for a resolution: the marker, the checkpoint and the notice in
        # one statement, one wait
        assert [await put("bare") for _ in range(3)] == [(1, 1)] * 3
        clock.now += TOUCH_RESOLUTION_MS - 1
        assert await put("bare") == (1, 1)
        clock.now += 1
        assert await put("bare") == (2, 6)  # a resolution later: meta is looked for again

        # meta to stamp: read it, replace it if unchanged (a wait), then as above
        await store.append_message(conversation_id="chat", role="user", content="hi")
        assert await put("chat") == (3, 7)
        assert [await put("chat") for _ in range(3)] == [(1, 1)] * 3
        clock.now += TOUCH_RESOLUTION_MS
        assert await put("chat") == (3, 7)

        # a stamp another writer left less than a resolution ago: read once, then skipped
        await store.append_message(conversation_id="shared", role="user", content="hi")
        await store.update_conversation("shared", metadata={"topic": "q3"})  # stamps meta
        clock.now += TOUCH_RESOLUTION_MS - 1
        assert await put("shared") == (2, 6)  # nothing to stamp yet
        assert await put("shared") == (1, 1)  # the other stamp covers this one
        clock.now += 1
        assert await put("shared") == (3, 7)  # that stamp is a resolution old: stamped anew

        # pending writes: the two inserts and the notice, one statement
        config: Any = {
            "configurable": {
                "thread_id": "bare",
                "checkpoint_ns": "",
                "checkpoint_id": "1ef4f797-8335-6428-8001-000000000000",
            }
        }
        trips, statements = blobs.round_trips, blobs.statements
        await saver.aput_writes(config, [("a", 1), ("b", 2)], task_id="task")
        assert (blobs.round_trips - trips, blobs.statements - statements) == (1, 1)
        stored = await saver.aget_tuple(config)
        assert stored is not None and len(stored.pending_writes or []) == 2
    finally:
        await store.close()
