"""Write ordering on a backend without transactions.

On object storage a unit of work runs one operation at a time and a crash can
stop it between any two. For every public write and every step at which it
can be cut short, the store that is left must show either the state before
the call or the state after it (messages, counts, metadata, state, listings),
and must keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from makers_store import ContextStore, MemoryConflictError
from makers_store._core.codec import ConversationRecord
from makers_store._core.programs import STALE_INDEX_BATCH
from makers_store.blob_ops import DeleteMany, Get, Op, Put
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import MemoryMap, StepwiseMemoryBlobStore
from makers_store.maintenance.index_repair import check_indexes


class Crash(BaseException):
    """The process died here."""


class CrashingBlobStore(StepwiseMemoryBlobStore):
    def __init__(self, data: MemoryMap, crash_at: int | None) -> None:
        super().__init__(data)
        self.crash_at = crash_at
        self.ops = 0

    async def execute(self, op: Op) -> Any:
        if self.ops == self.crash_at:
            if isinstance(op, DeleteMany):  # object storage may apply part of a batch
                await super().execute(DeleteMany(op.keys[: len(op.keys) // 2]))
            raise Crash
        self.ops += 1
        return await super().execute(op)


def open_on(data: MemoryMap, crash_at: int | None = None) -> tuple[ContextStore, CrashingBlobStore]:
    blobs = CrashingBlobStore(data, crash_at)
    store = ContextStore(
        blobs, clock=FixedClock(start=1_800_000_000_000), ids=counting_suffixes("r")
    )
    return store, blobs


async def seed() -> MemoryMap:
    data = MemoryMap()
    store, _ = open_on(data)
    store.runner.clock = FixedClock()  # seed with earlier timestamps
    store.runner.ids = counting_suffixes("s")
    for cid, user in [("a", "u1"), ("b", "u2"), ("a", None), ("b", "u1"), ("a", "u1")]:
        await store.append_message(
            conversation_id=cid, role="user", content=f"{cid}!", user_id=user
        )
    # b's meta now owes the deletion of one entry short of a batch: the next
    # append to b deletes them all at once.
    for n in range(STALE_INDEX_BATCH - 2):
        await store.append_message(
            conversation_id="b", role="user", content=str(n), user_id="u2"
        )
    owed = ConversationRecord.decode(data.blobs["c/b/meta"].data).superseded_at
    assert len(owed) == STALE_INDEX_BATCH - 1
    await store.update_conversation(conversation_id="a", metadata={"title": "A"})
    await store.bind("a").state.set("k", {"v": 1})
    return data


def copy(data: MemoryMap) -> MemoryMap:
    twin = MemoryMap()
    twin.blobs = dict(data.blobs)
    twin.sorted_keys = list(data.sorted_keys)
    return twin


async def view(store: ContextStore) -> dict[str, Any]:
    """Everything a user of the public API can observe."""
    out: dict[str, Any] = {}
    for cid in ("a", "b", "new"):
        meta = await store.get_conversation(conversation_id=cid)
        messages = await store.get_messages(conversation_id=cid, limit=100)
        out[cid] = {
            "meta": meta.to_dict() if meta else None,
            "messages": [m.to_dict() for m in messages],
            "state": await store.bind(cid).state.items(),
        }
        if meta is not None:
            assert meta.message_count == len(messages)
    for uid in (None, "u1", "u2", "u3"):
        page = await store.list_conversations(user_id=uid, limit=100)
        out[f"list:{uid}"] = [c.to_dict() for c in page.items]
    return out


async def first_id(store: ContextStore, cid: str) -> str:
    return (await store.get_messages(conversation_id=cid, limit=1))[0].message_id


BATCH = [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "r", "metadata": {"n": 1}},
    {"role": "tool", "content": {"ok": True}},
]

WRITES: dict[str, Callable[[ContextStore], Awaitable[Any]]] = {
    "append to a new conversation": lambda s: s.append_message(
        conversation_id="new", role="user", content="n", user_id="u3"
    ),
    "append to an existing one, new user": lambda s: s.append_message(
        conversation_id="b", role="assistant", content="b2", user_id="u3"
    ),
    "append to an existing one": lambda s: s.append_message(
        conversation_id="a", role="assistant", content="a3"
    ),
    "append that deletes superseded index entries": lambda s: s.append_message(
        conversation_id="b", role="assistant", content="b3"
    ),
    "append a batch to a new conversation": lambda s: s.append_messages(
        conversation_id="new", messages=BATCH, user_id="u3"
    ),
    "append a batch to an existing one": lambda s: s.append_messages(
        conversation_id="a", messages=BATCH
    ),
    "delete a message": lambda s: _delete_first(s),
    "update a message": lambda s: _update_first(s),
    "clear messages": lambda s: s.clear_messages(conversation_id="a"),
    "update conversation": lambda s: s.update_conversation(
        conversation_id="a", metadata={"title": None, "tag": 1}
    ),
    "delete conversation": lambda s: s.delete_conversation(conversation_id="a"),
    "set state": lambda s: s.bind("a").state.set("k", [2]),
    "delete state": lambda s: s.bind("a").state.delete("k"),
}


async def _delete_first(store: ContextStore) -> None:
    await store.delete_message(conversation_id="a", message_id=await first_id(store, "a"))


async def _update_first(store: ContextStore) -> None:
    await store.update_message(
        conversation_id="a", message_id=await first_id(store, "a"), content="x"
    )


@pytest.mark.parametrize("name", list(WRITES))
async def test_a_crash_at_any_step_leaves_before_or_after(name: str) -> None:
    write = WRITES[name]
    base = await seed()
    before = await view(open_on(copy(base))[0])
    done, blobs = open_on(copy(base))
    await write(done)
    total = blobs.ops
    after = await view(done)
    assert after != before
    assert total >= 1
    outcomes = set()
    for crash_at in range(total):
        data = copy(base)
        store, _ = open_on(data, crash_at)
        with pytest.raises(Crash):
            await write(store)
        survivor, _ = open_on(data)  # a new instance on the same data
        seen = await view(survivor)
        assert seen in (before, after), f"{name}: crash at step {crash_at} of {total}"
        outcomes.add("after" if seen == after else "before")
        # It keeps working: the next writes see a coherent conversation.
        await survivor.append_message(
            conversation_id="a", role="user", content="later", user_id="u1"
        )
        await survivor.append_message(
            conversation_id="new", role="user", content="later", user_id="u3"
        )
        await view(survivor)
    assert "before" in outcomes


async def test_concurrent_appends_interleave_without_loss() -> None:
    """Without transactions, racing writers retry on meta's etag and lose nothing."""
    import asyncio

    store, _ = open_on(MemoryMap())

    async def writer(n: int) -> list[str]:
        return [
            await store.append_message(
                conversation_id="c", role="user", content=f"{n}-{i}", user_id=f"u{n}"
            )
            for i in range(40)
        ]

    async def batch_writer(n: int) -> list[str]:
        ids = []
        for i in range(10):
            batch = [{"role": "user", "content": f"{n}-{i}-{j}"} for j in range(4)]
            ids += await store.append_messages(conversation_id="c", messages=batch, user_id=f"u{n}")
        return ids

    # three single-message writers and two batch writers, 40 messages each
    writers = [writer(n) for n in range(3)] + [batch_writer(n) for n in range(3, 5)]
    ids = [mid for batch in await asyncio.gather(*writers) for mid in batch]
    messages = []
    after = None
    while page := await store.get_messages(conversation_id="c", limit=100, after=after):
        messages += page
        after = page[-1].message_id
    assert sorted(ids) == [m.message_id for m in messages] and len(set(ids)) == 200
    by_id = {m.message_id: m.content for m in messages}
    for n in range(3, 5):  # each batch landed whole and in order
        mine = sorted(mid for mid in ids if by_id[mid].startswith(f"{n}-"))
        assert [by_id[mid] for mid in mine] == [f"{n}-{i}-{j}" for i in range(10) for j in range(4)]
    meta = await store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 200
    for n in range(5):
        listed = (await store.list_conversations(user_id=f"u{n}")).items
        assert listed == [meta]
    # No clutter left by the writers that lost races: besides the 6 current
    # entries, only superseded ones whose batched deletion meta owes.
    report = await check_indexes(store.runner)
    assert report.ok, report.drift
    assert report.entries == 6 + report.owed
    assert report.owed <= 6 * (STALE_INDEX_BATCH - 1)


