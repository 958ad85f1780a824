"""``copy_store``: a whole store moves between any two backends, idempotently."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store._core import keys
from makers_store._core.runner import UnitRunner
from makers_store.emulator.memory.backend import MemoryMap
from makers_store.factory import open_blob_store
from makers_store.maintenance.copying import copy_store, count_units
from makers_store.maintenance.index_repair import check_indexes
from tests.backends import BACKENDS, backend_url
from tests.test_crash_ordering import Crash, CrashingBlobStore


async def populate(store: makers_store.ContextStore, conversations: int) -> None:
    for n in range(conversations):
        cid = f"conv {n}/é"
        await store.append_messages(
            conversation_id=cid,
            messages=[{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": "a"}],
            user_id=f"u{n % 3}",
        )
        await store.bind(cid).state.set("step", n)
    await store.update_conversation(conversation_id="conv 0/é", metadata={"title": "T"})
    await store.blobs.put("c/x/x/langgraph/raw", b"\x00\xffbytes stay bytes")


def without_generation(key: str) -> str:
    """A key as it would be in the first generation (copies write their own)."""
    return re.sub(r"^(c/[^/]+/)g/[a-z0-9]+/", r"\1", key)


async def view(store: makers_store.ContextStore) -> dict[str, Any]:
    """What the public API shows, plus every key but the generation (etags excluded)."""
    out: dict[str, Any] = {
        "keys": sorted(
            without_generation(info.key)
            for info in await store.blobs.list()
            if info.key != keys.LAYOUT_KEY  # written by whichever process met keys first
        )
    }
    page = await store.list_conversations(limit=100)
    out["conversations"] = [c.to_dict() for c in page.items]
    out["u1"] = [c.conversation_id for c in (await store.list_conversations(user_id="u1")).items]
    for meta in page.items:
        cid = meta.conversation_id
        out[cid] = (
            [m.to_dict() for m in await store.get_messages(conversation_id=cid)],
            await store.bind(cid).state.items(),
        )
    return out


PAIRS = [pair for pair in itertools.product(BACKENDS, BACKENDS) if pair[0] != "memory"]


@pytest.mark.parametrize(("source", "destination"), PAIRS)
async def test_copy_between_backends(source: str, destination: str, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    async with makers_store.open_store(backend_url(source, tmp_path / "src")) as src:
        await populate(src, 7)
        expected = await view(src)
        dst = makers_store.ContextStore(open_blob_store(backend_url(destination, tmp_path / "dst")))
        async with dst:
            report = await copy_store(src.runner, dst.runner)
            assert report.conversations == report.conversations_written == 8  # 7, and "x"
            assert await count_units(src.runner) == 8
            assert await view(dst) == expected
            again = await copy_store(src.runner, dst.runner)
            assert (again.conversations_written, again.conversations_unchanged) == (0, 8)
            assert again.bytes_written == 0
            # the copy is a working store: it takes new writes
            await dst.append_message(conversation_id="conv 1/é", role="user", content="more")
            assert (await dst.get_conversation(conversation_id="conv 1/é")).message_count == 3  # type: ignore[union-attr]


async def test_extra_destination_blobs_are_kept_or_pruned() -> None:
    src = makers_store.open_store("memory://")
    dst = makers_store.open_store("memory://")
    await populate(src, 2)
    await dst.append_message(conversation_id="only here", role="user", content="x")
    report = await copy_store(src.runner, dst.runner)
    assert report.extra_conversations == 1 and report.pruned_conversations == 0
    assert await dst.get_conversation(conversation_id="only here") is not None
    report = await copy_store(src.runner, dst.runner, prune=True)
    assert report.pruned_conversations == 1
    assert await view(dst) == await view(src)


async def test_an_interrupted_copy_is_finished_by_running_it_again() -> None:
    src = makers_store.open_store("memory://")
    await populate(src, 30)
    data = MemoryMap()
    for crash_at in (1, 207, 10):  # ops count from the start of each run
        with pytest.raises(Crash):
            await copy_store(src.runner, UnitRunner(CrashingBlobStore(data, crash_at)))
        # what was copied so far is consistent: no conversation shows without its meta
        partial = makers_store.ContextStore(CrashingBlobStore(data, None))
        for meta in (await partial.list_conversations(limit=100)).items:
            messages = await partial.get_messages(conversation_id=meta.conversation_id)
            assert len(messages) == meta.message_count
    finished = await copy_store(src.runner, UnitRunner(CrashingBlobStore(data, None)))
    assert 0 < finished.conversations_written < finished.conversations  # done ones are kept
    assert await view(makers_store.ContextStore(CrashingBlobStore(data, None))) == await view(src)


async def conversation_view(store: makers_store.ContextStore, cid: str) -> Any:
    meta = await store.get_conversation(conversation_id=cid)
    return (
        None if meta is None else meta.to_dict(),
        [m.to_dict() for m in await store.get_messages(conversation_id=cid, limit=100)],
        await store.bind(cid).state.items(),
    )


async def test_a_copy_over_an_older_copy_cut_short_anywhere_shows_one_version() -> None:
    """Object storage, killed at every step of a copy whose source has moved on
    since the last copy: each conversation reads wholly as the older copy or
    wholly as the source, never a mix (issue 12, item 1)."""
    src = makers_store.open_store("memory://")
    for cid in ("a", "b"):
        await src.append_messages(
            conversation_id=cid,
            messages=[{"role": "user", "content": f"{cid}{n}"} for n in range(4)],
        )
        await src.bind(cid).state.set("v", 1)
    older = MemoryMap()
    await copy_store(src.runner, UnitRunner(CrashingBlobStore(older, None)))
    # the source moves on: edited, deleted, appended messages and new state
    first = (await src.get_messages(conversation_id="a"))[0]
    await src.update_message(conversation_id="a", message_id=first.message_id, content="edited")
    second = (await src.get_messages(conversation_id="b"))[1]
    await src.delete_message(conversation_id="b", message_id=second.message_id)
    for cid in ("a", "b"):
        await src.append_message(conversation_id=cid, role="assistant", content="new")
        await src.bind(cid).state.set("v", 2)
    before = {
        cid: await conversation_view(
            makers_store.ContextStore(CrashingBlobStore(copy_map(older), None)), cid
        )
        for cid in ("a", "b")
    }
    after = {cid: await conversation_view(src, cid) for cid in ("a", "b")}
    counting = CrashingBlobStore(copy_map(older), None)
    await copy_store(src.runner, UnitRunner(counting))
    assert counting.ops > 20
    for crash_at in range(counting.ops):
        data = copy_map(older)
        with pytest.raises(Crash):
            await copy_store(src.runner, UnitRunner(CrashingBlobStore(data, crash_at)))
        left = makers_store.ContextStore(CrashingBlobStore(data, None))
        for cid in ("a", "b"):
            seen = await conversation_view(left, cid)
            assert seen in (before[cid], after[cid]), (crash_at, cid)
        # a rerun finishes it
        await copy_store(src.runner, UnitRunner(CrashingBlobStore(data, None)))
        assert {cid: await conversation_view(left, cid) for cid in ("a", "b")} == after
        # a kill between the swap and the removal of the old index entry leaves
        # it behind: readers skip it, `index check` names it, `index rebuild` drops it
        drift = (await check_indexes(left.runner)).drift
        assert all(item.kind == "stale" for item in drift), drift


def copy_map(data: MemoryMap) -> MemoryMap:
    twin = MemoryMap()
    twin.blobs = dict(data.blobs)
    twin.sorted_keys = list(data.sorted_keys)
    return twin


@pytest.mark.parametrize("how", ["copy", "import"])
async def test_langgraph_store_items_written_blob_by_blob_are_reindexed(how: str) -> None:
    """The LangGraph store's index is derived: after ``copy`` or ``import``
    wrote items into a store holding some, searches see each item once."""
    import io

    from makers_store.clock import FixedClock
    from makers_store.maintenance.exporting import export_jsonl
    from makers_store.maintenance.importing import import_jsonl

    src = makers_store.open_store("memory://", clock=FixedClock(start=1_800_000_000_000))
    dst = makers_store.open_store("memory://", clock=FixedClock(start=1_700_000_000_000))
    await dst.langgraph_store.aput(("mem", "u1"), "shared", {"v": "old"})
    await dst.langgraph_store.aput(("mem", "u1"), "mine", {"v": "dst"})
    await src.langgraph_store.aput(("mem", "u1"), "shared", {"v": "new"})
    await src.langgraph_store.aput(("mem", "u2"), "theirs", {"v": "src"})
    if how == "copy":
        await copy_store(src.runner, dst.runner)
    else:
        out = io.StringIO()
        await export_jsonl(src.runner, out.write)
        await import_jsonl(dst.runner, lambda: out.getvalue().splitlines(keepends=True))
    fresh = makers_store.ContextStore(dst.blobs)  # a process that opens the store next
    found = await fresh.langgraph_store.asearch(("mem",), limit=10)
    assert sorted((item.key, item.value["v"]) for item in found) == [
        ("mine", "dst"),
        ("shared", "new"),
        ("theirs", "src"),
    ]
    assert sorted(await fresh.langgraph_store.alist_namespaces()) == [("mem", "u1"), ("mem", "u2")]
