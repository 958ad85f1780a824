"""Superseded index entries on backends where every request costs.

An append moves a conversation's index entries to its new
``last_message_at``. On object storage (``costly_requests``) it leaves the
old entries for a batch delete that every ``STALE_INDEX_BATCH``-th move
issues, recording their times in meta meanwhile, so that a common append is
four requests. These tests run on the stepwise in-memory backend, which
declares the same trait as S3 and counts operations exactly.
"""

from __future__ import annotations

from typing import Any

import pytest

from makers_store import ContextStore
from makers_store._core.codec import ConversationRecord
from makers_store._core.keys import meta_key
from makers_store._core.programs import STALE_INDEX_BATCH
from makers_store.blob_ops import GetMany, Op
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import (
    MemoryBlobStore,
    MemoryMap,
    StepwiseMemoryBlobStore,
)
from makers_store.maintenance.index_repair import check_indexes, rebuild_indexes

CID = "c"


class CountingBlobStore(StepwiseMemoryBlobStore):
    """Stepwise memory whose operations are counted by type, like S3 requests."""

    def __init__(self, data: MemoryMap | None = None) -> None:
        super().__init__(data)
        self.ops: list[str] = []
        self.batch_reads: list[int] = []  # keys per GetMany

    async def execute(self, op: Op) -> Any:
        self.ops.append(type(op).__name__)
        if isinstance(op, GetMany):
            self.batch_reads.append(len(op.keys))
        return await super().execute(op)


def open_counting(clock: FixedClock | None = None) -> tuple[ContextStore, CountingBlobStore]:
    blobs = CountingBlobStore()
    store = ContextStore(blobs, clock=clock or FixedClock(), ids=counting_suffixes())
    return store, blobs


def index_keys_of(blobs: StepwiseMemoryBlobStore) -> list[str]:
    return [key for key in blobs.data.sorted_keys if key.startswith("i/")]


def meta_of(blobs: StepwiseMemoryBlobStore, cid: str = CID) -> ConversationRecord:
    return ConversationRecord.decode(blobs.data.blobs[meta_key(cid)].data)


async def append(store: ContextStore, user_id: str | None = None, cid: str = CID) -> str:
    return await store.append_message(
        conversation_id=cid, role="user", content="x", user_id=user_id
    )


async def test_a_common_append_is_four_operations_and_every_batch_one_more() -> None:
    store, blobs = open_counting()
    await append(store)
    # once per process: the layout check (the marker, whether the store is
    # empty) and, as this is a new store's first write, the marker
    assert blobs.ops[:3] == ["Get", "ListKeys", "Put"]
    assert blobs.ops[3:] == ["Get", "Put", "Put", "Put"]  # meta, message, entry, meta
    costs = []
    for _ in range(2 * STALE_INDEX_BATCH):
        blobs.ops.clear()
        await append(store)
        costs.append(list(blobs.ops))
    common = ["Get", "Put", "Put", "Put"]
    batched = [n for n, ops in enumerate(costs) if ops != common]
    assert batched == [STALE_INDEX_BATCH - 1, 2 * STALE_INDEX_BATCH - 1]
    assert all(costs[n] == [*common, "DeleteMany"] for n in batched)
    # After each batch only the current entry is left.
    assert len(index_keys_of(blobs)) == 1
    assert meta_of(blobs).superseded_at == []


async def test_owed_entries_are_recorded_in_meta_and_never_listed() -> None:
    store, blobs = open_counting()
    for _ in range(5):
        await append(store, user_id="u")
    record = meta_of(blobs)
    assert len(record.superseded_at) == 4
    assert record.last_message_at not in record.superseded_at
    assert len(index_keys_of(blobs)) == 2 * 5  # the recency and the user index
    await append(store, user_id="v", cid="other")
    first = await store.list_conversations(limit=1)
    assert [item.conversation_id for item in first.items] == ["other"]
    rest = await store.list_conversations(after=first.next_cursor)
    assert [item.conversation_id for item in rest.items] == [CID]
    assert rest.next_cursor is None and rest.previous_cursor is not None
    mine = await store.list_conversations(user_id="u", limit=1)
    assert [item.conversation_id for item in mine.items] == [CID] and mine.next_cursor is None
    older = await store.list_conversations(order="asc", limit=1)
    assert [item.conversation_id for item in older.items] == [CID]
    report = await check_indexes(store.runner)
    assert report.ok and report.owed == 2 * 4 and report.entries == 2 * 5 + 2