ID_BATCH = [
    {"role": "user", "content": "q", "message_id": "client-q"},
    {"role": "assistant", "content": "r"},
    {"role": "tool", "content": {"ok": True}, "message_id": "client-t"},
]


@pytest.mark.parametrize("cid", ["a", "new"])
@pytest.mark.parametrize("batch", [BATCH, ID_BATCH], ids=["generated ids", "caller ids"])
async def test_a_batch_cut_short_at_any_step_stays_all_or_nothing(
    cid: str, batch: list[dict[str, Any]]
) -> None:
    """Issue 35: a batch killed mid-way was invisible at first, but the next
    appends committed the messages it had written one by one (a prefix of
    it). Now whatever is written after a crash at any step, the batch is
    there whole or not at all, and the call run again adds it once."""
    base = await seed()
    done, blobs = open_on(copy(base))
    await done.append_messages(cid, batch)
    total = blobs.ops
    contents = [item["content"] for item in batch]
    for crash_at in range(total):
        data = copy(base)
        store, _ = open_on(data, crash_at)
        with pytest.raises(Crash):
            await store.append_messages(cid, batch)
        survivor, _ = open_on(data)
        await survivor.append_message(cid, "user", "later")
        await survivor.append_messages(cid, [{"role": "user", "content": "then"}] * 2)
        seen = [m.content for m in await survivor.get_messages(cid, limit=100)]
        found = [n for n in range(len(seen)) if seen[n : n + len(contents)] == contents]
        assert sum(seen.count(c) for c in contents) == len(found) * len(contents), (
            f"crash at step {crash_at} of {total}: {seen}"
        )
        assert len(found) <= 1
        await survivor.append_messages(cid, batch)  # the caller runs it again
        seen = [m.content for m in await survivor.get_messages(cid, limit=100)]
        again = [n for n in range(len(seen)) if seen[n : n + len(contents)] == contents]
        expected = 1 if batch is ID_BATCH and found else len(found) + 1
        assert len(again) == expected, (crash_at, seen)
        meta = await survivor.get_conversation(cid)
        assert meta is not None and meta.message_count == len(seen)
        assert (await check_indexes(survivor.runner)).ok


