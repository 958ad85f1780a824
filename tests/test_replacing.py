"""``import`` replaces each conversation at once (issue 12, item 1).

Whether the import fails part-way, is killed at any step, or is read
meanwhile, each conversation of the file reads either as it was or as in the
file, never a mix, on every backend; running the import again finishes it.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store import ContextStore
from makers_store._core.runner import UnitRunner
from makers_store.emulator.memory.backend import MemoryMap
from makers_store.maintenance.exporting import export_jsonl
from makers_store.maintenance.importing import import_jsonl
from makers_store.maintenance.index_repair import check_indexes
from tests.backends import BACKENDS, backend_url
from tests.test_copying import copy_map
from tests.test_crash_ordering import Crash, CrashingBlobStore

CIDS = ("a", "b")


async def write_version(store: ContextStore, version: int, messages: int) -> None:
    """Conversations a and b as of ``version``: edited, deleted, appended messages."""
    for cid in CIDS:
        batch = [{"role": "user", "content": f"{cid}{n} v{version}"} for n in range(messages)]
        await store.append_messages(conversation_id=cid, messages=batch, user_id=f"u{version}")
        await store.bind(cid).state.set("version", version)
        await store.bind(cid).state.set(f"only in v{version}", True)
        await store.update_conversation(conversation_id=cid, metadata={"title": f"v{version}"})
    first = (await store.get_messages(conversation_id="a"))[0]
    await store.update_message(conversation_id="a", message_id=first.message_id, content="edited")
    second = (await store.get_messages(conversation_id="b"))[1]
    await store.delete_message(conversation_id="b", message_id=second.message_id)


async def conversation(store: ContextStore, cid: str) -> Any:
    meta = await store.get_conversation(conversation_id=cid)
    return (
        None if meta is None else meta.to_dict(),
        [m.to_dict() for m in await store.get_messages(conversation_id=cid, limit=100)],
        await store.bind(cid).state.items(),
    )


async def exported(store: ContextStore) -> list[str]:
    out = io.StringIO()
    await export_jsonl(store.runner, out.write)
    return out.getvalue().splitlines(keepends=True)


async def versions() -> tuple[list[str], MemoryMap, dict[str, Any], dict[str, Any]]:
    """(file of version 2, a store holding version 1, each version's conversations)."""
    newer = makers_store.open_store("memory://")
    await write_version(newer, 2, messages=6)
    older_store, _ = open_on(MemoryMap())
    await write_version(older_store, 1, messages=4)
    older = older_store.blobs.data  # type: ignore[attr-defined]
    before = {cid: await conversation(older_store, cid) for cid in CIDS}
    after = {cid: await conversation(newer, cid) for cid in CIDS}
    assert before != after
    return await exported(newer), older, before, after


def open_on(data: MemoryMap, crash_at: int | None = None) -> tuple[ContextStore, CrashingBlobStore]:
    blobs = CrashingBlobStore(data, crash_at)
    return ContextStore(blobs), blobs


async def test_an_import_killed_at_any_step_leaves_each_conversation_old_or_new() -> None:
    lines, older, before, after = await versions()
    counting = CrashingBlobStore(copy_map(older), None)
    await import_jsonl(UnitRunner(counting), lambda: lines)
    assert counting.ops > 20
    for crash_at in range(counting.ops):
        data = copy_map(older)
        with pytest.raises(Crash):
            await import_jsonl(UnitRunner(CrashingBlobStore(data, crash_at)), lambda: lines)
        left, _ = open_on(data)
        for cid in CIDS:
            assert await conversation(left, cid) in (before[cid], after[cid]), (crash_at, cid)
        await import_jsonl(left.runner, lambda: lines)  # running it again finishes it
        assert {cid: await conversation(left, cid) for cid in CIDS} == after
        drift = (await check_indexes(left.runner)).drift
        assert all(item.kind == "stale" for item in drift), drift


def failing_on_second_reading(lines: list[str], at: int) -> Callable[[], Iterator[str]]:
    """A source whose second reading (the writing pass) breaks at line ``at``."""
    readings = 0

    def source() -> Iterator[str]:
        nonlocal readings
        readings += 1
        for number, line in enumerate(lines, 1):
            if readings == 2 and number == at:
                raise OSError("the disk went away")
            yield line

    return source


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_import_that_fails_part_way_leaves_the_conversation_as_it_was(
    backend: str, tmp_path: Path
) -> None:
    lines = await exported(await filled(2, messages=6))
    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        await write_version(store, 1, messages=4)
        before = {cid: await conversation(store, cid) for cid in CIDS}
        # line 1 is the header, 2 conversation a, then a's messages
        with pytest.raises(OSError, match="went away"):
            await import_jsonl(store.runner, failing_on_second_reading(lines, 6))
        assert {cid: await conversation(store, cid) for cid in CIDS} == before
        assert (await check_indexes(store.runner)).ok
        await import_jsonl(store.runner, lambda: lines)
        assert await exported(store) == lines


async def filled(version: int, messages: int) -> ContextStore:
    store = makers_store.open_store("memory://")
    await write_version(store, version, messages)
    return store


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_reader_during_an_import_sees_each_conversation_old_or_new(
    backend: str, tmp_path: Path
) -> None:
    newer = await filled(2, messages=60)
    lines = await exported(newer)
    after = {cid: await conversation(newer, cid) for cid in CIDS}
    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        await write_version(store, 1, messages=40)
        before = {cid: await conversation(store, cid) for cid in CIDS}
        seen: list[Any] = []
        done = asyncio.Event()
        read_once = asyncio.Event()

        async def read() -> None:
            while not done.is_set():
                meta = await store.get_conversation(conversation_id="a")
                page = await store.get_messages(conversation_id="a", limit=100)
                items = await store.bind("a").state.items()
                seen.append((meta, page, items))
                read_once.set()
                await asyncio.sleep(0)

        async def write() -> None:
            for _ in range(3):  # old -> new -> new (again) -> new
                await import_jsonl(store.runner, lambda: lines)
                # let the reader in twice before the next import: inline SQLite
                # units hold the loop for a few ms each, and on a loaded machine
                # a whole import could otherwise pass between two of its reads
                for _ in range(2):
                    read_once.clear()
                    await read_once.wait()
            done.set()

        await asyncio.gather(read(), write())
        meta_versions = {before["a"][0]["metadata"]["title"], after["a"][0]["metadata"]["title"]}
        for meta, page, items in seen:
            assert meta is not None and meta.metadata["title"] in meta_versions
            assert [m.to_dict() for m in page] in (before["a"][1], after["a"][1])
            assert items in (before["a"][2], after["a"][2])
        assert len(seen) > 3
        assert await conversation(store, "a") == after["a"]