async def test_a_desc_listing_reads_each_meta_once() -> None:
    store, blobs = open_counting()
    for cid in ("a", "b", "c"):
        for _ in range(STALE_INDEX_BATCH - 1):  # as many owed entries as can wait
            await append(store, cid=cid)
    blobs.ops.clear()
    page = await store.list_conversations(limit=3)
    assert [item.conversation_id for item in page.items] == ["c", "b", "a"]
    assert blobs.ops == ["ListKeys", "GetMany"]  # the metas of a page in one batch read
    assert blobs.batch_reads == [3]  # each once: not again for its superseded entries


async def test_a_listing_reads_no_more_metas_than_the_page_can_use() -> None:
    store, blobs = open_counting()
    for n in range(40):
        await append(store, cid=f"c{n:02}")
    blobs.ops.clear()
    page = await store.list_conversations(limit=3)  # lists 64 keys in one request
    assert [item.conversation_id for item in page.items] == ["c39", "c38", "c37"]
    assert blobs.ops == ["ListKeys", "GetMany"] and blobs.batch_reads == [4]  # 3 and one more
    blobs.ops.clear()
    blobs.batch_reads.clear()
    assert page.next_cursor is not None
    after = await store.list_conversations(limit=3, after=page.next_cursor)
    assert [item.conversation_id for item in after.items] == ["c36", "c35", "c34"]
    assert after.previous_cursor is not None
    # the page and the probe behind the cursor listed together, their metas read together
    assert blobs.ops == ["ListMany", "GetMany"] and blobs.batch_reads == [5]


async def test_deleting_a_conversation_removes_its_owed_entries() -> None:
    store, blobs = open_counting()
    for _ in range(6):
        await append(store, user_id="u")
    await append(store, cid="kept")
    await store.delete_conversation(conversation_id=CID)
    assert [key.rsplit("/", 1)[1] for key in index_keys_of(blobs)] == ["kept"]


async def test_a_clock_that_goes_back_never_moves_last_message_at_back() -> None:
    clock = FixedClock(start=1_000_000, step=0)
    store, _ = open_counting(clock)
    times = [1_000_000, 1_000_500, 999_000, 1_000_400, 1_000_500, 1_000_600]
    # Far behind again, through times whose entries are owed a delete.
    times += [1_000_000 + n for n in range(3 * STALE_INDEX_BATCH)]
    seen = []
    for now in times:
        clock.now = now
        await append(store, user_id="u")
        meta = await store.get_conversation(conversation_id=CID)
        assert meta is not None
        seen.append(meta.last_message_at)
        for user_id in (None, "u"):  # the current entries survive every batch delete
            listed = await store.list_conversations(user_id=user_id)
            assert [item.conversation_id for item in listed.items] == [CID]
        assert (await check_indexes(store.runner)).ok
    assert seen == [1_000_000] + [1_000_500] * 4 + [1_000_600] * (len(times) - 5)
    messages = await store.get_messages(conversation_id=CID, limit=100)
    assert [m.created_at for m in messages] == times  # each message keeps its own time


async def test_rebuild_removes_owed_entries_and_later_batches_still_work() -> None:
    store, blobs = open_counting()
    for _ in range(4):
        await append(store)
    summary = await rebuild_indexes(store.runner)
    assert summary.removed == 3 and len(index_keys_of(blobs)) == 1
    for _ in range(STALE_INDEX_BATCH):  # the batch deletes keys that are already gone
        await append(store)
    assert (await check_indexes(store.runner)).ok
    assert len(index_keys_of(blobs)) == 1 + len(meta_of(blobs).superseded_at)


@pytest.mark.parametrize("blobs_cls", [MemoryBlobStore, StepwiseMemoryBlobStore])
async def test_only_backends_with_costly_requests_defer(blobs_cls: type) -> None:
    blobs = blobs_cls()
    store = ContextStore(blobs, clock=FixedClock(), ids=counting_suffixes())
    for _ in range(3):
        await append(store)
    entries = [key for key in blobs.data.sorted_keys if key.startswith("i/")]
    assert len(entries) == (3 if blobs_cls.capabilities.costly_requests else 1)


async def test_a_transactional_backend_pays_what_a_copied_meta_owes() -> None:
    """A store copied from S3 (``makers-store copy``) arrives with owed entries;
    the first append on SQLite or PostgreSQL deletes them all."""
    store, blobs = open_counting()
    for _ in range(5):
        await append(store, user_id="u")
    assert len(index_keys_of(blobs)) == 10
    sqlite_like = MemoryBlobStore(blobs.data)  # the same blobs, now transactional
    copied = ContextStore(sqlite_like, clock=FixedClock(start=2_000_000_000_000))
    await append(copied, user_id="u")
    assert len(index_keys_of(blobs)) == 2 and meta_of(blobs).superseded_at == []
    assert (await check_indexes(copied.runner)).owed == 0
