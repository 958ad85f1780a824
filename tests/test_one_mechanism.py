"""One mechanism each (issue 31): where the store once had a copy beside the
one mechanism, a test shows the copy's work now goes through the one.

- ``append_messages`` with caller ids is one batched unit: one meta write on
  a transactional backend (the batch intent's two without transactions), as
  a batch without ids, not one append per message.
- Retention deletes through the store's one deletion program: a prune cut
  short at any step is finished by ``delete_conversation`` and a
  ``delete_conversation`` cut short at any step by a prune, linked
  conversations (a Claude session's) included, leaving no conversation data.
- One loop within a unit (``blob_ops.each_batch``) and one walk across units
  (``paging``): the batches and their bounds, an early stop, and the walk's
  guard against a page that makes no progress, now under every such loop,
  the LangGraph checkpointer's listing and the LangGraph store's read of
  recency copies included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store import ContextStore
from makers_store._core import paging
from makers_store.blob_ops import BlobInfo, Entry, Op, Program, Put, each_batch, put
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import MemoryMap, StepwiseMemoryBlobStore
from makers_store.errors import MemoryCorruptError
from tests.backends import BACKENDS, backend_url
from tests.test_crash_ordering import Crash, CrashingBlobStore, copy

DAY = 86_400_000


class OpCounter:
    """Counts the units a store runs and the meta writes in them, by wrapping
    the backend's ``run`` (the programs and the backend run as they are)."""

    def __init__(self, store: makers_store.ContextStore) -> None:
        self.units = 0
        self.meta_puts = 0
        blobs = store.runner.blobs
        run = blobs.run

        async def counted_run(program: Any, *, write: bool) -> Any:
            self.units += 1
            return await run(self._count(program), write=write)

        blobs.run = counted_run  # type: ignore[method-assign]

    def _count(self, program: Generator[Op, Any, Any]) -> Generator[Op, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = program.send(value) if error is None else program.throw(error)
            except StopIteration as stop:
                return stop.value
            if isinstance(op, Put) and op.key.endswith("/meta"):
                self.meta_puts += 1
            try:
                value, error = (yield op), None
            except BaseException as exc:  # thrown into the program, as the backend would
                value, error = None, exc

    def reset(self) -> None:
        self.units = self.meta_puts = 0


@pytest.mark.parametrize("kind", [k for k in BACKENDS if k in ("memory", "stepwise", "sqlite")])
async def test_a_batch_with_caller_ids_is_one_batched_unit(kind: str, tmp_path: Path) -> None:
    async with makers_store.open_store(backend_url(kind, tmp_path)) as store:
        await store.append_message("c", "user", "first")  # layout and conversation exist
        counter = OpCounter(store)
        batch = [{"role": "user", "content": f"m{i}", "message_id": f"id-{i}"} for i in range(50)]
        batch[7] = {"role": "user", "content": "no id"}
        ids = await store.append_messages("c", batch)
        assert counter.units == 1
        # the intent and its commit without transactions; the commit alone with them
        assert counter.meta_puts == (2 if kind == "stepwise" else 1)
        assert ids[:7] == [f"id-{i}" for i in range(7)] and ids[8] == "id-8"
        assert [m.message_id for m in await store.get_messages("c", limit=100)][1:] == ids
        counter.reset()
        assert await store.append_messages("c", batch[:7]) == ids[:7]  # held: idempotent
        assert (counter.units, counter.meta_puts) == (1, 0)
        assert (await store.get_conversation("c")).message_count == 51  # type: ignore[union-attr]


# --- retention through the one deletion program ----------------------------------


async def _linked_conversation(clock: FixedClock) -> tuple[MemoryMap, str]:
    """c1 (messages, state, a user) with a Claude session bound to it that
    holds a message of its own: deleting c1 deletes the session's too."""
    data = MemoryMap()
    store = ContextStore(StepwiseMemoryBlobStore(data), clock=clock, ids=counting_suffixes())
    await store.append_messages("c1", [{"role": "user", "content": str(n)} for n in range(3)])
    await store.append_message("c1", "user", "by u", user_id="u")
    await store.bind("c1").state.set("k", 1)
    bound = await store.claude_session_binding("c1")
    await store.append_message(bound, "user", "the session's")
    clock.now += 10 * DAY
    return data, bound


async def _prune(store: ContextStore) -> None:
    await store.admin.prune_conversations(timedelta(days=7), conversation_ids=["c1"])


async def _delete(store: ContextStore) -> None:
    await store.delete_conversation("c1")


@pytest.mark.parametrize(
    ("cut_short", "finish"), [(_prune, _delete), (_delete, _prune)], ids=["prune", "delete"]
)
async def test_a_deletion_cut_short_either_way_is_finished_the_other_way(
    cut_short: Callable[[ContextStore], Awaitable[None]],
    finish: Callable[[ContextStore], Awaitable[None]],
) -> None:
    clock = FixedClock(step=0)
    seeded, bound = await _linked_conversation(clock)
    step = 0
    while True:
        data = copy(seeded)
        try:
            await cut_short(ContextStore(CrashingBlobStore(data, step), clock=clock))
        except Crash:
            pass
        else:
            break
        after = ContextStore(StepwiseMemoryBlobStore(data), clock=clock)
        await finish(after)
        for cid in ("c1", bound):
            assert await after.get_conversation(cid) is None, (step, cid)
        assert [key for key in data.blobs if key.startswith("c/")] == [], step
        # (a prune cut short after meta went may leave its recency entry,
        # which readers skip and the next prune deletes)
        assert (await after.list_conversations(limit=10)).items == [], step
        step += 1
    assert step > 10


# --- the loops ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in BACKENDS if k in ("memory", "stepwise", "sqlite")])
async def test_each_batch_hands_every_batch_under_a_prefix_in_one_unit(
    kind: str, tmp_path: Path
) -> None:
    async with makers_store.open_store(backend_url(kind, tmp_path)) as store:

        def seed() -> Program[None]:
            for n in range(7):
                yield from put(f"t/{n}", str(n).encode())
            yield from put("u/0", b"outside")

        await store.runner.run(seed, write=True)
        seen: list[list[str]] = []

        def walk(**bounds: Any) -> Program[tuple[bool, list[list[str]]]]:
            seen.clear()

            def take(batch: list[BlobInfo]) -> None:
                seen.append([info.key for info in batch])

            stopped = yield from each_batch("t/", take, size=3, **bounds)
            return stopped, list(seen)

        assert await store.runner.run(walk, write=False) == (
            False,
            [["t/0", "t/1", "t/2"], ["t/3", "t/4", "t/5"], ["t/6"]],
        )
        bounded = await store.runner.run(
            lambda: walk(start_after="t/1", end_before="t/5"), write=False
        )
        assert bounded == (False, [["t/2", "t/3", "t/4"], []])

        def first_over(limit: int) -> Program[tuple[bool, list[str]]]:
            values: list[str] = []

            def take(batch: list[Entry]) -> bool:
                values.extend(entry.data.decode() for entry in batch)
                return int(values[-1]) > limit

            stopped = yield from each_batch("t/", take, size=2, values=True)
            return stopped, values

        assert await store.runner.run(lambda: first_over(2), write=False) == (
            True,
            ["0", "1", "2", "3"],
        )


async def test_a_walk_of_units_that_makes_no_progress_is_named_not_run_forever() -> None:
    steps: list[str | None] = []

    async def step(cursor: str | None) -> str | None:
        steps.append(cursor)
        return "k"  # a page that ends where the last one ended

    with pytest.raises(MemoryCorruptError, match="no progress"):
        await paging.run_pages(step)
    assert steps == [None, "k"]


# --- the LangGraph adapter's loops ---------------------------------------------------


class WalkSpy:
    """Records each walk ``paging.pages`` starts (its start cursor), wrapping
    the one walker (which runs as it is)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.starts: list[str | None] = []
        walk = paging.pages

        def pages(read: Any, start: Any = None) -> Any:
            self.starts.append(start)
            return walk(read, start)

        monkeypatch.setattr(paging, "pages", pages)


@pytest.mark.parametrize("kind", ["memory", "stepwise"])
async def test_a_checkpoint_listing_walks_pages_through_the_one_walker(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace's checkpoints, listed a page (a unit) at a time by the one
    walker: pages of 100, no more than are still wanted without a filter,
    stopping within a page once ``limit`` matches are found."""
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    async with makers_store.open_store(backend_url(kind, tmp_path)) as store:
        saver = store.langgraph_checkpointer
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        for n in range(230):
            await saver.aput(config, generate_checkpoint(), {"n": n % 2}, {})  # type: ignore[typeddict-item]
        ids = [item.checkpoint["id"] async for item in saver.alist(config)]
        assert len(ids) == 230 and ids == sorted(ids, reverse=True)
        counter, spy = OpCounter(store), WalkSpy(monkeypatch)

        async def listed(**options: Any) -> tuple[list[str], int]:
            counter.reset()
            found = [item.checkpoint["id"] async for item in saver.alist(config, **options)]
            return found, counter.units

        assert await listed() == (ids, 3)  # 100, 100, 30
        assert await listed(limit=120) == (ids[:120], 2)  # 100, then the 20 still wanted
        odd = [i for n, i in enumerate(ids) if n % 2 == 0]  # newest first: n = 229, 227...
        assert await listed(filter={"n": 1}, limit=60) == (odd[:60], 2)  # stopped in page 2
        before: Any = {"configurable": {"checkpoint_id": ids[9]}}
        assert await listed(before=before, limit=5) == (ids[10:15], 1)
        assert spy.starts == [None, None, None, ids[9]]


async def test_the_langgraph_store_reads_recency_copies_in_batches_of_the_one_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search without a query reads each namespace's recency copies through
    ``each_batch`` within its unit, the first batch read once (it also tells
    whether the prefix has namespaces below it), stopping at ``offset + limit``."""
    from makers_store.adapters.langgraph import store_programs

    batches: list[tuple[str, str | None]] = []
    loop = store_programs.each_batch

    def each_batch(prefix: str, visit: Any, **options: Any) -> Any:
        batches.append((prefix, options.get("start_after")))
        return loop(prefix, visit, **options)

    monkeypatch.setattr(store_programs, "each_batch", each_batch)
    async with makers_store.open_store("memory://", clock=FixedClock()) as store:
        lg = store.langgraph_store
        for n in range(100):
            await lg.aput(("docs",), f"k{n:02}", {"odd": n % 2 == 1})
        newest = [f"k{n:02}" for n in reversed(range(100))]
        batches.clear()
        # a filter reads batches of 64: the first (32 odd ones), then 8 of the next
        found = await lg.asearch(("docs",), filter={"odd": True}, limit=30, offset=10)
        assert [item.key for item in found] == newest[::2][10:40]
        assert len(batches) == 1 and batches[0][1] is not None  # after the first batch
        batches.clear()
        assert [item.key for item in await lg.asearch(("docs",), limit=5)] == newest[:5]
        assert batches == []  # the first batch held the 5
        for space in ("x", "y"):
            await lg.aput(("docs", space), "k", {"space": space})
        batches.clear()
        found = await lg.asearch(("docs",), limit=3)
        assert [item.key for item in found] == ["k", "k", "k99"]
        assert [start for _, start in batches] == [None] * 3  # each namespace once, from its start
        assert len({prefix for prefix, _ in batches}) == 3
