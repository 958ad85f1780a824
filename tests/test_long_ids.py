"""Ids at the contract's limit work on every backend (issue 12, item 2).

256 characters of 4-byte UTF-8 escape to 3,072 key characters; keys cut them
(``keys.id_segment``), so every key fits S3's 1,024 bytes and PostgreSQL's
index entry limit, and a store written before that moves in place on first
use (``makers_store._core.layout``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store import ContextStore
from makers_store._core import adapter_keys, keys
from makers_store._core.layout import LAYOUT
from makers_store.maintenance.copying import copy_store
from makers_store.maintenance.exporting import export_jsonl
from makers_store.maintenance.importing import import_jsonl
from makers_store.maintenance.index_repair import check_indexes
from makers_store.maintenance.inventory import iter_conversations
from tests.backends import ADAPTER_BACKENDS, BACKENDS, backend_url

CID = "😀" * 256
OTHER = "😀" * 255 + "😁"  # the same first 167 key characters as CID
USER = "用" * 256
KEY = "鍵" * 255 + "😀"
LIMIT = 1024  # S3's key limit, in bytes


async def fill(store: ContextStore) -> None:
    for cid in (CID, OTHER):
        await store.append_message(conversation_id=cid, role="user", content=cid[-1], user_id=USER)
        await store.bind(cid).state.set(KEY, {"cid": cid[-1]})
    await store.bind("😀" * 200).state.set(KEY, 1)  # no meta: state only


async def view(store: ContextStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cid in (CID, OTHER, "😀" * 200):
        meta = await store.get_conversation(conversation_id=cid)
        out[cid] = (
            None if meta is None else meta.to_dict(),
            [(m.role, m.content) for m in await store.get_messages(conversation_id=cid)],
            await store.bind(cid).state.items(),
        )
    listed = await store.list_conversations(limit=1)
    second = await store.list_conversations(limit=1, after=listed.next_cursor)
    out["listing"] = [c.conversation_id for c in listed.items + second.items]
    mine = await store.list_conversations(user_id=USER)
    out["user"] = sorted(c.conversation_id for c in mine.items)
    out["walk"] = sorted([cid async for cid, _ in iter_conversations(store.runner)])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
async def test_ids_of_256_four_byte_characters_work_on_every_backend(
    backend: str, tmp_path: Path
) -> None:
    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        await fill(store)
        seen = await view(store)
        assert seen[CID][1] == [("user", "😀")] and seen[OTHER][1] == [("user", "😁")]
        assert seen[CID][2] == {KEY: {"cid": "😀"}} and seen[OTHER][2] == {KEY: {"cid": "😁"}}
        assert sorted(seen["listing"]) == sorted([CID, OTHER]) == seen["user"]
        assert seen["walk"] == sorted([CID, OTHER, "😀" * 200])
        stored = [info.key for info in await store.blobs.list()]
        assert max(len(key.encode()) for key in stored) < LIMIT
        assert (await check_indexes(store.runner)).ok
        # a backup of them restores, and so does a copy
        out = io.StringIO()
        await export_jsonl(store.runner, out.write)
        restored = makers_store.open_store("memory://")
        await import_jsonl(restored.runner, lambda: out.getvalue().splitlines(keepends=True))
        assert await view(restored) == seen
        copied = makers_store.open_store("memory://")
        await copy_store(store.runner, copied.runner)
        assert await view(copied) == seen
        # deleting takes everything, the names of the cut ids too
        for cid in (CID, OTHER, "😀" * 200):
            await store.delete_conversation(conversation_id=cid)
        assert [info.key for info in await store.blobs.list()] == [keys.LAYOUT_KEY]


@pytest.mark.parametrize("backend", ADAPTER_BACKENDS)
async def test_framework_adapters_take_ids_at_the_limit(backend: str, tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        saver = store.langgraph_checkpointer
        config: Any = {"configurable": {"thread_id": CID, "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        stored = await saver.aput(config, checkpoint, {"source": "input", "step": -1}, {})
        assert (await saver.aget_tuple(stored)) is not None
        threads = {item.config["configurable"]["thread_id"] async for item in saver.alist(None)}
        assert threads == {CID}
        # a Claude session bound to the conversation (its id is no UUID)
        sessions = store.claude_session_store()
        sid = await store.claude_session_binding(CID)
        entry: Any = {"type": "user", "uuid": "u1"}
        await sessions.append({"project_key": "p", "session_id": sid}, [entry])
        assert [s["session_id"] for s in await sessions.list_sessions("p")] == [sid]
        await store.delete_conversation(conversation_id=CID)
        assert await sessions.list_sessions("p") == []
        left = [info.key for info in await store.blobs.list()]
        # the project's clock stays (kept on transactional backends only)
        clock = adapter_keys.claude_clock_key("p")
        assert left in ([keys.LAYOUT_KEY], [keys.LAYOUT_KEY, clock])


# Ids whose old (uncut) keys fit S3's limit, as an earlier version wrote them.
OLD_CID, OLD_USER, OLD_KEY = "界" * 60, "用" * 40, "鍵" * 30


def uncut(key: str) -> str:
    """The earlier version's key for one of ours: id segments not cut."""
    for text in (OLD_CID, OLD_USER, OLD_KEY):
        key = key.replace(keys.id_segment(text), keys.escape(text))
    return key


async def old_view(store: ContextStore) -> Any:
    meta = await store.get_conversation(conversation_id=OLD_CID)
    return (
        None if meta is None else meta.to_dict(),
        [m.content for m in await store.get_messages(conversation_id=OLD_CID)],
        await store.bind(OLD_CID).state.items(),
        [c.conversation_id for c in (await store.list_conversations(user_id=OLD_USER)).items],
        [cid async for cid, _ in iter_conversations(store.runner)],
    )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_store_from_before_cut_ids_moves_in_place(backend: str, tmp_path: Path) -> None:
    url = backend_url(backend, tmp_path)
    fresh = makers_store.open_store("memory://")
    for n in range(3):
        await fresh.append_message(
            conversation_id=OLD_CID, role="user", content=f"m{n}", user_id=OLD_USER
        )
    await fresh.bind(OLD_CID).state.set(OLD_KEY, {"n": 1})
    expected = await old_view(fresh)
    # The same blobs under the keys an earlier version used: id segments
    # whole, no names, no layout marker (written below the store's API).
    blobs = makers_store.open_blob_store(url)
    for info in await fresh.blobs.list():
        blob = await fresh.blobs.get(info.key)
        assert blob is not None
        if info.key != keys.LAYOUT_KEY and "/x/names/" not in info.key:
            await blobs.put(uncut(info.key), blob.data)
    written = [info.key for info in await blobs.list()]
    assert any(keys.current_form(key) != key for key in written)
    async with ContextStore(blobs) as store:
        assert await old_view(store) == expected  # moved on first use
        marker = await store.blobs.get(keys.LAYOUT_KEY)
        assert marker is not None and marker.data == LAYOUT
        assert all(keys.current_form(info.key) == info.key for info in await store.blobs.list())
        assert (await check_indexes(store.runner)).ok
