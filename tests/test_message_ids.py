"""Messages with the caller's id (``append_message(..., message_id=...)``).

One test per rule, on every backend; then the rules under crashes at every
step and racing writers without transactions, and eight processes appending
the same ids at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import makers_store
from makers_store import (
    ContextStore,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from makers_store.emulator.memory.backend import MemoryMap
from tests.backends import SHARED_BACKENDS, backend_url
from tests.test_crash_ordering import Crash, copy, open_on
from tests.test_fork import Interleaving
from tests.test_multiprocess import all_messages, finish, worker


async def _ids(store: ContextStore, cid: str = "c", **page: Any) -> list[str]:
    return [m.message_id for m in await store.get_messages(cid, limit=100, **page)]


class TestClientMessageIds:
    """The rules of ``message_id``, each on every backend."""

    async def test_the_given_id_is_the_message_id(self, store: ContextStore) -> None:
        assert await store.append_message("c", "user", "hi", message_id="front-1") == "front-1"
        [message] = await store.get_messages("c")
        assert (message.message_id, message.content) == ("front-1", "hi")
        assert await store.get_message("c", "front-1") == message

    async def test_order_is_append_order_not_id_order(self, store: ContextStore) -> None:
        given = ["zz", "aa", "mm"]
        for mid in given:
            await store.append_message("c", "user", mid, message_id=mid)
        generated = await store.append_message("c", "user", "gen")
        assert await _ids(store) == [*given, generated]
        assert await _ids(store, order="desc") == [generated, *reversed(given)]

    async def test_cursors_at_client_ids_mixed_with_generated(self, store: ContextStore) -> None:
        a = await store.append_message("c", "user", "a", message_id="a")
        b = await store.append_message("c", "user", "b")
        c = await store.append_message("c", "user", "c", message_id="c-3")
        d = await store.append_message("c", "user", "d")
        assert await _ids(store, after=a) == [b, c, d]
        assert await _ids(store, after=c) == [d]
        assert await _ids(store, before=c) == [a, b]
        assert await _ids(store, before=c, order="desc") == [d]  # "before" in the listing's order
        assert await _ids(store, after=c, order="desc") == [b, a]
        assert await _ids(store, before=b) == [a]
        walked = [m.message_id async for m in store.iter_messages("c", page_size=1)]
        assert walked == [a, b, c, d]
        assert [m.message_id async for m in store.iter_messages("c", after=a)] == [b, c, d]

    async def test_an_unknown_client_id_as_cursor_is_refused(self, store: ContextStore) -> None:
        await store.append_message("c", "user", "a")
        with pytest.raises(MemoryValidationError, match="after must be the id of a message"):
            await store.get_messages("c", after="never-appended")

    async def test_update_and_delete_by_client_id(self, store: ContextStore) -> None:
        await store.append_message("c", "user", "a", message_id="x")
        keep = await store.append_message("c", "user", "b")
        updated = await store.update_message("c", "x", content="a2", metadata={"e": 1})
        assert (updated.message_id, updated.content, updated.metadata) == ("x", "a2", {"e": 1})
        assert (await store.get_message("c", "x")) == updated
        bound = store.bind("c")
        await bound.update_message("x", content="a3")  # the platform's one-argument form
        assert (await bound.get_message("x")).content == "a3"  # type: ignore[union-attr]
        await bound.delete_message("x")
        assert await store.get_message("c", "x") is None
        assert await _ids(store) == [keep]
        with pytest.raises(MemoryNotFoundError, match="'x' not found"):
            await store.delete_message("c", "x")
        with pytest.raises(MemoryNotFoundError):
            await store.update_message("c", "nobody", content="z")

    async def test_a_retried_append_stores_one_message(self, store: ContextStore) -> None:
        first = await store.append_message("c", "user", {"t": [1, 2]}, {"m": 1}, message_id="r")
        meta = await store.get_conversation("c")
        again = await store.append_message("c", "user", {"t": [1, 2]}, {"m": 1}, message_id="r")
        assert first == again == "r"
        assert await _ids(store) == ["r"]
        assert await store.get_conversation("c") == meta  # nothing changed, not even the time

    async def test_the_same_id_with_other_data_is_a_conflict(self, store: ContextStore) -> None:
        await store.append_message("c", "user", "hi", {"m": 1}, message_id="r")
        for role, content, metadata in [
            ("assistant", "hi", {"m": 1}),
            ("user", "other", {"m": 1}),
            ("user", "hi", None),
        ]:
            with pytest.raises(MemoryConflictError, match="'r' already names another message"):
                await store.append_message("c", role, content, metadata, message_id="r")
        assert [m.content for m in await store.get_messages("c")] == ["hi"]

    async def test_ids_are_per_conversation(self, store: ContextStore) -> None:
        await store.append_message("c", "user", "one", message_id="same")
        await store.append_message("d", "user", "two", message_id="same")
        assert (await store.get_message("c", "same")).content == "one"  # type: ignore[union-attr]
        assert (await store.get_message("d", "same")).content == "two"  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("value", "rule"),
        [
            ("", "must not be empty"),
            ("x" * 257, "at most 256 characters"),
            ("a\nb", "control characters"),
            ("a\x00", "control characters"),
            ("a\x85", "control characters"),
            ("a\ud800", "valid Unicode"),
            ("msg_0000000003_abc", "form of an id this store generates"),
            (7, "must be a string"),
        ],
    )
    async def test_bad_ids_are_refused_and_nothing_is_written(
        self, store: ContextStore, value: Any, rule: str
    ) -> None:
        with pytest.raises(MemoryValidationError, match=rf"message_id.*{rule}|{rule}.*message_id"):
            await store.append_message("c", "user", "hi", message_id=value)
        with pytest.raises(MemoryValidationError, match=r"messages\[1\]: message_id"):
            await store.append_messages(
                "c",
                [
                    {"role": "user", "content": "a"},
                    {"role": "user", "content": "b", "message_id": value},
                ],
            )
        assert await store.get_conversation("c") is None

    async def test_long_and_unusual_ids(self, store: ContextStore) -> None:
        unusual = ["\U0001d54f" * 256, "a/b/../c", "%2F", "~x", "u.v", "id with spaces", "É" * 200]
        for n, mid in enumerate(unusual):
            assert await store.append_message("c", "user", str(n), message_id=mid) == mid
        assert await _ids(store) == unusual
        for n, mid in enumerate(unusual):
            assert (await store.get_message("c", mid)).content == str(n)  # type: ignore[union-attr]
        # two long ids that share their first 167 escaped characters stay apart
        a, b = "\U0001d54f" * 255 + "a", "\U0001d54f" * 255 + "b"
        await store.append_message("d", "user", "a", message_id=a)
        await store.append_message("d", "user", "b", message_id=b)
        assert [m.content for m in await store.get_messages("d")] == ["a", "b"]
        assert (await store.get_message("d", b)).content == "b"  # type: ignore[union-attr]

    async def test_a_batch_with_ids(self, store: ContextStore) -> None:
        ids = await store.append_messages(
            "c",
            [
                {"role": "user", "content": "q", "message_id": "q-1"},
                {"role": "assistant", "content": "r"},
                {"role": "tool", "content": {"ok": True}, "message_id": "t-1"},
            ],
        )
        assert ids[0] == "q-1" and ids[2] == "t-1" and ids[1].startswith("msg_")
        assert await _ids(store) == ids
        again = await store.append_messages(
            "c", [{"role": "user", "content": "q", "message_id": "q-1"}]
        )
        assert again == ["q-1"] and await _ids(store) == ids
        with pytest.raises(MemoryValidationError, match=r"messages\[2\].*messages\[0\]"):
            await store.append_messages(
                "c",
                [
                    {"role": "user", "content": "a", "message_id": "dup"},
                    {"role": "user", "content": "b"},
                    {"role": "user", "content": "a", "message_id": "dup"},
                ],
            )
        assert await _ids(store) == ids

    async def test_a_deleted_or_cleared_id_can_be_appended_again(self, store: ContextStore) -> None:
        await store.append_message("c", "user", "one", message_id="x")
        after = await store.append_message("c", "user", "two")
        await store.delete_message("c", "x")
        assert await _ids(store, after="x") == [after]  # still a cursor, as a generated id is
        await store.append_message("c", "user", "three", message_id="x")
        assert [m.content for m in await store.get_messages("c")] == ["two", "three"]
        await store.clear_messages("c")
        assert await store.get_message("c", "x") is None
        await store.append_message("c", "user", "four", message_id="x")
        assert [(m.message_id, m.content) for m in await store.get_messages("c")] == [("x", "four")]
        meta = await store.get_conversation("c")
        assert meta is not None and meta.message_count == 1

    async def test_export_import_and_copy_keep_client_ids(
        self, store: ContextStore, tmp_path: Path
    ) -> None:
        await store.append_message("c", "user", "a", message_id="front-a")
        generated = await store.append_message("c", "assistant", "b")
        await store.append_message("c", "user", "c", message_id="front-c")
        await store.delete_message("c", generated)
        out = io.StringIO()
        await store.admin.export_jsonl(out.write)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        messages = [line for line in lines if line["type"] == "message"]
        assert [(m["message_id"], m.get("seq")) for m in messages] == [
            ("front-a", 0),
            ("front-c", 2),
        ]
        async with makers_store.open_store("memory://") as other:
            await other.admin.import_jsonl(lambda: io.StringIO(out.getvalue()))
            assert await _ids(other) == ["front-a", "front-c"]
            assert (await other.get_message("c", "front-c")).content == "c"  # type: ignore[union-attr]
            assert await _ids(other, after="front-a") == ["front-c"]
            # the imported aliases work for writes too: a retry is idempotent
            assert await other.append_message("c", "user", "a", message_id="front-a") == "front-a"
            nxt = await other.append_message("c", "user", "d")
            assert nxt.startswith("msg_0000000003_")
            # importing the file again replaces the conversation, aliases included
            await other.append_message("c", "user", "e", message_id="front-e")
            await other.admin.import_jsonl(lambda: io.StringIO(out.getvalue()))
            assert await _ids(other) == ["front-a", "front-c"]
            assert await other.get_message("c", "front-e") is None
            async with makers_store.open_store(f"sqlite:///{tmp_path / 'copy.db'}") as copied:
                await other.admin.copy_to(copied)
                assert await _ids(copied) == ["front-a", "front-c"]
                found = await copied.get_message("c", "front-a")
                assert found is not None and found.content == "a"

    async def test_an_import_line_with_a_client_id_needs_its_seq(self, store: ContextStore) -> None:
        header = '{"type":"header","format":"makers-store-export","version":1}\n'
        conv = (
            '{"type":"conversation","conversation_id":"c","created_at":1,"last_message_at":1,'
            '"message_count":1,"metadata":{},"user_ids":[]}\n'
        )
        line = (
            '{"type":"message","conversation_id":"c","message_id":"front",'
            '"role":"user","content":"x","created_at":1,"metadata":null}\n'
        )
        with pytest.raises(MemoryValidationError, match="needs a seq field"):
            await store.admin.import_jsonl(lambda: io.StringIO(header + conv + line))
        twice = line.replace('"metadata":null', '"metadata":null,"seq":0') + line.replace(
            '"metadata":null', '"metadata":null,"seq":1'
        )
        with pytest.raises(MemoryValidationError, match="a second message with id 'front'"):
            await store.admin.import_jsonl(lambda: io.StringIO(header + conv + twice))
        assert await store.get_conversation("c") is None


# --- without transactions: crashes and races ---------------------------------------


@pytest.mark.parametrize(
    "setup",
    ["fresh", "existing", "stale alias of a deleted message"],
)
async def test_a_crash_at_any_step_then_a_retry_stores_the_message_once(setup: str) -> None:
    """Cut an append with an id short at every step; the retry (the caller's,
    on another instance) returns the id and the conversation holds it once."""
    base = MemoryMap()
    seeder, _ = open_on(base)
    if setup != "fresh":
        await seeder.append_message("c", "user", "before")
    if setup == "stale alias of a deleted message":
        await seeder.append_message("c", "user", "old", message_id="m")
        await seeder.delete_message("c", "m")
    done, blobs = open_on(copy(base))
    await done.append_message("c", "user", "new", message_id="m")
    total = blobs.ops
    for crash_at in range(total):
        data = copy(base)
        crashing, _ = open_on(data, crash_at)
        with pytest.raises(Crash):
            await crashing.append_message("c", "user", "new", message_id="m")
        survivor, _ = open_on(data)
        seen = [m for m in await survivor.get_messages("c", limit=100) if m.message_id == "m"]
        assert [m.content for m in seen] in ([], ["new"]), f"crash at {crash_at} of {total}"
        assert await survivor.append_message("c", "user", "new", message_id="m") == "m"
        with pytest.raises(MemoryConflictError):
            await survivor.append_message("c", "user", "other", message_id="m")
        messages = await survivor.get_messages("c", limit=100)
        assert [m.content for m in messages if m.message_id == "m"] == ["new"]
        meta = await survivor.get_conversation("c")
        assert meta is not None and meta.message_count == len(messages)
        later = await survivor.append_message("c", "user", "later")
        assert (await survivor.get_messages("c", limit=100))[-1].message_id == later


async def test_racing_appends_of_one_id_store_it_once_without_transactions() -> None:
    """Writers interleaved step by step on a store without transactions: each
    id ends up on exactly one message; equal data is idempotent, other data a
    conflict; the generated-id appends in between lose nothing."""
    store, _ = open_on(MemoryMap())

    async def writer(n: int) -> list[str]:
        outcomes = []
        for i in range(12):
            content = "shared" if i % 2 == 0 else f"w{n}"
            try:
                await store.append_message("c", "user", content, message_id=f"id-{i}")
                outcomes.append("ok")
            except MemoryConflictError:
                outcomes.append("conflict")
            await store.append_message("c", "assistant", f"w{n}-gen-{i}")
        return outcomes

    results = await asyncio.gather(*(writer(n) for n in range(5)))
    messages = await store.get_messages("c", limit=100)
    by_id: dict[str, list[str]] = {}
    for message in messages:
        by_id.setdefault(message.message_id, []).append(message.content)
    assert len(messages) == 12 + 5 * 12
    for i in range(12):
        [content] = by_id[f"id-{i}"]
        oks = [n for n in range(5) if results[n][i] == "ok"]
        if i % 2 == 0:
            assert content == "shared" and len(oks) == 5
        else:
            assert len(oks) == 1 and content == f"w{oks[0]}"
    meta = await store.get_conversation("c")
    assert meta is not None and meta.message_count == len(messages)


@pytest.mark.slow
@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_eight_processes_append_the_same_ids(kind: str, tmp_path: Path) -> None:
    url = backend_url(kind, tmp_path)
    count = 6 if kind == "s3" else 20
    start = str(time.time() + 3.0)
    procs = [worker("same-ids", url, "shared", str(count), f"w{n}", start) for n in range(8)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        outputs.append([json.loads(line) for line in out.splitlines()])
    finish([])
    async with makers_store.open_store(url) as store:
        messages = await all_messages(store, "shared")
        assert len(messages) == count + 8 * count
        for i in range(count):
            mine = [m for m in messages if m.message_id == f"same-{i}"]
            assert len(mine) == 1, (i, mine)
            oks = [n for n in range(8) if outputs[n][i]["outcome"] == "ok"]
            if i % 2 == 0:
                assert mine[0].content == f"shared-{i}" and len(oks) == 8
            else:
                assert len(oks) == 1 and mine[0].content == f"w{oks[0]}-{i}"
        meta = await store.get_conversation("shared")
        assert meta is not None and meta.message_count == len(messages)


async def test_a_batch_whose_later_id_conflicts_leaves_nothing(store: ContextStore) -> None:
    """Issue 35: on S3 (and without transactions) the items before the
    conflicting one stayed stored (56 of 56 losing batches)."""
    await store.append_message("c", "user", "taken", message_id="held")
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
    # the same call with the held one's own message: the rest is added, once
    items = [
        {"role": "user", "content": "first", "message_id": "fresh"},
        {"role": "user", "content": "taken", "message_id": "held"},
    ]
    ids = await store.append_messages("c", items)
    assert ids == ["fresh", "held"] and await store.append_messages("c", items) == ids
    assert [m.content for m in await store.get_messages("c")] == ["taken", "first"]


async def test_racing_batches_of_shared_ids_are_all_or_nothing_without_transactions() -> None:
    """Batches and single appends interleaved step by step, their caller ids
    overlapping: every id ends on one message; a batch that returned is
    there whole, one that conflicted left nothing of its own."""
    store, _ = open_on(MemoryMap())

    async def writer(n: int) -> list[tuple[str, list[str]]]:
        outcomes = []
        for i in range(6):
            batch = [
                {"role": "user", "content": f"w{n}-{i}-a", "message_id": f"own-{n}-{i}"},
                {"role": "user", "content": "shared", "message_id": f"shared-{i}"},
                {"role": "user", "content": f"w{n}-{i}-gen"},
                {"role": "user", "content": f"w{n}", "message_id": f"contended-{i}"},
            ]
            try:
                await store.append_messages("c", batch)
                outcomes.append(("ok", [f"w{n}-{i}-a", f"w{n}-{i}-gen"]))
            except MemoryConflictError:
                outcomes.append(("conflict", [f"w{n}-{i}-a", f"w{n}-{i}-gen"]))
            await store.append_message("c", "assistant", f"w{n}-single-{i}")
        return outcomes

    results = await asyncio.gather(*(writer(n) for n in range(4)))
    messages = await all_messages(store, "c")
    ids = [m.message_id for m in messages]
    assert len(ids) == len(set(ids))
    contents = [m.content for m in messages]
    for outcomes in results:
        for outcome, own in outcomes:
            assert all(contents.count(c) == (1 if outcome == "ok" else 0) for c in own), (
                outcome,
                own,
            )
    for i in range(6):  # one writer's batch holds contended-i, and only theirs went in
        winner = (await store.get_message("c", f"contended-{i}")).content  # type: ignore[union-attr]
        n = int(winner[1:])
        assert results[n][i][0] == "ok"
        assert [w for w in range(4) if results[w][i][0] == "ok"] == [n]
    meta = await store.get_conversation("c")
    assert meta is not None and meta.message_count == len(messages)


@pytest.mark.slow
@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_a_batch_writer_killed_anywhere_leaves_each_batch_all_or_nothing(
    kind: str, tmp_path: Path
) -> None:
    """Issue 35: a SIGKILL mid-call left a stored prefix of the batch on S3
    (5 of 12 kills). Killed a dozen times at random moments, with another
    writer appending after each kill, every batch is there whole or not at all."""
    import os
    import random
    import signal

    url = backend_url(kind, tmp_path)
    rng = random.Random(35)
    acknowledged: dict[str, int] = {}
    kills = 12 if kind != "s3" else 6
    # one conversation per kill: a fast machine writes thousands of batches in
    # 0.2 s, and one conversation would reach its 10,000-message quota
    async with makers_store.open_store(url) as store:
        for kill in range(kills):
            proc = worker("batches", url, f"c{kill}", f"k{kill}")
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "0", proc.stderr
            await asyncio.sleep(rng.uniform(0.0, 0.2))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            printed = proc.stdout.read().split()
            acknowledged[f"k{kill}"] = max([0, *(int(line) for line in printed)])
            proc.stdout.close()
            if proc.stderr:
                proc.stderr.close()
            # another writer finds what is left
            await store.append_message(f"c{kill}", "user", f"after kill {kill}")
            await store.append_messages(f"c{kill}", [{"role": "user", "content": "last"}] * 2)
        for kill in range(kills):
            tag = f"k{kill}"
            messages = await all_messages(store, f"c{kill}")
            contents = [m.content for m in messages]
            last = acknowledged[tag]
            for i in range(last + 3):
                count = contents.count(f"{tag}-{i}")
                assert count in (0, 3), (tag, i, count)
                assert count == 3 or i > last, (tag, i)
                if count:
                    at = contents.index(f"{tag}-{i}")
                    assert contents[at : at + 3] == [f"{tag}-{i}"] * 3
            assert len({m.message_id for m in messages}) == len(messages)


BATCH_RACE = st.lists(
    st.tuples(
        st.integers(0, 60),
        st.sampled_from(["same id", "same id, other content", "append", "delete", "kill"]),
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(actions=BATCH_RACE)
def test_a_batch_with_caller_ids_is_all_or_nothing_whatever_writes_between_its_steps(
    actions: list[tuple[int, str]],
) -> None:
    """Another writer acts between chosen operations of an append_messages
    call with caller ids, on a backend without transactions: it appends one
    of the batch's ids (with the batch's content or another), appends or
    deletes a message, or the batch's writer dies there. The batch is then
    there whole, or (a conflict, a death) not at all, and each id is held
    once."""
    asyncio.run(_batch_race(actions))


async def _batch_race(actions: list[tuple[int, str]]) -> None:
    from makers_store.blob_ops import Op
    from makers_store.emulator.memory.backend import StepwiseMemoryBlobStore

    class Stepped(StepwiseMemoryBlobStore):
        interleaving: Interleaving | None = None
        die_at: int | None = None
        steps = 0

        async def execute(self, op: Op) -> Any:
            if self.die_at is not None and self.steps >= self.die_at:
                raise Crash
            self.steps += 1
            if self.interleaving is not None:
                await self.interleaving.between()
            return await super().execute(op)

    data = MemoryMap()
    batcher = makers_store.ContextStore(Stepped(data))
    writer = makers_store.ContextStore(StepwiseMemoryBlobStore(data))
    await writer.append_message("c", "user", "before")
    batch = [
        {"role": "user", "content": "q", "message_id": "id-q"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "content": "t", "message_id": "id-t"},
    ]
    conflicted = False

    def act(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            nonlocal conflicted
            if name == "same id":
                with contextlib.suppress(MemoryConflictError):  # held with other content
                    await writer.append_message("c", "tool", "t", message_id="id-t")
            elif name == "same id, other content":
                try:
                    await writer.append_message("c", "tool", "other", message_id="id-t")
                    conflicted = True
                except MemoryConflictError:  # the batch's, or the other writer's, holds it
                    pass
            elif name == "append":
                await writer.append_message("c", "user", "between")
            elif name == "delete":
                others = [
                    m.message_id
                    for m in await writer.get_messages("c", limit=100)
                    if m.content in ("before", "between")
                ]
                if others:  # never the batch's own: what is asserted on below
                    await writer.delete_message("c", others[0])

        return run

    blobs = batcher.blobs
    assert isinstance(blobs, Stepped)
    kills = [step for step, name in actions if name == "kill"]
    blobs.die_at = min(kills) if kills else None
    others = sorted((step, name) for step, name in actions if name != "kill")
    blobs.interleaving = Interleaving([act(n) for _, n in others], [s for s, _ in others])
    try:
        await batcher.append_messages("c", batch)
        outcome = "ok"
    except MemoryConflictError:
        outcome = "conflict"
    except Crash:
        outcome = "killed"
    blobs.interleaving, blobs.die_at = None, None
    await writer.append_message("c", "user", "after")  # finds whatever is left
    await writer.append_messages("c", [{"role": "user", "content": "then"}] * 2)
    messages = await all_messages(writer, "c")
    contents = [m.content for m in messages]
    ids = [m.message_id for m in messages]
    assert len(ids) == len(set(ids))
    assert ids.count("id-q") <= 1 and ids.count("id-t") <= 1
    if outcome == "ok":
        assert contents.count("q") == 1 and contents.count("a") == 1
        assert (await writer.get_message("c", "id-q")).content == "q"  # type: ignore[union-attr]
    elif outcome == "conflict":
        assert conflicted and "q" not in contents and "a" not in contents
    else:
        assert contents.count("q") == contents.count("a") <= 1
    meta = await writer.get_conversation("c")
    assert meta is not None and meta.message_count == len(messages)
