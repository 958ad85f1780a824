"""``copy_store``: a whole store moves between any two backends, idempotently."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store.copying import PAGE, copy_store, count_blobs
from makers_store.emulator.memory import MemoryMap
from makers_store.factory import open_blob_store
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


async def view(store: makers_store.ContextStore) -> dict[str, Any]:
    """What the public API shows, plus every key (etags excluded)."""
    out: dict[str, Any] = {"keys": [info.key for info in await store.blobs.list()]}
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
            report = await copy_store(src.blobs, dst.blobs)
            assert report.source_blobs == report.written == await count_blobs(src.blobs)
            assert await view(dst) == expected
            again = await copy_store(src.blobs, dst.blobs)
            assert (again.written, again.unchanged) == (0, report.source_blobs)
            # the copy is a working store: it takes new writes
            await dst.append_message(conversation_id="conv 1/é", role="user", content="more")
            assert (await dst.get_conversation(conversation_id="conv 1/é")).message_count == 3  # type: ignore[union-attr]


async def test_extra_destination_blobs_are_kept_or_pruned() -> None:
    src = makers_store.open_store("memory://")
    dst = makers_store.open_store("memory://")
    await populate(src, 2)
    await dst.append_message(conversation_id="only here", role="user", content="x")
    report = await copy_store(src.blobs, dst.blobs)
    assert report.extra_in_destination == 3 and report.pruned == 0  # meta, message, index
    assert await dst.get_conversation(conversation_id="only here") is not None
    report = await copy_store(src.blobs, dst.blobs, prune=True)
    assert report.pruned == 3
    assert await view(dst) == await view(src)


async def test_an_interrupted_copy_is_finished_by_running_it_again() -> None:
    src = makers_store.open_store("memory://")
    await populate(src, PAGE // 2)  # several pages
    total = await count_blobs(src.blobs)
    assert total > 2 * PAGE
    data = MemoryMap()
    for crash_at in (1, PAGE + 7, 10):  # ops count from the start of each run
        with pytest.raises(Crash):
            await copy_store(src.blobs, CrashingBlobStore(data, crash_at))
        # what was copied so far is consistent: no conversation shows without its meta
        partial = makers_store.ContextStore(CrashingBlobStore(data, None))
        for meta in (await partial.list_conversations(limit=100)).items:
            messages = await partial.get_messages(conversation_id=meta.conversation_id)
            assert len(messages) == meta.message_count
    finished = await copy_store(src.blobs, CrashingBlobStore(data, None))
    assert finished.written < total  # the pages already copied are not written again
    assert await view(makers_store.ContextStore(CrashingBlobStore(data, None))) == await view(src)
