"""The public reading and maintenance API: ``get_message``, the iterators over
messages and conversations, and ``store.admin`` (counts, index check and
rebuild, export/import, copy, raw blobs), async and through the sync facade."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore, MemoryValidationError, Portal, SyncContextStore
from makers_store.clock import FixedClock, counting_suffixes
from tests.backends import backend_url

MESSAGES = 230  # more than two pages of 100


async def _conversation(store: ContextStore, cid: str, count: int) -> list[str]:
    ids = []
    for start in range(0, count, 50):
        batch = [{"role": "user", "content": f"m{n}"} for n in range(start, min(count, start + 50))]
        ids += await store.append_messages(cid, batch)
    return ids


async def test_get_message_reads_one_message_or_none(store: ContextStore) -> None:
    ids = await _conversation(store, "c1", 3)
    message = await store.get_message("c1", ids[1])
    assert message is not None and message.content == "m1" and message.message_id == ids[1]
    assert (await store.bind("c1").get_message(ids[2])) == await store.get_message("c1", ids[2])
    await store.delete_message("c1", ids[0])
    assert await store.get_message("c1", ids[0]) is None
    assert await store.get_message("nope", ids[1]) is None
    unknown = ids[1][:-1] + ("x" if ids[1][-1] != "x" else "y")  # its seq, another suffix
    assert await store.get_message("c1", unknown) is None
    with pytest.raises(MemoryValidationError, match="message_id"):
        await store.get_message("c1", "")


async def test_iter_messages_walks_every_page_both_ways(store: ContextStore) -> None:
    ids = await _conversation(store, "c1", MESSAGES)
    assert [m.message_id async for m in store.iter_messages("c1")] == ids
    newest_first = [m.message_id async for m in store.iter_messages("c1", order="desc")]
    assert newest_first == ids[::-1]
    after = [m.message_id async for m in store.iter_messages("c1", after=ids[99], page_size=7)]
    assert after == ids[100:]
    before = [m.message_id async for m in store.iter_messages("c1", before=ids[150])]
    assert before == ids[:150][::-1]  # nearest first
    assert [m async for m in store.iter_messages("nope")] == []
    with pytest.raises(MemoryValidationError, match="page_size"):
        [m async for m in store.iter_messages("c1", page_size=0)]
    with pytest.raises(MemoryValidationError, match="mutually exclusive"):
        [m async for m in store.iter_messages("c1", after=ids[1], before=ids[2])]


async def test_iter_conversations_walks_every_page(store: ContextStore) -> None:
    for n in range(130):
        user = "u_even" if n % 2 == 0 else "u_odd"
        await store.append_message(f"c{n:03}", "user", "hi", user_id=user)
    listed = [meta.conversation_id async for meta in store.iter_conversations(page_size=50)]
    assert sorted(listed) == [f"c{n:03}" for n in range(130)] and len(set(listed)) == 130
    oldest_first = [meta.conversation_id async for meta in store.iter_conversations(order="asc")]
    assert oldest_first == listed[::-1]
    evens = [meta.conversation_id async for meta in store.iter_conversations("u_even")]
    assert sorted(evens) == [f"c{n:03}" for n in range(0, 130, 2)]


async def test_admin_counts_users_and_index(store: ContextStore) -> None:
    await _conversation(store, "c1", 5)
    await store.append_message("c2", "user", "hi", user_id="u_1")
    await store.bind("c2").state.set("k", 1)
    counts = await store.admin.counts()
    assert (counts.conversations, counts.messages, counts.state_entries) == (2, 6, 1)
    assert counts.index_entries == 3  # c1 and c2 in the recency index, c2 in u_1's
    assert await store.admin.count_conversations() == 2
    assert await store.admin.conversation_users("c2") == ["u_1"]
    assert await store.admin.conversation_users("nope") is None
    assert (await store.admin.check_index()).ok

    entries = [entry async for entry in store.admin.iter_index_entries()]
    assert len(entries) == 3 and all(entry.current for entry in entries)
    mine = [entry async for entry in store.admin.iter_index_entries(user_id="u_1")]
    assert [entry.conversation_id for entry in mine] == ["c2"]

    await store.blobs.delete(entries[0].key)  # lose one entry
    check = await store.admin.check_index()
    assert [drift.kind for drift in check.drift] == ["missing"]
    rebuilt: list[int] = []
    summary = await store.admin.rebuild_index(on_conversation=rebuilt.append)
    assert (summary.conversations, summary.created, summary.removed) == (2, 1, 0)
    assert sum(rebuilt) == 2 and (await store.admin.check_index()).ok


async def test_admin_lists_and_counts_users_and_framework_blobs(store: ContextStore) -> None:
    """``iter_user_ids`` walks the per-user indexes (a bounded id read back from
    its conversation's meta); ``counts`` counts them and the adapters' blobs."""
    long_user = "u_" + "é" * 150  # escaped, longer than a key segment: bounded
    await store.append_message("c1", "user", "hi", user_id="u_b")
    await store.append_message("c2", "user", "hi", user_id="u_a")
    await store.append_message("c2", "user", "again", user_id="u_b")
    await store.append_message("c3", "user", "hi", user_id=long_user)
    await store.append_message("c4", "user", "no user")
    await store.claude_session_store().append(
        {"project_key": "p", "session_id": "c4"}, [{"type": "user", "uuid": "e1"}]
    )
    users = [uid async for uid in store.admin.iter_user_ids()]
    assert sorted(users) == sorted(["u_a", "u_b", long_user])
    counts = await store.admin.counts()
    assert (counts.users, counts.conversations) == (3, 4)
    assert counts.adapter_blobs >= 1


async def test_admin_export_import_and_copy_between_stores(
    store: ContextStore, tmp_path: Path
) -> None:
    ids = await _conversation(store, "c1", 120)
    await store.bind("c1").state.set("k", {"v": 1})
    out = io.StringIO()
    exported = await store.admin.export_jsonl(out.write)
    assert (exported.conversations, exported.messages, exported.state_entries) == (1, 120, 1)
    lines = out.getvalue().splitlines(keepends=True)
    async with makers_store.open_store("memory://") as restored:
        seen: list[tuple[int, int]] = []
        counts = await restored.admin.import_jsonl(
            lambda: lines, on_conversation=lambda *a: seen.append(a)
        )
        assert counts.messages == 120 and seen == [(1, 1)]
        assert [m.message_id async for m in restored.iter_messages("c1")] == ids
    async with makers_store.open_store(f"sqlite:///{tmp_path}/copy.db") as copied:
        assert await store.admin.count_units() == 1
        report = await store.admin.copy_to(copied)
        assert (report.conversations, report.conversations_written) == (1, 1)
        assert (await store.admin.copy_to(copied)).conversations_unchanged == 1
        assert await copied.bind("c1").state.get("k") == {"v": 1}
        assert (await copied.admin.check_index()).ok
    with pytest.raises(MemoryValidationError, match="destination"):
        await store.admin.copy_to(store.bind("c1"))


async def test_admin_lists_and_reads_raw_blobs(store: ContextStore) -> None:
    for n in range(1_100):  # beyond two listing pages of 500
        await store.blobs.put(f"zz/{n:05}", b"%d" % n)
    keys = [info.key async for info in store.admin.list_blobs("zz/")]
    assert keys == [f"zz/{n:05}" for n in range(1_100)]
    few = [
        info.key async for info in store.admin.list_blobs("zz/", start_after="zz/00500", limit=3)
    ]
    assert few == ["zz/00501", "zz/00502", "zz/00503"]
    blob = await store.admin.get_blob("zz/00042")
    assert blob is not None and blob.data == b"42" and blob.size == 2
    assert await store.admin.get_blob("zz/none") is None
    with pytest.raises(MemoryValidationError, match="limit"):
        [info async for info in store.admin.list_blobs("zz/", limit=0)]
    with pytest.raises(MemoryValidationError, match="key"):
        await store.admin.get_blob("")


def test_sync_twins_return_iterators_and_take_sync_stores(tmp_path: Path) -> None:
    url = backend_url("sqlite", tmp_path)
    with makers_store.open_sync_store(url, clock=FixedClock(), ids=counting_suffixes()) as store:
        ids = store.append_messages("c1", [{"role": "user", "content": f"{n}"} for n in range(150)])
        walk = store.iter_messages("c1", page_size=10)
        assert [next(walk).message_id for _ in range(3)] == ids[:3]
        walk.close()  # ends the walk early, closing the async iterator on the portal
        assert [m.message_id for m in store.iter_messages("c1", order="desc")] == ids[::-1]
        assert [meta.conversation_id for meta in store.iter_conversations()] == ["c1"]
        message = store.get_message("c1", ids[7])
        assert message is not None and message.content == "7"
        assert store.admin.counts().messages == 150
        assert store.admin.check_index().ok
        assert [e.conversation_id for e in store.admin.iter_index_entries()] == ["c1"]
        assert any(info.key.startswith("c/") for info in store.admin.list_blobs("c/", limit=5))


def test_sync_copy_between_two_stores_on_one_portal(tmp_path: Path) -> None:
    """As ``makers-store copy`` does: both stores on one event loop, which the
    copy uses them from."""
    portal = Portal()
    source = SyncContextStore(makers_store.open_store(f"sqlite:///{tmp_path}/a.db"), portal)
    target = SyncContextStore(makers_store.open_store(f"sqlite:///{tmp_path}/b.db"), portal)
    try:
        source.append_message("c1", "user", "hi")
        steps: list[int] = []
        report = source.admin.copy_to(target, progress=steps.append)
        assert report.conversations_written == 1 and sum(steps) == source.admin.count_units()
        copied = target.get_messages("c1")
        assert [m.content for m in copied] == ["hi"]
    finally:
        portal.call(source.async_store.close())
        portal.call(target.async_store.close())
        portal.stop()


async def test_admin_finds_conversations_that_hold_only_state(store: ContextStore) -> None:
    await store.bind("s_only").state.set("step", 1)
    await store.bind("s_only").state.set("name", "hello")
    await store.bind("s_one").state.set("k", True)
    await store.append_message("with_meta", role="user", content="hi")
    await store.bind("with_meta").state.set("k", 2)  # state beside messages: not state-only
    found = [item.to_dict() async for item in store.admin.iter_state_only_conversations()]
    assert found == [
        {"conversation_id": "s_one", "state_entries": 1},
        {"conversation_id": "s_only", "state_entries": 2},
    ]
    assert (await store.list_conversations()).items[0].conversation_id == "with_meta"
    await store.bind("s_one").state.delete("k")
    await store.append_message("s_only", role="user", content="now it has messages")
    assert [item async for item in store.admin.iter_state_only_conversations()] == []
