"""``store.fork_conversation``: one test per rule on every backend, the
LangGraph thread up to the fork, a crash at every step, and a property test
of forks racing writers of the source (see makers_store.lifecycle.fork)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makers_store import (
    ContextStore,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from makers_store.blob import BlobStore
from makers_store.blob_ops import Op, Program
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import (
    MemoryBlobStore,
    MemoryMap,
    StepwiseMemoryBlobStore,
)
from tests.test_crash_ordering import Crash, CrashingBlobStore, copy

# --- what a user sees of a conversation -------------------------------------------


async def seen(store: ContextStore, cid: str) -> dict[str, Any]:
    """Everything the public API shows of one conversation."""
    meta = await store.get_conversation(conversation_id=cid)
    messages = [m.to_dict() async for m in store.iter_messages(cid)]
    return {
        "meta": None if meta is None else meta.to_dict(),
        "messages": messages,
        "state": await store.bind(cid).state.items(),
        "users": await store.admin.conversation_users(cid),
    }


async def listed(store: ContextStore, user_id: str | None = None) -> list[str]:
    return [meta.conversation_id async for meta in store.iter_conversations(user_id=user_id)]


async def seed(store: ContextStore, cid: str = "src") -> list[str]:
    ids = []
    ids.append(await store.append_message(cid, "user", "hello", user_id="u1"))
    ids.append(await store.append_message(cid, "assistant", {"text": "hi"}, metadata={"n": 1}))
    ids.append(await store.append_message(cid, "user", "client", message_id="client-7"))
    ids.append(await store.append_message(cid, "assistant", "bye", user_id="u2"))
    await store.update_conversation(cid, {"title": "Trip"})
    await store.bind(cid).state.set("plan", {"step": 2})
    return ids


# --- the rules, on every backend ---------------------------------------------------


async def test_a_whole_fork_copies_messages_ids_times_metadata_state_and_users(
    store: ContextStore,
) -> None:
    ids = await seed(store)
    meta = await store.fork_conversation("src", "new")
    source, fork = await seen(store, "src"), await seen(store, "new")
    assert fork["messages"] == source["messages"]
    assert [m["message_id"] for m in fork["messages"]] == ids
    assert fork["state"] == source["state"] == {"plan": {"step": 2}}
    assert fork["users"] == source["users"] == ["u1", "u2"]
    forked_from = {"conversation_id": "src", "message_id": ids[-1]}
    assert meta.metadata == {"title": "Trip", "forked_from": forked_from}
    assert fork["meta"] == meta.to_dict()
    assert meta.message_count == 4
    assert meta.created_at == source["meta"]["created_at"]
    assert meta.last_message_at == source["messages"][-1]["created_at"]
    assert source["meta"]["metadata"] == {"title": "Trip"}  # the source is untouched
    for user in ("u1", "u2", None):
        assert "new" in await listed(store, user)
    # a client id is found in the fork, and cursors work at it
    assert (await store.get_message("new", "client-7")) is not None
    after = await store.get_messages("new", after="client-7")
    assert [m.message_id for m in after] == ids[3:]


async def test_a_fork_up_to_a_message_stops_there(store: ContextStore) -> None:
    ids = await seed(store)
    for new, up_to in (("at-generated", ids[1]), ("at-client", "client-7")):
        meta = await store.fork_conversation("src", new, up_to=up_to)
        fork = await seen(store, new)
        cut = ids.index(up_to) + 1
        assert [m["message_id"] for m in fork["messages"]] == ids[:cut]
        assert meta.message_count == cut
        assert meta.metadata["forked_from"] == {"conversation_id": "src", "message_id": up_to}
        assert meta.last_message_at == fork["messages"][-1]["created_at"]


async def test_the_fork_and_its_source_go_separate_ways(store: ContextStore) -> None:
    ids = await seed(store)
    await store.fork_conversation("src", "new", up_to=ids[1])
    added = await store.append_message("new", "user", "other way", message_id="client-7")
    await store.append_message("src", "user", "onwards")
    await store.update_message("new", ids[0], content="changed")
    await store.bind("new").state.set("plan", None)
    source = await seen(store, "src")
    fork = await seen(store, "new")
    assert [m["message_id"] for m in fork["messages"]] == [*ids[:2], added]
    assert len(source["messages"]) == 5 and source["messages"][0]["content"] == "hello"
    assert source["state"] == {"plan": {"step": 2}}
    assert (await store.get_message("src", "client-7")).content == "client"  # type: ignore[union-attr]


async def test_a_fork_of_a_fork_names_its_direct_parent(store: ContextStore) -> None:
    ids = await seed(store)
    await store.fork_conversation("src", "child", up_to=ids[2])
    meta = await store.fork_conversation("child", "grandchild", up_to=ids[1])
    assert meta.metadata["forked_from"] == {"conversation_id": "child", "message_id": ids[1]}
    assert [m["message_id"] for m in (await seen(store, "grandchild"))["messages"]] == ids[:2]


async def test_a_fork_of_a_conversation_without_messages_is_empty(store: ContextStore) -> None:
    await store.append_message("src", "user", "gone", user_id="u1")
    await store.clear_messages("src")
    await store.update_conversation("src", {"title": "Empty"})
    meta = await store.fork_conversation("src", "new")
    assert meta.message_count == 0
    assert meta.metadata == {
        "title": "Empty",
        "forked_from": {"conversation_id": "src", "message_id": None},
    }
    assert (await seen(store, "new"))["messages"] == []
    assert "new" in await listed(store, "u1")
    await store.append_message("new", "user", "a start")  # and it takes appends
    assert (await store.get_conversation("new")).message_count == 1  # type: ignore[union-attr]


async def assert_nothing_written(store: ContextStore, before: dict[str, Any], new: str) -> None:
    assert await seen(store, new) == {"meta": None, "messages": [], "state": {}, "users": None}
    assert await listed(store) == before["listed"]
    assert await store.admin.counts() == before["counts"]
    assert await store.admin.count_conversations() == before["ids"]


async def snapshot(store: ContextStore) -> dict[str, Any]:
    return {
        "listed": await listed(store),
        "counts": await store.admin.counts(),
        "ids": await store.admin.count_conversations(),
    }


async def test_an_existing_new_id_is_a_conflict_with_nothing_written(
    store: ContextStore,
) -> None:
    await seed(store)
    await store.append_message("taken", "user", "mine")
    await store.bind("state-only").state.set("k", 1)
    before = await snapshot(store)
    taken = await seen(store, "taken")
    for new in ("taken", "state-only"):
        with pytest.raises(MemoryConflictError, match="new_id"):
            await store.fork_conversation("src", new)
    assert await seen(store, "taken") == taken
    assert await store.bind("state-only").state.items() == {"k": 1}
    assert await snapshot(store) == before


async def test_a_missing_source_or_up_to_is_not_found_with_nothing_written(
    store: ContextStore,
) -> None:
    ids = await seed(store)
    other = await store.append_message("other", "user", "elsewhere")
    await store.delete_message("src", ids[0])
    before = await snapshot(store)
    with pytest.raises(MemoryNotFoundError, match="source_id"):
        await store.fork_conversation("nowhere", "new")
    for up_to in ("no-such-id", other, ids[0], "msg_0000000099_zz"):
        with pytest.raises(MemoryNotFoundError, match="up_to"):
            await store.fork_conversation("src", "new", up_to=up_to)
    await assert_nothing_written(store, before, "new")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ((123, "new"), "source_id"),
        (("", "new"), "source_id"),
        (("src", None), "new_id"),
        (("src", "x" * 300), "new_id"),
        (("src", "bad\ud800"), "new_id"),
        (("src", "src"), "new_id must differ"),
    ],
)
async def test_bad_ids_are_refused_naming_the_argument(
    store: ContextStore, arguments: tuple[Any, Any], named: str
) -> None:
    await seed(store)
    before = await snapshot(store)
    with pytest.raises(MemoryValidationError, match=named):
        await store.fork_conversation(*arguments)
    with pytest.raises(MemoryValidationError, match="up_to"):
        await store.fork_conversation("src", "new", up_to="")
    assert await snapshot(store) == before


async def test_a_new_id_created_while_the_fork_runs_is_a_conflict(store: ContextStore) -> None:
    """The commit is conditional: whoever creates the id first keeps it whole."""
    ids = [await store.append_message("src", "user", str(n)) for n in range(30)]
    results = await asyncio.gather(
        store.fork_conversation("src", "new"),
        store.append_message("new", "user", "racing"),
        return_exceptions=True,
    )
    fork = await seen(store, "new")
    if isinstance(results[0], MemoryConflictError):
        assert [m["content"] for m in fork["messages"]] == ["racing"]
        assert "forked_from" not in fork["meta"]["metadata"]
    else:  # the fork committed first; the append then joined the fork
        assert not isinstance(results[0], BaseException)
        assert [m["message_id"] for m in fork["messages"]][:30] == ids
    assert fork["meta"]["message_count"] == len(fork["messages"])


async def test_a_large_conversation_forks_page_by_page(store: ContextStore) -> None:
    batch = [{"role": "user", "content": "x" * 3000} for _ in range(100)]
    for _ in range(7):  # 700 messages, 2 MB: several pages of each kind
        await store.append_messages("src", batch)
    await store.delete_message("src", (await store.get_messages("src", limit=1))[0].message_id)
    meta = await store.fork_conversation("src", "new")
    assert meta.message_count == 699
    source = [m.message_id async for m in store.iter_messages("src")]
    assert [m.message_id async for m in store.iter_messages("new")] == source


# --- the LangGraph thread up to the fork ------------------------------------------------


def uuid6_at(ms: int, seq: int = 0) -> str:
    """A LangGraph-style checkpoint id (UUIDv6) made at Unix millisecond ``ms``."""
    stamp = ms * 10_000 + 0x01B21DD213814000
    bits = (stamp >> 12) << 80 | 6 << 76 | (stamp & 0xFFF) << 64 | 0b10 << 62 | seq << 48
    return str(uuid.UUID(int=bits))


async def test_the_thread_is_copied_up_to_the_fork_with_every_parent(store: ContextStore) -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    saver = store.langgraph_checkpointer
    ids = await seed(store)
    times = [m.created_at for m in await store.get_messages("src", limit=10)]
    parent: str | None = None
    made = []
    for n, at in enumerate([times[0], times[1], times[1], times[2] + 1, times[3]]):
        checkpoint = empty_checkpoint()
        checkpoint["id"] = uuid6_at(at, n)
        config: dict[str, Any] = {"configurable": {"thread_id": "src", "checkpoint_ns": ""}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent
        saved = await saver.aput(config, checkpoint, {"step": n, "run_id": f"run{n}"}, {})  # type: ignore[arg-type]
        await saver.aput_writes(saved, [("channel", n)], task_id=f"task{n}")
        parent = checkpoint["id"]
        made.append(checkpoint["id"])

    async def thread(tid: str) -> list[tuple[str, str | None, list[Any]]]:
        config = {"configurable": {"thread_id": tid}}
        return [
            (
                item.config["configurable"]["checkpoint_id"],
                None
                if item.parent_config is None
                else item.parent_config["configurable"]["checkpoint_id"],
                [write[1:] for write in item.pending_writes or []],
            )
            async for item in saver.alist(config)  # type: ignore[arg-type]
        ]

    await store.fork_conversation("src", "whole")
    assert await thread("whole") == await thread("src")
    await store.fork_conversation("src", "cut", up_to=ids[1])
    kept = await thread("cut")
    assert [item[0] for item in kept] == made[:3][::-1]  # made at or before message 2
    assert kept == (await thread("src"))[2:]  # with parents and writes
    await store.fork_conversation("src", "first", up_to=ids[0])
    assert [item[0] for item in await thread("first")] == [made[0]]
    await saver.adelete_for_runs(["run1"])  # run markers came along
    assert [item[0] for item in await thread("cut")] == [made[2], made[0]]


async def test_a_delta_channel_graph_reads_the_same_in_the_fork(store: ContextStore) -> None:
    """DeltaChannel keeps values as writes along the parent chain: the fork
    must carry the chain for the values to come back."""
    pytest.importorskip("langgraph")
    from langgraph.channels.delta import DeltaChannel
    from langgraph.graph import END, START, StateGraph

    def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
        return [*state, *(item for write in writes for item in write)]

    # the functional form: evaluated here, where DeltaChannel is defined
    State = TypedDict(  # noqa: UP013
        "State", {"log": Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]}
    )

    def step(state: Any) -> dict[str, list[str]]:
        return {"log": [f"turn{len(state['log'])}"]}

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    graph = builder.compile(checkpointer=store.langgraph_checkpointer)
    config: dict[str, Any] = {"configurable": {"thread_id": "src"}}
    store.runner.clock = _wall_clock  # checkpoint ids carry wall-clock times
    await store.append_message("src", "user", "start")
    for turn in range(5):
        await graph.ainvoke({"log": [f"user{turn}"]}, config)  # type: ignore[arg-type]
    midway = (await graph.aget_state(config)).values  # type: ignore[arg-type]
    await asyncio.sleep(0.005)
    mark = await store.append_message("src", "assistant", "midway")
    await asyncio.sleep(0.005)
    for turn in range(5, 8):
        await graph.ainvoke({"log": [f"user{turn}"]}, config)  # type: ignore[arg-type]
    await store.fork_conversation("src", "whole")
    await store.fork_conversation("src", "cut", up_to=mark)
    source = (await graph.aget_state(config)).values  # type: ignore[arg-type]
    assert len(source["log"]) == 16
    for tid, expected in (("whole", source), ("cut", midway)):
        got = await graph.aget_state({"configurable": {"thread_id": tid}})  # type: ignore[arg-type]
        assert got.values == expected


def _wall_clock() -> int:
    import time

    return time.time_ns() // 1_000_000


# --- a crash at every step (no transactions) ---------------------------------------


async def crash_seed() -> MemoryMap:
    data = MemoryMap()
    store = ContextStore(
        StepwiseMemoryBlobStore(data), clock=FixedClock(), ids=counting_suffixes("s")
    )
    await store.append_messages(
        "src", [{"role": "user", "content": str(n)} for n in range(7)], user_id="u1"
    )
    await store.append_message("src", "assistant", "c", message_id="client-1", user_id="u2")
    await store.update_conversation("src", {"title": "T"})
    await store.bind("src").state.set("k", [1])
    await store.bind("src").state.set("é" * 100, 2)  # a bounded state key
    return data


async def test_a_fork_cut_short_at_any_step_leaves_nothing_or_the_whole_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from makers_store.maintenance import exporting as transfer

    monkeypatch.setattr(transfer, "_LIST_BATCH", 3)  # several pages of three
    seeded = await crash_seed()
    reference_store = ContextStore(
        StepwiseMemoryBlobStore(copy(seeded)),
        clock=FixedClock(start=1_800_000_000_000),
        ids=counting_suffixes("r"),
    )
    reference = await seen(reference_store, "src")
    await reference_store.fork_conversation("src", "new")
    whole = await seen(reference_store, "new")
    steps = 0
    while True:
        data = copy(seeded)
        blobs = CrashingBlobStore(data, steps)
        store = ContextStore(
            blobs, clock=FixedClock(start=1_800_000_000_000), ids=counting_suffixes("r")
        )
        try:
            await store.fork_conversation("src", "new")
            finished = True
        except Crash:
            finished = False
        after = ContextStore(
            StepwiseMemoryBlobStore(data),
            clock=FixedClock(start=1_900_000_000_000),
            ids=counting_suffixes("z"),
        )
        assert await seen(after, "src") == reference, steps
        fork = await seen(after, "new")
        assert fork in (whole, {"meta": None, "messages": [], "state": {}, "users": None}), steps
        assert (await after.admin.counts()).conversations == (2 if fork["meta"] else 1)
        assert sorted(await listed(after)) == (["new", "src"] if fork["meta"] else ["src"])
        if fork["meta"] is None:  # a retry finishes the job
            await after.fork_conversation("src", "new")
            assert await seen(after, "new") == whole
        else:
            with pytest.raises(MemoryConflictError):
                await after.fork_conversation("src", "new")
        if finished:
            break
        steps += 1
    assert steps > 20


# --- forks racing writers of the source -------------------------------------------------


class Interleaving:
    """Runs another writer's action between the fork's steps: between its
    operations on a stepwise backend, between its units on an atomic one."""

    def __init__(self, actions: list[Callable[[], Awaitable[None]]], when: list[int]) -> None:
        self.actions = actions
        self.when = when
        self.step = 0
        self.busy = False

    async def between(self) -> None:
        if self.busy:
            return
        self.busy = True
        try:
            while self.actions and self.when and self.when[0] <= self.step:
                self.when.pop(0)
                await self.actions.pop(0)()
            self.step += 1
        finally:
            self.busy = False


class SteppedStore(StepwiseMemoryBlobStore):
    interleaving: Interleaving | None = None

    async def execute(self, op: Op) -> Any:
        if self.interleaving is not None:
            await self.interleaving.between()
        return await super().execute(op)


class UnitStore(MemoryBlobStore):
    interleaving: Interleaving | None = None

    async def run(self, program: Program[Any], *, write: bool) -> Any:
        if self.interleaving is not None:
            await self.interleaving.between()
        return await super().run(program, write=write)


ACTIONS = st.lists(
    st.tuples(
        st.integers(0, 120),
        st.sampled_from(["append", "update", "delete"]),
        st.integers(0, 40),
    ),
    max_size=8,
)


@pytest.mark.parametrize("kind", ["stepwise", "atomic"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS, cut=st.one_of(st.none(), st.integers(0, 11)))
async def test_a_fork_reads_as_the_source_up_to_the_cut_whatever_the_interleaving(
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    actions: list[tuple[int, str, int]],
    cut: int | None,
) -> None:
    from makers_store.maintenance import exporting as transfer

    monkeypatch.setattr(transfer, "_LIST_BATCH", 2)
    blobs: BlobStore = SteppedStore() if kind == "stepwise" else UnitStore()
    store = ContextStore(blobs, clock=FixedClock(), ids=counting_suffixes("a"))
    writer = ContextStore(
        blobs, clock=FixedClock(start=1_750_000_000_000), ids=counting_suffixes("w")
    )
    ids = [
        await store.append_message("src", "user", f"m{n}", message_id=None if n % 3 else f"c{n}")
        for n in range(12)
    ]
    versions: dict[str, set[str]] = {}
    states: list[list[tuple[str, str, int]]] = []

    async def record() -> None:
        messages = [m async for m in writer.iter_messages("src")]
        for message in messages:
            versions.setdefault(message.message_id, set()).add(message.content)
        states.append([(m.message_id, m.role, m.created_at) for m in messages])

    def act(name: str, pick: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            present = [m.message_id async for m in writer.iter_messages("src")]
            if name == "append" or not present:
                await writer.append_message("src", "assistant", f"late{pick}")
            elif name == "update":
                await writer.update_message("src", present[pick % len(present)], content=f"u{pick}")
            else:
                await writer.delete_message("src", present[pick % len(present)])
            await record()

        return run

    await record()
    ordered = sorted(actions)
    # a fork here runs about 20 units and 120 operations: steps scaled to them
    scale = 1 if kind == "stepwise" else 6
    blobs.interleaving = Interleaving(  # type: ignore[attr-defined]
        [act(n, p) for _, n, p in ordered], [w // scale for w, _, _ in ordered]
    )
    up_to = None if cut is None else ids[cut]
    try:
        meta = await store.fork_conversation("src", "new", up_to=up_to)
    except MemoryNotFoundError:  # up_to was deleted before the fork could plan
        assert up_to is not None and up_to not in [m for m, _, _ in states[-1]]
        blobs.interleaving = None  # type: ignore[attr-defined]
        assert await store.get_conversation("new") is None
        return
    blobs.interleaving = None  # type: ignore[attr-defined]
    fork = [m async for m in store.iter_messages("new")]
    named = meta.metadata["forked_from"]["message_id"]
    assert up_to is None or named == up_to
    got = [(m.message_id, m.role, m.created_at) for m in fork]
    assert any(
        got == state[: [m for m, _, _ in state].index(named) + 1]
        for state in states
        if named in [m for m, _, _ in state]
    ) or (named is None and got == [])
    for message in fork:
        assert message.content in versions[message.message_id]
    assert meta.message_count == len(fork)


@pytest.mark.parametrize("kind", ["stepwise", "atomic"])
@pytest.mark.parametrize("cut", [0, 5, 11])
async def test_changes_after_the_cut_never_restart_the_fork(
    monkeypatch: pytest.MonkeyPatch, kind: str, cut: int
) -> None:
    """Between every step of the fork (every operation on a stepwise backend,
    every unit on an atomic one) another writer appends to the source and
    deletes a message after the cut: the fork plans once and commits the
    source up to the cut (issue 35: such deletes restarted it until it gave up)."""
    from makers_store.lifecycle import fork
    from makers_store.maintenance import exporting as transfer

    monkeypatch.setattr(transfer, "_LIST_BATCH", 2)  # many pages: many steps to churn between
    plans = 0
    planning = fork._plan

    def counted(*args: Any) -> Any:
        nonlocal plans
        plans += 1
        return planning(*args)

    monkeypatch.setattr(fork, "_plan", counted)
    blobs: BlobStore = SteppedStore() if kind == "stepwise" else UnitStore()
    store = ContextStore(blobs, clock=FixedClock(), ids=counting_suffixes("a"))
    writer = ContextStore(blobs, clock=FixedClock(), ids=counting_suffixes("w"))
    ids = [await store.append_message("src", "user", f"m{n}") for n in range(12)]
    churned = 0

    async def churn() -> None:
        nonlocal churned
        await writer.append_message("src", "assistant", "late")
        newest = await writer.get_messages("src", order="desc", limit=2)
        if newest[-1].content == "late":  # the late one before the newest: after any cut
            await writer.delete_message("src", newest[-1].message_id)
            churned += 1

    steps = 400
    blobs.interleaving = Interleaving([churn] * steps, list(range(steps)))  # type: ignore[attr-defined]
    meta = await store.fork_conversation("src", "new", up_to=ids[cut])
    blobs.interleaving = None  # type: ignore[attr-defined]
    assert plans == 1 and churned >= (20 if kind == "stepwise" else 5)
    expected = ids[: cut + 1]
    assert [m.message_id async for m in store.iter_messages("new")] == expected
    assert meta.message_count == len(expected)
