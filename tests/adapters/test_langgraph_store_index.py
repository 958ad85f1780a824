"""The LangGraph store's derived index (namespace directory, recency copies)
on every adapter backend: what each read costs in blob operations, that the
index follows every write, TTL and deletion, how a store written before the
index existed is indexed on first use, and how ``rebuild_index`` mends what
blob-level copies and crashes leave."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from makers_store import ContextStore
from makers_store._core import adapter_keys, keys
from makers_store.adapters.langgraph import store_index as index
from makers_store.adapters.langgraph.store import MakersLangGraphStore
from makers_store.adapters.langgraph.store_records import encode_record
from makers_store.blob import BlobStore
from makers_store.blob_ops import ListKeys, Op, Program, Scan
from makers_store.clock import FixedClock
from makers_store.errors import PreconditionFailedError

T = TypeVar("T")
MINUTE = 60_000


class OpCounter(BlobStore):
    """Runs every unit on ``inner`` and records each operation with how many
    keys a listing returned: instrumentation, the backend is the real one."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities  # type: ignore[misc]
        self.seen: list[tuple[Op, int]] = []

    async def run(self, program: Program[T], *, write: bool) -> T:
        return await self.inner.run(self._watched(program), write=write)

    def _watched(self, program: Program[T]) -> Generator[Op, Any, T]:
        try:
            op = next(program)
            while True:
                try:
                    result = yield op
                except PreconditionFailedError as exc:
                    self.seen.append((op, 0))
                    op = program.throw(exc)
                    continue
                listed = len(result) if isinstance(op, ListKeys | Scan) else 0
                self.seen.append((op, listed))
                op = program.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            program.close()

    async def close(self) -> None:
        await self.inner.close()

    def take(self) -> list[tuple[Op, int]]:
        seen, self.seen = self.seen, []
        return seen


@pytest.fixture
def counted(store: ContextStore) -> tuple[MakersLangGraphStore, OpCounter]:
    counter = OpCounter(store.blobs)
    counted_store = ContextStore(counter, clock=store.runner.clock)
    return MakersLangGraphStore(counted_store), counter


def clock_of(store: ContextStore) -> FixedClock:
    clock = store.runner.clock
    assert isinstance(clock, FixedClock)
    return clock


async def fill(
    lg: MakersLangGraphStore, clock: FixedClock, spread: dict[tuple[str, ...], int]
) -> None:
    """``spread[namespace]`` items in each namespace, each put 1 ms after the last."""
    for namespace, count in spread.items():
        for n in range(count):
            clock.now += 1
            await lg.abatch([PutOp(namespace, f"k{n:03d}", {"n": n, "ns": "/".join(namespace)})])


# --- cost: listings, not scans ------------------------------------------------


async def test_reads_cost_a_listing_not_a_scan(
    store: ContextStore, counted: tuple[MakersLangGraphStore, OpCounter]
) -> None:
    lg, counter = counted
    spread = {("u", f"user-{i}", "mem"): 60 for i in range(4)} | {("u", "-first", "mem"): 5}
    await fill(lg, clock_of(store), spread)
    counter.take()

    page = await lg.asearch(("u", "user-2", "mem"), limit=10)
    assert [item.key for item in page] == [f"k{n:03d}" for n in range(59, 49, -1)]
    # one listing of ten copies: the namespace has nothing below it (object
    # storage also reads each item, to check its copy)
    assert listings(counter) == [("Scan", 10)]

    found = await lg.alist_namespaces(prefix=("u",))
    assert found == sorted(spread)
    assert listings(counter)[0] == ("ListKeys", len(spread))
    if store.blobs.capabilities.atomic:  # object storage also checks each namespace's items
        assert listings(counter) == []

    # a prefix with namespaces below it: the directory, then a page from each
    page = await lg.asearch(("u",), limit=7, offset=2)
    seen = listings(counter)
    assert [op for op, _ in seen] == ["Scan", "ListKeys"] + ["Scan"] * len(spread)
    assert sum(listed for _, listed in seen) <= 9 + len(spread) + 9 * len(spread)
    everything = await lg.asearch(("u",), limit=1000)
    assert len(everything) == 245
    assert [item.key for item in page] == [item.key for item in everything[2:9]]


