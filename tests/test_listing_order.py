"""``list_conversations`` orders conversations of one millisecond by last write
(issue 12, item 26): newest first, and of two written in the same millisecond
the later one first, through every cursor, on every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore
from makers_store._core import keys
from makers_store._core.codec import ConversationRecord
from makers_store.clock import FixedClock
from makers_store.maintenance.index_repair import check_indexes
from tests.backends import BACKENDS, backend_url


async def walk(
    store: ContextStore, order: str, limit: int, user_id: str | None = None
) -> list[str]:
    found: list[str] = []
    cursor = None
    while True:
        page = await store.list_conversations(
            limit=limit, order=order, after=cursor, user_id=user_id
        )
        found += [item.conversation_id for item in page.items]
        if (cursor := page.next_cursor) is None:
            return found


@pytest.mark.parametrize("backend", BACKENDS)
async def test_conversations_written_in_one_millisecond_list_last_written_first(
    backend: str, tmp_path: Path
) -> None:
    clock = FixedClock(start=1_800_000_000_000, step=0)  # every write in one millisecond
    async with makers_store.open_store(backend_url(backend, tmp_path), clock=clock) as store:
        # written in id order: newest first is the opposite of id order
        written = ["c1", "c2", "c3", "c4", "c5"]
        for cid in written:
            await store.append_message(conversation_id=cid, role="user", content=cid, user_id="u")
        newest_first = list(reversed(written))
        for limit in (1, 2, 10):
            assert await walk(store, "desc", limit) == newest_first
            assert await walk(store, "asc", limit) == written
            assert await walk(store, "desc", limit, user_id="u") == newest_first
        # a later write in the same millisecond moves a conversation to the front
        await store.append_message(conversation_id="c4", role="user", content="again")
        assert (await walk(store, "desc", 2))[:2] == ["c4", "c5"]
        first = await store.list_conversations(limit=2)
        second = await store.list_conversations(limit=2, after=first.next_cursor)
        assert [c.conversation_id for c in second.items] == ["c3", "c2"]
        back = await store.list_conversations(limit=2, before=second.previous_cursor)
        assert [c.conversation_id for c in back.items] == ["c4", "c5"]
        assert (await check_indexes(store.runner)).ok


async def test_the_system_clock_orders_a_scripts_writes() -> None:
    """With the real clock, a loop's appends land many per millisecond."""
    store = makers_store.open_store("memory://")
    written = [f"conv-{n:03}" for n in range(200)]
    for cid in written:
        await store.append_message(conversation_id=cid, role="user", content="x")
    assert await walk(store, "desc", 50) == list(reversed(written))


async def test_entries_from_before_ties_still_list_and_move_on_the_next_write() -> None:
    """A store written by an earlier version: entries without a tie."""
    store = makers_store.open_store("memory://", clock=FixedClock(start=5_000, step=0))
    for cid in ("old", "older"):
        record = ConversationRecord(cid, created_at=4_000, last_message_at=4_000, user_ids=["u"])
        await store.blobs.put(keys.meta_key(cid), record.encode())
        for prefix in (keys.INDEX_ALL, keys.user_index_prefix("u")):
            await store.blobs.put(keys.index_key(prefix, (4_000, None), cid), b"")
    assert (await check_indexes(store.runner)).ok
    assert await walk(store, "desc", 1) == ["old", "older"]  # by id, as they were
    await store.append_message(conversation_id="older", role="user", content="x", user_id="u")
    assert await walk(store, "desc", 1) == ["older", "old"]
    assert await walk(store, "desc", 1, user_id="u") == ["older", "old"]
    entries = [info.key for info in await store.blobs.list(keys.INDEX_ALL)]
    assert [key.rsplit("/", 1)[1] for key in entries] == ["older", "old"]
    assert "~" in entries[0] and "~" not in entries[1]
    assert (await check_indexes(store.runner)).ok


async def test_an_export_keeps_the_order_of_one_millisecond(tmp_path: Path) -> None:
    import io

    from makers_store.maintenance.exporting import export_jsonl
    from makers_store.maintenance.importing import import_jsonl

    clock = FixedClock(start=1_800_000_000_000, step=0)
    store = makers_store.open_store("memory://", clock=clock)
    for cid in ("x", "y", "z"):
        await store.append_message(conversation_id=cid, role="user", content=cid)
    out = io.StringIO()
    await export_jsonl(store.runner, out.write)
    restored = makers_store.open_store(f"sqlite:///{tmp_path}/restored.db")
    async with restored:
        await import_jsonl(restored.runner, lambda: out.getvalue().splitlines(keepends=True))
        assert await walk(restored, "desc", 2) == ["z", "y", "x"]