async def test_a_batch_whose_later_caller_id_conflicts_leaves_nothing_stepwise() -> None:
    store, _ = open_on(MemoryMap())
    await store.append_message("c", "user", "taken", message_id="held")
    for _ in range(3):
        with pytest.raises(MemoryConflictError, match="held"):
            await store.append_messages(
                "c",
                [
                    {"role": "user", "content": "first", "message_id": "fresh"},
                    {"role": "user", "content": "second"},
                    {"role": "user", "content": "other", "message_id": "held"},
                ],
            )
    assert [m.content for m in await store.get_messages("c")] == ["taken"]
    assert await store.get_message("c", "fresh") is None


class GatedBlobStore(StepwiseMemoryBlobStore):
    """Pauses its unit at the op ``pause_at`` picks (before it runs, or
    after it answered) until the test lets it go on."""

    def __init__(self, data: MemoryMap, pause_at: Callable[[Op], str | None]) -> None:
        super().__init__(data)
        self.pause_at = pause_at
        self.paused = asyncio.Event()
        self.go_on = asyncio.Event()

    async def _pause(self) -> None:
        self.paused.set()
        await self.go_on.wait()

    async def execute(self, op: Op) -> Any:
        when = self.pause_at(op)
        if when == "before":
            await self._pause()
        result = await super().execute(op)
        if when == "after":
            await self._pause()
        return result