def listings(counter: OpCounter) -> list[tuple[str, int]]:
    return [
        (type(op).__name__, listed)
        for op, listed in counter.take()
        if isinstance(op, ListKeys | Scan)
    ]


# --- the index follows writes, deletes, TTL -------------------------------------


async def test_directory_follows_the_last_item(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("a", "b"), "k1", {"v": 1})
    await lg.aput(("a", "b"), "k2", {"v": 2}, ttl=5)
    assert await lg.alist_namespaces() == [("a", "b")]
    assert [info.key for info in await store.blobs.list("ln/a/")] == ["ln/a/b/.", "ln/a/b/.t"]
    await lg.adelete(("a", "b"), "k1")
    assert await lg.alist_namespaces() == [("a", "b")]
    await lg.adelete(("a", "b"), "k2")
    assert await lg.alist_namespaces() == []
    assert await lg.asearch(("a",)) == []
    assert await store.blobs.list("lr/") == []
    # object storage keeps the entry (a superset, checked on read)
    if store.blobs.capabilities.atomic:
        assert await store.blobs.list("ln/a/") == []


async def test_expired_namespaces_are_not_listed_and_copies_follow_updates(
    store: ContextStore,
) -> None:
    clock = clock_of(store)
    lg = store.langgraph_store
    await lg.aput(("t", "short"), "k", {"v": 1}, ttl=1)
    await lg.aput(("t", "mixed"), "k", {"v": 1}, ttl=1)
    await lg.aput(("t", "mixed"), "keep", {"v": 2})
    clock.now += 1000
    await lg.aput(("t", "mixed"), "keep", {"v": 3})  # moves to the front
    assert [i.key for i in await lg.asearch(("t", "mixed"))] == ["keep", "k"]
    clock.now += 2 * MINUTE
    assert await lg.alist_namespaces(prefix=("t",)) == [("t", "mixed")]
    assert await lg.alist_namespaces(prefix=("t",), max_depth=1) == [("t",)]
    assert [(i.key, i.value) for i in await lg.asearch(("t",))] == [("keep", {"v": 3})]
    assert await lg.asweep_ttl() == 2
    assert len(await store.blobs.list("lr/")) == 1
    assert await lg.alist_namespaces() == [("t", "mixed")]


async def test_refresh_on_read_extends_the_copy_too(store: ContextStore) -> None:
    clock = clock_of(store)
    lg = MakersLangGraphStore(store, ttl={"default_ttl": 1, "refresh_on_read": True})
    await lg.aput(("r",), "k", {"v": 1})
    clock.now += 40_000
    assert [i.key for i in await lg.asearch(("r",))] == ["k"]  # refreshes: now + 1 min
    clock.now += 40_000
    assert [i.key for i in await lg.asearch(("r",), refresh_ttl=False)] == ["k"]
    assert await lg.alist_namespaces() == [("r",)]


# --- building and mending -------------------------------------------------------


async def legacy_item(store: ContextStore, namespace: tuple[str, ...], key: str, at: int) -> None:
    """An item as a store without the index wrote it: the record alone."""
    record = encode_record(at, at, None, None, f'{{"at":{at}}}', "{}")
    await store.blobs.put(adapter_keys.langgraph_item_key(namespace, key), record)


async def test_a_store_written_before_the_index_is_indexed_on_first_use(
    store: ContextStore,
) -> None:
    for n in range(30):
        await legacy_item(store, ("old", f"ns{n % 3}"), f"k{n}", 1000 + n)
    lg = store.langgraph_store
    assert await lg.alist_namespaces() == [("old", "ns0"), ("old", "ns1"), ("old", "ns2")]
    assert [i.key for i in await lg.asearch(("old", "ns1"), limit=3)] == ["k28", "k25", "k22"]
    assert await store.blobs.get(index.VERSION_KEY) is not None
    # a new instance finds the index complete and reads it as it is
    await legacy_item(store, ("old", "ns9"), "unindexed", 5000)
    assert ("old", "ns9") not in await MakersLangGraphStore(store).alist_namespaces()


