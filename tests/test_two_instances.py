"""Two store objects standing for two instances on two machines, sharing one
backend, interleave appends, state writes and deletes on one conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import makers_store
from makers_store.blob_ops import Op
from makers_store.emulator.memory.backend import (
    MemoryBlobStore,
    MemoryMap,
    StepwiseMemoryBlobStore,
)
from tests.backends import BACKENDS, backend_url

CID = "shared conversation"


def two_instances(kind: str, tmp_path: Path) -> tuple[makers_store.ContextStore, ...]:
    if kind in ("memory", "stepwise"):  # in-process: two stores over one map
        data = MemoryMap()
        make = MemoryBlobStore if kind == "memory" else StepwiseMemoryBlobStore
        return tuple(makers_store.ContextStore(make(data)) for _ in range(2))
    url = backend_url(kind, tmp_path)
    return makers_store.open_store(url), makers_store.open_store(url)


async def every_message(store: makers_store.ContextStore) -> list[makers_store.Message]:
    out: list[makers_store.Message] = []
    after = None
    while page := await store.get_messages(conversation_id=CID, limit=100, after=after):
        out += page
        after = page[-1].message_id
    return out


@pytest.mark.parametrize("kind", BACKENDS)
async def test_interleaved_writes_lose_nothing(kind: str, tmp_path: Path) -> None:
    a, b = two_instances(kind, tmp_path)
    async with a, b:

        async def instance(store: makers_store.ContextStore, name: str) -> set[str]:
            kept: set[str] = set()
            state = store.bind(CID).state
            for i in range(30):
                mid = await store.append_message(
                    conversation_id=CID, role="user", content=f"{name}{i}", user_id=name
                )
                if i % 3 == 2:  # delete every third message this instance wrote
                    await store.delete_message(conversation_id=CID, message_id=mid)
                else:
                    kept.add(mid)
                await state.set(f"{name}-progress", i)
                await state.set("last-writer", name)
                if i % 10 == 9:
                    await store.update_conversation(conversation_id=CID, metadata={name: i})
            return kept

        kept_a, kept_b = await asyncio.gather(instance(a, "a"), instance(b, "b"))
        for reader in (a, b):
            messages = await every_message(reader)
            assert {m.message_id for m in messages} == kept_a | kept_b
            ids = [m.message_id for m in messages]
            assert ids == sorted(ids) and len(ids) == 40
            meta = await reader.get_conversation(conversation_id=CID)
            assert meta is not None and meta.message_count == 40
            assert meta.metadata == {"a": 29, "b": 29}
            state = await reader.bind(CID).state.items()
            assert state["a-progress"] == 29 and state["b-progress"] == 29
            assert state["last-writer"] in ("a", "b")
            for user in ("a", "b"):
                [listed] = (await reader.list_conversations(user_id=user)).items
                assert listed == meta


@pytest.mark.parametrize("kind", BACKENDS)
async def test_delete_racing_appends_leaves_exact_counts(kind: str, tmp_path: Path) -> None:
    a, b = two_instances(kind, tmp_path)
    async with a, b:
        for i in range(20):
            await a.append_message(conversation_id=CID, role="user", content=f"old{i}")

        async def appender() -> list[str]:
            return [
                await b.append_message(conversation_id=CID, role="user", content=f"new{i}")
                for i in range(20)
            ]

        async def deleter() -> None:
            await asyncio.sleep(0)
            await a.delete_conversation(conversation_id=CID)
            await a.bind(CID).state.set("after-delete", True)

        appended, _ = await asyncio.gather(appender(), deleter())
        for reader in (a, b):
            messages = await every_message(reader)
            contents = [m.content for m in messages]
            assert not any(c.startswith("old") for c in contents)  # the delete took them all
            # what survives is a suffix of b's appends, in order, counted exactly
            assert contents == [f"new{i}" for i in range(20 - len(contents), 20)]
            assert {m.message_id for m in messages} <= set(appended)
            meta = await reader.get_conversation(conversation_id=CID)
            assert (meta.message_count if meta else 0) == len(messages)
            assert await reader.bind(CID).state.get("after-delete") is True


@pytest.mark.parametrize("emptied_by", ["delete_message", "clear_messages"])
async def test_an_append_never_fills_a_slot_another_instance_emptied(
    emptied_by: str,
) -> None:
    """Instance a appends (next_seq becomes 1); instance b appends at 1 and
    empties that slot again. a's next append goes after it, at 2: a slot a
    deletion emptied is never reused, so ids keep their order and cursors
    stay valid."""
    data = MemoryMap()
    a, b = (makers_store.ContextStore(StepwiseMemoryBlobStore(data)) for _ in range(2))
    await a.append_message(conversation_id=CID, role="user", content="first")
    mid = await b.append_message(conversation_id=CID, role="user", content="from b")
    if emptied_by == "delete_message":
        await b.delete_message(conversation_id=CID, message_id=mid)
    else:
        await b.clear_messages(conversation_id=CID)
    def primary() -> int:  # index entries aside: superseded ones may await a batch delete
        return sum(1 for key in data.blobs if not key.startswith("i/"))

    blobs_before = primary()
    late = await a.append_message(conversation_id=CID, role="user", content="from a")
    messages = await every_message(b)
    assert [m.content for m in messages][-1] == "from a"
    assert [m.message_id for m in messages][-1] == late
    assert int(late.split("_")[1]) == 2  # appended after the emptied slot 1, not into it
    meta = await b.get_conversation(conversation_id=CID)
    assert meta is not None and meta.message_count == len(messages)
    stored = [key for key in data.blobs if "/m/" in key]
    assert len(stored) == len(messages)  # nothing left in slot 1
    assert primary() == blobs_before + 1


class Interposing(StepwiseMemoryBlobStore):
    """Runs ``between`` (another instance's writes) before its operation
    number ``at``: a unit of this store cut there, for as long as the other
    instance takes, as a slow request on object storage is."""

    def __init__(self, data: MemoryMap, at: int, between: Callable[[], Awaitable[None]]) -> None:
        super().__init__(data)
        self.at, self.between, self.ops, self.ran = at, between, 0, False

    async def execute(self, op: Op) -> object:
        if self.ops == self.at:
            self.ran = True
            await self.between()
        self.ops += 1
        return await super().execute(op)


async def consistent(store: makers_store.ContextStore) -> list[str]:
    """The visible messages' contents, after checking meta counts exactly them."""
    messages = await every_message(store)
    meta = await store.get_conversation(conversation_id=CID)
    assert meta is not None and meta.message_count == len(messages)
    return [str(m.content) for m in messages]


@pytest.mark.parametrize("caller_id", [None, "mine"])
@pytest.mark.parametrize("at", range(7))  # an append's operations (and an alias's)
async def test_an_append_into_a_slot_emptied_meanwhile_is_appended_again(
    at: int, caller_id: str | None
) -> None:
    """Between any two operations of b's append, a appends a message (into
    the slot b read as free) and deletes it: b's message lands in the emptied
    slot, its commit loses, and its retry must not take that blob for one a
    helper committed (it was counted by no meta: visible, uncounted). The
    flake of test_interleaved_writes_lose_nothing[s3]: meta counted 39 of 40."""
    data = MemoryMap()
    a = makers_store.ContextStore(StepwiseMemoryBlobStore(data))
    await a.append_message(conversation_id=CID, role="user", content="first")

    async def append_and_delete() -> None:
        mid = await a.append_message(conversation_id=CID, role="user", content="gone")
        await a.delete_message(conversation_id=CID, message_id=mid)

    blobs = Interposing(data, at, append_and_delete)
    b = makers_store.ContextStore(blobs)
    mid = await b.append_message(
        conversation_id=CID, role="user", content="from b", message_id=caller_id
    )
    assert blobs.ran or (caller_id is None and at >= 5)
    assert await consistent(b) == ["first", "from b"]
    assert (await b.get_message(conversation_id=CID, message_id=mid)).content == "from b"
    stored = [key for key in data.blobs if "/m/" in key]
    assert len(stored) == 2  # nothing of b's left in the emptied slot


@pytest.mark.parametrize("at", range(6))  # a delete's operations
async def test_a_delete_whose_clean_up_loses_a_race_is_done(at: int) -> None:
    """Between any two operations of a's delete_message, b appends and writes
    state (meta changes): once the deletion is committed, the lost race of
    its last meta write (dropping the tombstone) is not a failure (it ran the
    delete again, which found no message: MemoryNotFoundError, the other face
    of the same flake)."""
    data = MemoryMap()
    a0 = makers_store.ContextStore(StepwiseMemoryBlobStore(data))
    mid = await a0.append_message(conversation_id=CID, role="user", content="doomed")
    b = makers_store.ContextStore(StepwiseMemoryBlobStore(data))

    async def other_writes() -> None:
        await b.append_message(conversation_id=CID, role="user", content="from b")
        await b.update_conversation(conversation_id=CID, metadata={"b": 1})

    blobs = Interposing(data, at, other_writes)
    a = makers_store.ContextStore(blobs)
    await a.delete_message(conversation_id=CID, message_id=mid)
    assert blobs.ran
    contents = await consistent(b)
    assert "doomed" not in contents and contents.count("from b") == 1
    assert await b.get_message(conversation_id=CID, message_id=mid) is None
