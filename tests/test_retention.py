"""Retention (issue 24, item 1): ``store.admin.prune_conversations``.

One test per rule on every backend; a hypothesis property that a prune never
deletes a conversation written after it began, with writers acting between
the prune's steps (stepwise) and between its units (atomic); a crash at
every step of one conversation's prune on a backend without transactions.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makers_store import (
    ContextStore,
    MemoryValidationError,
    PruneReport,
    open_store,
    open_sync_store,
)
from makers_store.blob_ops import Get, Op
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import (
    MemoryBlobStore,
    MemoryMap,
    StepwiseMemoryBlobStore,
)
from tests.backends import SHARED_BACKENDS, backend_url
from tests.test_crash_ordering import Crash, CrashingBlobStore
from tests.test_multiprocess import worker

DAY = 86_400_000
IDLE = timedelta(days=7)


def advance(store: ContextStore, ms: int) -> None:
    clock = store.runner.clock
    assert isinstance(clock, FixedClock)
    clock.now += ms


async def seed(store: ContextStore, cid: str, count: int = 2, user_id: str | None = None) -> None:
    await store.append_messages(
        cid, [{"role": "user", "content": f"{cid}-{n}"} for n in range(count)], user_id=user_id
    )


async def keys_of(store: ContextStore, cid: str) -> list[str]:
    return [info.key async for info in store.admin.list_blobs(f"c/{cid}/")]


async def alive(store: ContextStore) -> list[str]:
    return sorted([c.conversation_id async for c in store.iter_conversations()])


# --- the rules, on every backend ---------------------------------------------


async def test_idle_conversations_go_whole_and_active_ones_stay(store: ContextStore) -> None:
    await seed(store, "old", 3, user_id="u1")
    await store.bind("old").state.set("k", {"v": 1})
    await seed(store, "fresh", 1, user_id="u1")
    advance(store, 10 * DAY)
    await seed(store, "fresh", 1)
    report = await store.admin.prune_conversations(IDLE)
    assert isinstance(report, PruneReport)
    assert (report.conversation_ids, report.conversations, report.messages) == (["old"], 1, 3)
    assert report.to_dict()["conversation_ids"] == ["old"]
    assert await alive(store) == ["fresh"]
    assert await keys_of(store, "old") == []  # messages, meta, state, everything
    assert await store.bind("old").state.items() == {}
    assert (await store.list_conversations(user_id="u1")).items[0].conversation_id == "fresh"
    assert (await store.admin.check_index()).ok
    assert (await store.admin.prune_conversations(IDLE)).conversations == 0


@pytest.mark.parametrize(
    "write",
    [
        "state set",
        "state delete",
        "metadata",
        "summary",
        "message update",
        "message delete",
        "clear",
    ],
)
async def test_any_write_makes_a_conversation_active(store: ContextStore, write: str) -> None:
    await seed(store, "c1", 2)
    advance(store, 10 * DAY)
    first = (await store.get_messages("c1"))[0].message_id
    actions: dict[str, Callable[[], Awaitable[Any]]] = {
        "state set": lambda: store.bind("c1").state.set("k", 1),
        "state delete": lambda: store.bind("c1").state.delete("k"),
        "metadata": lambda: store.update_conversation("c1", {"t": 1}),
        "summary": lambda: store.set_summary("c1", "so far", until=first),
        "message update": lambda: store.update_message("c1", first, content="x"),
        "message delete": lambda: store.delete_message("c1", first),
        "clear": lambda: store.clear_messages("c1"),
    }
    await actions[write]()
    assert (await store.admin.prune_conversations(IDLE)).conversations == 0
    assert await alive(store) == ["c1"]
    advance(store, 10 * DAY)  # then it goes idle again
    assert (await store.admin.prune_conversations(IDLE)).conversation_ids == ["c1"]


async def test_a_fresh_fork_of_an_idle_conversation_stays(store: ContextStore) -> None:
    await seed(store, "old", 2)
    advance(store, 10 * DAY)
    await store.fork_conversation("old", "branch")  # keeps old's times: the fork is the write
    assert (await store.admin.prune_conversations(IDLE)).conversation_ids == ["old"]
    assert await alive(store) == ["branch"]


async def test_a_recent_langgraph_checkpoint_makes_it_active(store: ContextStore) -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    await seed(store, "t1", 1)
    advance(store, 10 * DAY)
    saver = store.langgraph_checkpointer
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {}, {})  # type: ignore[arg-type]
    assert (await store.admin.prune_conversations(IDLE)).conversations == 0
    advance(store, 10 * DAY)
    assert (await store.admin.prune_conversations(IDLE)).conversation_ids == ["t1"]
    assert await keys_of(store, "t1") == []  # the thread went with it


async def test_a_recent_claude_transcript_makes_it_active(store: ContextStore) -> None:
    pytest.importorskip("claude_agent_sdk")
    cid = "3f1e7c2a-0000-4000-8000-000000000001"  # a session id is a conversation id
    await seed(store, cid, 1)
    advance(store, 10 * DAY)
    sessions = store.claude_session_store()
    key = {"project_key": "p", "session_id": cid}
    await sessions.append(key, [{"type": "user", "uuid": "e1", "message": {}}])  # type: ignore[arg-type, list-item]
    assert (await store.admin.prune_conversations(IDLE)).conversations == 0
    advance(store, 10 * DAY)
    assert (await store.admin.prune_conversations(IDLE)).conversation_ids == [cid]
    assert await sessions.load(key) is None  # type: ignore[arg-type]


async def test_dry_run_changes_nothing(store: ContextStore) -> None:
    await seed(store, "a", 2)
    await seed(store, "b", 1)
    advance(store, 10 * DAY)
    report = await store.admin.prune_conversations(IDLE, dry_run=True)
    assert report.dry_run and sorted(report.conversation_ids) == ["a", "b"]
    assert report.messages == 3
    assert await alive(store) == ["a", "b"]
    assert len(await keys_of(store, "a")) > 0


async def test_user_id_prunes_only_that_users_conversations(store: ContextStore) -> None:
    await seed(store, "mine", 1, user_id="u1")
    await seed(store, "theirs", 1, user_id="u2")
    await seed(store, "nobodys", 1)
    advance(store, 10 * DAY)
    report = await store.admin.prune_conversations(IDLE, user_id="u1")
    assert report.conversation_ids == ["mine"]
    assert await alive(store) == ["nobodys", "theirs"]
    assert (await store.admin.check_index()).ok


async def test_a_plan_is_judged_again_when_deleted(store: ContextStore) -> None:
    for cid in ("a", "b", "c"):
        await seed(store, cid, 1)
    advance(store, 10 * DAY)
    plan = await store.admin.prune_conversations(IDLE, dry_run=True)
    await store.bind("b").state.set("k", 1)  # active again after the plan
    await seed(store, "d", 1)  # not in the plan
    advance(store, 10 * DAY)
    await store.update_conversation("c", {"t": 1})  # long after: active too
    report = await store.admin.prune_conversations(IDLE, conversation_ids=plan.conversation_ids)
    # b was written after the plan, but is idle again by now; c is not; d was never planned
    assert sorted(report.conversation_ids) == ["a", "b"]
    assert report.kept == 1
    assert await alive(store) == ["c", "d"]


async def test_only_conversations_older_than_the_cutoff_are_read(tmp_path: Any) -> None:
    """The walk starts at the cutoff's place in the recency index: the metas
    of newer conversations are never read (cost grows with what is pruned)."""
    reads: list[str] = []

    class Counting(MemoryBlobStore):
        async def run(self, program: Any, *, write: bool) -> Any:
            def watch(op: Op) -> Op:
                if isinstance(op, Get) and op.key.endswith("/meta"):
                    reads.append(op.key)
                return op

            return await super().run(_spy(program, watch), write=write)

    store = ContextStore(Counting(), clock=FixedClock(), ids=counting_suffixes())
    async with store:
        for n in range(3):
            await seed(store, f"old{n}", 1)
        advance(store, 10 * DAY)
        for n in range(40):
            await seed(store, f"new{n}", 1)
        reads.clear()
        report = await store.admin.prune_conversations(IDLE)
        assert sorted(report.conversation_ids) == ["old0", "old1", "old2"]
        assert all("/old" in key for key in reads), reads


def _spy(program: Any, watch: Callable[[Op], Op]) -> Any:
    """``program`` with each operation shown to ``watch`` on its way out."""
    try:
        op = next(program)
        while True:
            try:
                result = yield watch(op)
            except BaseException as exc:  # thrown in: pass it on
                op = program.throw(exc)
            else:
                op = program.send(result)
    except StopIteration as stop:
        return stop.value


async def test_bad_arguments_are_named(store: ContextStore) -> None:
    await seed(store, "a", 1)
    admin = store.admin
    for bad in (timedelta(0), timedelta(seconds=-5), timedelta(microseconds=10)):
        with pytest.raises(MemoryValidationError, match="idle_for"):
            await admin.prune_conversations(bad)
    for wrong in (30, "30d", None, 1.5):
        with pytest.raises(MemoryValidationError, match="idle_for"):
            await admin.prune_conversations(wrong)  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="user_id"):
        await admin.prune_conversations(IDLE, user_id="")
    with pytest.raises(MemoryValidationError, match="dry_run"):
        await admin.prune_conversations(IDLE, dry_run="yes")  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="conversation_ids"):
        await admin.prune_conversations(IDLE, conversation_ids="a")
    assert await alive(store) == ["a"]


def test_the_blocking_twin_prunes(tmp_path: Any) -> None:
    clock = FixedClock()
    with open_sync_store(f"sqlite:///{tmp_path}/s.db", clock=clock) as store:
        store.append_message("c1", "user", "hi")
        clock.now += 10 * DAY
        assert store.admin.prune_conversations(IDLE).conversation_ids == ["c1"]
        assert store.get_conversation("c1") is None


# --- writers racing the prune --------------------------------------------------


class Interleaved:
    """A shared in-memory store in which a writer acts between the prune's
    operations (stepwise) or units (atomic), at the moments ``cuts`` names."""

    def __init__(self, atomic: bool) -> None:
        self.data = MemoryMap()
        self.clock = FixedClock(step=0)
        self.ticks = 0
        self.hooks: dict[int, Callable[[], Awaitable[Any]]] = {}
        outer = self

        class Hooked(MemoryBlobStore if atomic else StepwiseMemoryBlobStore):  # type: ignore[misc]
            async def run(self, program: Any, *, write: bool) -> Any:
                if atomic:
                    await outer.tick()
                return await super().run(program, write=write)

            async def execute(self, op: Op) -> object:
                await outer.tick()
                return await super().execute(op)

        plain = MemoryBlobStore if atomic else StepwiseMemoryBlobStore
        self.pruner = ContextStore(Hooked(self.data), clock=self.clock, ids=counting_suffixes("p"))
        self.writer = ContextStore(plain(self.data), clock=self.clock, ids=counting_suffixes("w"))

    async def tick(self) -> None:
        hook = self.hooks.pop(self.ticks, None)
        self.ticks += 1
        if hook is not None:
            await hook()


WRITES = {
    "append": lambda s, cid: s.append_message(cid, "user", "late"),
    "state": lambda s, cid: s.bind(cid).state.set("late", True),
    "metadata": lambda s, cid: s.update_conversation(cid, {"late": True}),
}


async def _written(store: ContextStore, cid: str, write: str) -> bool:
    if write == "append":
        return any(m.content == "late" for m in await store.get_messages(cid, limit=100))
    if write == "state":
        return await store.bind(cid).state.get("late") is True
    meta = await store.get_conversation(cid)
    return meta is not None and meta.metadata.get("late") is True


async def _whole_or_gone(store: ContextStore, cid: str, count: int) -> str:
    meta = await store.get_conversation(cid)
    messages = await store.get_messages(cid, limit=100)
    if meta is None:
        assert messages == []
        return "gone"
    assert meta.message_count == len(messages)
    old = [m for m in messages if m.content != "late"]
    assert len(old) in (0, count), "torn: some of the old messages are gone"
    return "whole" if old else "new"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    atomic=st.booleans(),
    writes=st.lists(
        st.tuples(st.integers(0, 60), st.sampled_from(sorted(WRITES)), st.integers(0, 2)),
        max_size=4,
    ),
)
def test_a_prune_never_deletes_a_write_made_after_it_began(
    atomic: bool, writes: list[tuple[int, str, int]]
) -> None:
    asyncio.run(_race(atomic, writes))


async def _race(atomic: bool, writes: list[tuple[int, str, int]]) -> None:
    world = Interleaved(atomic)
    cids = ["c0", "c1", "c2"]
    for cid in cids:
        await world.writer.append_messages(
            cid, [{"role": "user", "content": f"{cid}-{n}"} for n in range(3)], user_id="u"
        )
    world.clock.now += 10 * DAY
    done: list[tuple[str, str]] = []
    for at, write, which in writes:
        cid = cids[which]

        async def act(write: str = write, cid: str = cid) -> None:
            if write == "metadata" and await world.writer.get_conversation(cid) is None:
                return  # nothing to update: deleted before this writer came
            await WRITES[write](world.writer, cid)
            done.append((cid, write))

        world.hooks.setdefault(at, act)
    report = await world.pruner.admin.prune_conversations(IDLE)
    for cid, write in done:
        assert await _written(world.writer, cid, write), f"{write} to {cid} was lost"
    for cid in cids:
        shape = await _whole_or_gone(world.writer, cid, 3)
        written = any(c == cid for c, _ in done)
        if not written:  # nobody wrote it: idle, so gone
            assert shape == "gone" and cid in report.conversation_ids
    assert (await world.writer.admin.check_index()).ok


@pytest.mark.parametrize("atomic", [False, True])
async def test_a_write_between_judgment_and_delete_keeps_it_whole(atomic: bool) -> None:
    """Every moment of one conversation's prune, a state write: before the
    commit the conversation is kept with all its messages; after it, the
    write starts a new conversation that the rest of the prune leaves alone."""
    moments = 0
    while True:
        world = Interleaved(atomic)
        await world.writer.append_messages(
            "c1", [{"role": "user", "content": str(n)} for n in range(3)]
        )
        await world.writer.bind("c1").state.set("k", 1)
        world.clock.now += 10 * DAY
        ran: list[bool] = []

        async def write(ran: list[bool] = ran, world: Interleaved = world) -> None:
            await world.writer.bind("c1").state.set("late", True)
            ran.append(True)

        world.hooks[moments] = write
        report = await world.pruner.admin.prune_conversations(IDLE)
        if not ran:
            assert report.conversation_ids == ["c1"]
            break
        assert await world.writer.bind("c1").state.get("late") is True
        shape = await _whole_or_gone(world.writer, "c1", 3)
        if report.conversation_ids:  # committed before the write: the write is a new start
            assert shape == "gone"
        else:
            assert shape == "whole"
            assert await world.writer.bind("c1").state.get("k") == 1
        assert (await world.writer.admin.check_index()).ok
        moments += 1
    assert moments >= (2 if atomic else 8)


# --- crash at every step (no transactions) ----------------------------------------


async def test_a_prune_cut_short_anywhere_leaves_whole_or_gone_and_a_second_finishes() -> None:
    clock = FixedClock(step=0)
    seeded = MemoryMap()
    seeder = ContextStore(StepwiseMemoryBlobStore(seeded), clock=clock, ids=counting_suffixes())
    await seeder.append_messages(
        "c1", [{"role": "user", "content": str(n)} for n in range(4)], user_id="u"
    )
    await seeder.bind("c1").state.set("k", 1)
    await seeder.append_message("keep", "user", "x")
    clock.now += 10 * DAY
    await seeder.append_message("keep", "user", "y")
    step = 0
    while True:
        data = MemoryMap()
        data.blobs = dict(seeded.blobs)
        data.sorted_keys = list(seeded.sorted_keys)
        crashing = CrashingBlobStore(data, step)
        store = ContextStore(crashing, clock=clock, ids=counting_suffixes("r"))
        try:
            await store.admin.prune_conversations(IDLE)
        except Crash:
            pass
        else:
            break
        after = ContextStore(StepwiseMemoryBlobStore(data), clock=clock)
        shape = await _whole_or_gone(after, "c1", 4)
        assert shape in ("whole", "gone")
        if shape == "whole":
            assert await after.bind("c1").state.get("k") == 1
        assert await alive(after) == sorted(["keep"] + (["c1"] if shape == "whole" else []))
        again = await after.admin.prune_conversations(IDLE)
        assert again.conversation_ids in ([], ["c1"])
        assert await alive(after) == ["keep"]
        assert await keys_of(after, "c1") == []
        assert (await after.admin.check_index()).ok
        step += 1
    assert step > 5


@pytest.mark.parametrize("remove", ["prune", "delete_conversation"])
async def test_a_removal_cut_short_anywhere_is_whole_or_gone_for_the_checkpointer(
    remove: str,
) -> None:
    """Issue 35: after a prune killed on S3 the conversation read as gone while
    the LangGraph checkpointer still returned its checkpoint (and, cut in the
    middle of the thread's keys, it would return an older one). Without
    transactions its reads look at meta first: at every step it gives the
    latest checkpoint and the whole history, or nothing, as the store does."""
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    clock = FixedClock(step=0)
    seeded = MemoryMap()
    seeder = ContextStore(StepwiseMemoryBlobStore(seeded), clock=clock, ids=counting_suffixes())
    await seeder.append_messages("c1", [{"role": "user", "content": str(n)} for n in range(3)])
    config: Any = {"configurable": {"thread_id": "c1", "checkpoint_ns": ""}}
    for n in range(3):
        checkpoint = empty_checkpoint()
        config = await seeder.langgraph_checkpointer.aput(config, checkpoint, {"n": n}, {})
    latest = config["configurable"]["checkpoint_id"]
    clock.now += 10 * DAY
    step = 0
    while True:
        data = MemoryMap()
        data.blobs = dict(seeded.blobs)
        data.sorted_keys = list(seeded.sorted_keys)
        store = ContextStore(CrashingBlobStore(data, step), clock=clock, ids=counting_suffixes("r"))
        try:
            if remove == "prune":
                await store.admin.prune_conversations(IDLE)
            else:
                await store.delete_conversation("c1")
        except Crash:
            pass
        else:
            break
        after = ContextStore(StepwiseMemoryBlobStore(data), clock=clock)
        shape = await _whole_or_gone(after, "c1", 3)
        saver = after.langgraph_checkpointer
        read = {"configurable": {"thread_id": "c1", "checkpoint_ns": ""}}
        found = await saver.aget_tuple(read)
        history = [item async for item in saver.alist(read)]
        if shape == "whole":
            assert found is not None and found.checkpoint["id"] == latest, step
            assert len(history) == 3, step
        else:
            assert found is None and history == [], (step, shape)
        step += 1
    assert step > 5


# --- other processes (SQLite, PostgreSQL) ------------------------------------------

PROCESS_BACKENDS = [kind for kind in SHARED_BACKENDS if kind in ("sqlite", "postgres")]
SEEDED = 40


async def _seed_idle(url: str, count: int) -> None:
    """``count`` conversations p0.. of 3 messages each, written in 2023."""
    async with open_store(url, clock=FixedClock(), ids=counting_suffixes("s")) as store:
        for n in range(count):
            await store.append_messages(
                f"p{n}", [{"role": "user", "content": f"old-{k}"} for k in range(3)], user_id="u"
            )


async def _whole_everywhere(url: str, count: int) -> dict[str, str]:
    """Each conversation's shape: whole (its 3 old messages, maybe late ones),
    new (late ones only: written after the prune deleted it) or gone."""
    shapes = {}
    async with open_store(url) as store:
        for n in range(count):
            shapes[f"p{n}"] = await _whole_or_gone(store, f"p{n}", 3)
        assert (await store.admin.check_index()).ok
    return shapes


@pytest.mark.slow
@pytest.mark.parametrize("kind", PROCESS_BACKENDS)
async def test_writers_in_other_processes_lose_nothing_to_a_prune(
    kind: str, tmp_path: Path
) -> None:
    url = backend_url(kind, tmp_path)
    await _seed_idle(url, SEEDED)
    writers = [worker("touch", url, "p", str(SEEDED), "15", str(seed)) for seed in range(3)]
    touched = set()
    for proc in writers:  # each has written once: the prune races the rest
        assert proc.stdout is not None
        touched.add(proc.stdout.readline().strip())
    async with open_store(url) as store:
        report = await store.admin.prune_conversations(timedelta(days=1))
    for proc in writers:
        assert proc.stdout is not None and proc.stderr is not None
        touched |= set(proc.stdout.read().split())  # the rest, after the line read above
        err = proc.stderr.read()
        assert proc.wait(timeout=240) == 0, err
        proc.stdout.close()
        proc.stderr.close()
    shapes = await _whole_everywhere(url, SEEDED)
    async with open_store(url) as store:
        for cid in touched:  # every acknowledged append is there
            assert any(m.content == "late" for m in await store.get_messages(cid, limit=100))
    for cid, shape in shapes.items():
        if cid not in touched:
            assert shape == "gone" and cid in report.conversation_ids
        if shape == "whole":
            assert cid not in report.conversation_ids
    assert len(report.conversation_ids) >= SEEDED - len(touched)


@pytest.mark.slow
@pytest.mark.parametrize("kind", PROCESS_BACKENDS)
@pytest.mark.parametrize("seed", range(4))
async def test_a_prune_killed_anywhere_leaves_whole_or_gone(
    kind: str, tmp_path: Path, seed: int
) -> None:
    url = backend_url(kind, tmp_path)
    count = 120
    await _seed_idle(url, count)
    proc = worker("prune", url, "3600")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    await asyncio.sleep(random.Random(seed).uniform(0.0, 0.15))  # a random point of the prune
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    printed = proc.stdout.read().split()
    done = max([int(line) for line in printed if line.isdigit()], default=0)
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    shapes = await _whole_everywhere(url, count)
    assert set(shapes.values()) <= {"whole", "gone"}
    assert list(shapes.values()).count("gone") >= done
    async with open_store(url) as store:
        again = await store.admin.prune_conversations(timedelta(hours=1))
        assert len(again.conversation_ids) == list(shapes.values()).count("whole")
        assert [c async for c in store.iter_conversations()] == []
        assert (await store.admin.check_index()).ok


@pytest.mark.slow
@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_index_check_is_clean_after_a_prune_killed_a_dozen_times_among_writers(
    kind: str, tmp_path: Path
) -> None:
    """Issue 35: after prunes killed among racing writers, `index check` kept
    reporting entries of conversations that no longer exist through any
    number of CLI prunes. A prune with a plan, as the CLI runs it, leaves the
    index clean, and every conversation is whole, new or gone."""
    url = backend_url(kind, tmp_path)
    count = 24
    await _seed_idle(url, count)
    rng = random.Random(35)
    writers = [worker("touch", url, "p", str(count), "6", str(seed)) for seed in range(2)]
    for _ in range(12 if kind != "s3" else 6):
        proc = worker("prune", url, "3600")
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        await asyncio.sleep(rng.uniform(0.0, 0.1 if kind != "s3" else 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    for proc in writers:
        proc.communicate(timeout=240)
        assert proc.returncode == 0
    async with open_store(url) as store:
        for n in range(count):
            assert await _whole_or_gone(store, f"p{n}", 3) in ("whole", "new", "gone")
        plan = await store.admin.prune_conversations(timedelta(hours=1), dry_run=True)
        await store.admin.prune_conversations(
            timedelta(hours=1), conversation_ids=plan.conversation_ids
        )
        check = await store.admin.check_index()
        assert check.ok, check.drift