async def test_rebuild_mends_what_blob_level_copies_leave(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("m",), "a", {"v": 1})
    await lg.aput(("m",), "b", {"v": 2})
    # a blob-level copy brings an item without its index entries, a copy of
    # an item that is gone, and an older copy of one that is still there
    await legacy_item(store, ("m", "copied"), "c", 7)
    gone = index.recency_key(adapter_keys.langgraph_item_key(("m",), "gone"), 5)
    await store.blobs.put(gone, encode_record(5, 5, None, None, '{"v":0}', "{}"))
    stale = index.recency_key(adapter_keys.langgraph_item_key(("m",), "a"), 3)
    await store.blobs.put(stale, encode_record(3, 3, None, None, '{"v":-1}', "{}"))
    await store.blobs.put(index.directory_key(("empty",)), b"")
    await lg.arebuild_index()
    assert await lg.alist_namespaces() == [("m",), ("m", "copied")]
    found = [(i.namespace, i.key, i.value) for i in await lg.asearch(("m",), limit=10)]
    assert sorted(found) == [
        (("m",), "a", {"v": 1}),
        (("m",), "b", {"v": 2}),
        (("m", "copied"), "c", {"at": 7}),
    ]
    assert await store.blobs.get(gone) is None and await store.blobs.get(stale) is None
    if store.blobs.capabilities.atomic:
        assert await store.blobs.get(index.directory_key(("empty",))) is None


async def test_object_storage_reads_check_copies_against_items(store: ContextStore) -> None:
    """A stepwise unit that stopped after writing a copy (or before removing
    the old one) leaves copies the item does not back: readers there check."""
    if store.blobs.capabilities.atomic:
        pytest.skip("an atomic backend changes an item and its copy together")
    lg = store.langgraph_store
    await lg.aput(("s",), "k", {"v": 1})
    item_key = adapter_keys.langgraph_item_key(("s",), "k")
    newer = index.recency_key(item_key, clock_of(store).now + 10)
    await store.blobs.put(newer, encode_record(1, 1, None, None, '{"v":"never stored"}', "{}"))
    await store.blobs.put(index.directory_key(("s", "ghost")), b"")
    assert [(i.key, i.value) for i in await lg.asearch(("s",))] == [("k", {"v": 1})]
    assert await lg.alist_namespaces() == [("s",)]


# --- the layout -------------------------------------------------------------------

labels = st.text(min_size=1, max_size=12).filter(lambda t: "." not in t)


@given(st.lists(labels, min_size=1, max_size=4), st.text(max_size=12), st.integers(0, 10**13))
def test_index_keys_name_their_namespace_and_item(
    namespace: list[str], key: str, updated: int
) -> None:
    ns = tuple(namespace)
    item_key = adapter_keys.langgraph_item_key(ns, key)
    for marker in ("~", "."):  # what the index keys rely on
        assert marker not in keys.escape(key) and all(marker not in keys.escape(x) for x in ns)
    copy = index.recency_key(item_key, updated)
    assert index.parse_recency_key(copy) == (item_key, updated)
    assert copy.startswith(index.recency_prefix(ns))
    assert copy.startswith(index.recency_subtree(ns[:1]))
    assert index.parse_directory_key(index.directory_key(ns)) == (ns, False)
    assert index.parse_directory_key(index.ttl_flag_key(ns)) == (ns, True)
    assert item_key.startswith(index.items_prefix(ns))
    if len(ns) > 1:  # a namespace's own copies sort after every copy below it
        parent_own = index.recency_key(adapter_keys.langgraph_item_key(ns[:-1], key), updated)
        assert parent_own > copy