def nth(kind: type[Get] | type[Put], key: str, n: int, when: str) -> Callable[[Op], str | None]:
    """A GatedBlobStore's ``pause_at``: ``when`` ("before" or "after") at the
    ``n``-th op of ``kind`` on ``key``."""
    seen = 0

    def pause_at(op: Op) -> str | None:
        nonlocal seen
        if isinstance(op, kind) and op.key == key:
            seen += 1
            return when if seen == n else None
        return None

    return pause_at


async def test_a_writer_meeting_a_finished_deletion_spares_the_new_conversation() -> None:
    """A writer that read a meta marked deleting finishes the deletion; by the
    time it does, the deleting writer may have finished it and begun a new
    conversation under the id. The writer removed every key and meta
    unconditionally, so the new conversation's state was lost (seen once in
    CI: tests/test_two_instances.py, delete racing appends on S3)."""
    data = MemoryMap()
    # meta's Puts: 1, the append that made it; 2, the deletion's commit
    deleting_blobs = GatedBlobStore(data, nth(Put, "c/cid/meta", 2, "after"))
    writer_blobs = GatedBlobStore(data, nth(Get, "c/cid/meta", 1, "after"))
    deleting = ContextStore(deleting_blobs, ids=counting_suffixes("d"))
    writer = ContextStore(writer_blobs, ids=counting_suffixes("w"))
    await deleting.append_message(conversation_id="cid", role="user", content="old")
    deletion = asyncio.create_task(deleting.delete_conversation(conversation_id="cid"))
    await deleting_blobs.paused.wait()  # meta marked deleting: the commit
    append = asyncio.create_task(
        writer.append_message(conversation_id="cid", role="user", content="new")
    )
    await writer_blobs.paused.wait()  # it has read the deleting meta
    deleting_blobs.go_on.set()
    await deletion
    await deleting.bind("cid").state.set("after-delete", True)  # a new conversation
    writer_blobs.go_on.set()
    await append
    assert await deleting.bind("cid").state.get("after-delete") is True
    messages = await deleting.get_messages(conversation_id="cid")
    assert [m.content for m in messages] == ["new"]
    meta = await deleting.get_conversation(conversation_id="cid")
    assert meta is not None and meta.message_count == 1


async def test_a_writer_meeting_a_new_conversations_reservation_keeps_its_commit() -> None:
    """Issue 35: a batch into a new conversation reserves the id with a hidden
    meta; a writer that read that reservation removed the conversation's keys
    and then meta unconditionally, so a batch that committed in between was
    returned to its caller and lost (about one run in three of the race above)."""
    data = MemoryMap()
    # meta's Puts: 1, the reservation; 2, the batch's commit
    batch_blobs = GatedBlobStore(data, nth(Put, "c/new/meta", 2, "before"))
    single_blobs = GatedBlobStore(data, nth(Get, "c/new/meta", 1, "after"))
    batch_store = ContextStore(batch_blobs, ids=counting_suffixes("b"))
    single_store = ContextStore(single_blobs, ids=counting_suffixes("s"))
    batch = asyncio.create_task(
        batch_store.append_messages(
            conversation_id="new", messages=[{"role": "user", "content": str(n)} for n in range(3)]
        )
    )
    await batch_blobs.paused.wait()  # its messages written, the commit next
    single = asyncio.create_task(
        single_store.append_message(conversation_id="new", role="user", content="single")
    )
    await single_blobs.paused.wait()  # it has read the reservation
    batch_blobs.go_on.set()
    batch_ids = await batch
    single_blobs.go_on.set()
    single_id = await single
    stored = [m.message_id for m in await batch_store.get_messages(conversation_id="new")]
    assert stored == [*batch_ids, single_id]
