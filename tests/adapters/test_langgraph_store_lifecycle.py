"""``store.langgraph_store`` on every backend: TTL (expiry, refresh on read,
sweeping) on the store's injected clock, and the synchronous methods (home
loop, private portal thread, the error on the home loop itself)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable

import pytest
from langgraph.store.base import Item, ListNamespacesOp, MatchCondition

import makers_store
from makers_store import ContextStore, MemoryValidationError
from makers_store.adapters.langgraph.store import MakersLangGraphStore
from makers_store.clock import FixedClock
from makers_store.errors import SyncCallInEventLoopError
from tests.adapters.test_langgraph_store import view

MINUTE = 60_000


def portal_running(lg: MakersLangGraphStore) -> bool:
    return lg._bridge.portal_running


def clock_of(store: ContextStore) -> FixedClock:
    clock = store.runner.clock
    assert isinstance(clock, FixedClock)
    return clock


# --- TTL -----------------------------------------------------------------------


async def test_ttl_expiry_refresh_and_sweep(store: ContextStore) -> None:
    clock = clock_of(store)
    lg = MakersLangGraphStore(store, ttl={"default_ttl": 1, "refresh_on_read": True})
    assert lg.supports_ttl
    await lg.aput(("t",), "kept", {"v": 1})  # default_ttl: 1 minute
    await lg.aput(("t",), "forever", {"v": 2}, ttl=None)
    await lg.aput(("t", "sub"), "short", {"v": 3}, ttl=0.5)

    clock.now += 40_000
    assert await lg.aget(("t",), "kept") is not None  # refreshed: now +1 min
    clock.now += 40_000  # 80 s after the put, 40 s after the refresh
    assert await lg.aget(("t",), "kept", refresh_ttl=False) is not None
    assert await lg.aget(("t", "sub"), "short") is None  # 30 s TTL: gone at once
    assert [r.key for r in await lg.asearch(("t",))] == ["forever", "kept"]  # refreshes kept
    assert await lg.alist_namespaces() == [("t",)]

    clock.now += 59_000
    assert await lg.aget(("t",), "kept", refresh_ttl=False) is not None
    clock.now += 2_000
    assert await lg.aget(("t",), "kept") is None
    assert view(await lg.asearch(("t",))) == [(("t",), "forever", {"v": 2})]

    assert len(await store.blobs.list("l/")) == 3  # expired, invisible, not yet swept
    assert await lg.asweep_ttl() == 2
    assert [info.key for info in await store.blobs.list("l/")] == ["l/t/.forever"]
    assert await lg.asweep_ttl() == 0


async def test_expired_item_is_replaced_as_new(store: ContextStore) -> None:
    clock = clock_of(store)
    lg = store.langgraph_store
    await lg.aput(("t",), "k", {"v": 1}, ttl=1)
    clock.now += 2 * MINUTE
    await lg.aput(("t",), "k", {"v": 2})
    item = await lg.aget(("t",), "k")
    assert item is not None and item.created_at == item.updated_at
    assert await lg.asweep_ttl() == 0  # the new item has no TTL


@pytest.mark.on_s3
async def test_ttl_sweeper_runs_until_stopped(store: ContextStore) -> None:
    clock = clock_of(store)
    lg = MakersLangGraphStore(store, ttl={"sweep_interval_minutes": 1})
    for key in ("a", "b"):
        await lg.aput(("t",), key, {}, ttl=1)
    clock.now += 2 * MINUTE
    task = await lg.start_ttl_sweeper(sweep_interval_minutes=0.0005)  # every 30 ms
    assert await lg.start_ttl_sweeper() is task
    for _ in range(200):
        if not await store.blobs.list("l/"):
            break
        await asyncio.sleep(0.01)
    assert await store.blobs.list("l/") == []
    assert await lg.stop_ttl_sweeper(timeout=1) is True
    assert task.done()
    assert await lg.stop_ttl_sweeper() is True


# --- the synchronous side -------------------------------------------------------


@pytest.mark.on_s3
async def test_sync_methods_from_other_threads_run_on_the_portal(store: ContextStore) -> None:
    lg = MakersLangGraphStore(store)  # built on this loop: its home loop
    try:

        def sync_work() -> tuple[Item | None, list[tuple[str, ...]], int]:
            lg.put(("s",), "k", {"v": 1})
            return lg.get(("s",), "k"), lg.list_namespaces(), lg.sweep_ttl()

        item, namespaces, swept = await asyncio.to_thread(sync_work)
        assert item is not None and item.value == {"v": 1}
        assert (namespaces, swept) == ([("s",)], 0)
        # the one sync bridge: the portal's loop, whatever loop the caller's thread has
        assert portal_running(lg)
        # on the home loop itself a blocking call is refused
        with pytest.raises(SyncCallInEventLoopError, match="aget, aput"):
            lg.get(("s",), "k")
        with pytest.raises(SyncCallInEventLoopError):
            lg.sweep_ttl()
    finally:
        await lg.aclose()


@pytest.mark.on_s3
def test_sync_store_without_a_loop(make_store: Callable[[], ContextStore]) -> None:
    store = make_store()  # every backend: its sync calls run on the adapter's portal loop
    lg = store.langgraph_store
    assert store.langgraph_store is lg  # built once per store
    lg.put(("x",), "k", {"v": [1, "two", None]})
    assert portal_running(lg)  # no home loop: the private portal thread
    assert view(lg.search(("x",), query="two")) == [(("x",), "k", {"v": [1, "two", None]})]
    lg.close()
    assert not portal_running(lg)
    lg.delete(("x",), "k")  # a later call starts the portal again
    assert lg.get(("x",), "k") is None
    lg.close()
    asyncio.run(store.close())


def test_match_condition_and_unknown_ops_are_checked(
    make_store: Callable[[], ContextStore],
) -> None:
    store = make_store()
    lg = store.langgraph_store
    try:
        bad = ListNamespacesOp(match_conditions=(MatchCondition("infix", ("a",)),))  # type: ignore[arg-type]
        with pytest.raises(MemoryValidationError, match="infix"):
            lg.batch([bad])
        with pytest.raises(MemoryValidationError, match="unknown"):
            lg.batch(["get"])  # type: ignore[list-item]
    finally:
        lg.close()
        asyncio.run(store.close())


@pytest.mark.on_s3
def test_sync_facade_langgraph_store(url: str) -> None:
    """Blocking code on any backend, through the sync facade."""
    with makers_store.open_sync_store(url) as store:
        lg = store.langgraph_store
        lg.put(("docs",), "a", {"text": "hello world"})
        assert lg.get(("docs",), "a").value == {"text": "hello world"}  # type: ignore[union-attr]
        assert [item.key for item in lg.search(("docs",), query="hello")] == ["a"]
        lg.delete(("docs",), "a")
        assert lg.get(("docs",), "a") is None


@pytest.mark.on_s3
def test_ttl_sweeper_from_sync_code(make_store: Callable[[], ContextStore]) -> None:
    """SqliteStore's style: no coroutine left un-awaited (warnings are errors
    here), a future that ends with the sweeper, stopped by cancel or stop."""
    store = make_store()
    clock = clock_of(store)
    lg = MakersLangGraphStore(store, ttl={"sweep_interval_minutes": 0.0005})  # every 30 ms
    lg.put(("t",), "a", {}, ttl=1)
    clock.now += 2 * MINUTE
    future = lg.start_ttl_sweeper()
    assert isinstance(future, concurrent.futures.Future)
    for _ in range(200):  # swept by the sweeper alone
        if not asyncio.run(store.blobs.list("l/")):
            break
        time.sleep(0.01)
    assert asyncio.run(store.blobs.list("l/")) == []
    assert not future.done()
    assert lg.stop_ttl_sweeper(timeout=1) is True
    assert future.result(timeout=1) is None
    assert lg.stop_ttl_sweeper() is True
    again = lg.start_ttl_sweeper()
    assert isinstance(again, concurrent.futures.Future)
    again.cancel()
    assert lg.stop_ttl_sweeper(timeout=1) is True
    lg.close()
    asyncio.run(store.close())


@pytest.mark.on_s3
async def test_ttl_sweeper_call_styles_on_a_loop(store: ContextStore) -> None:
    lg = MakersLangGraphStore(store)
    lg.start_ttl_sweeper()  # not awaited: started anyway, nothing left pending
    task = await lg.start_ttl_sweeper()
    assert isinstance(task, asyncio.Task) and not task.done()
    lg.stop_ttl_sweeper()  # not awaited: cancelled at once
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert task.done()
    assert await lg.stop_ttl_sweeper() is True
    await lg.aclose()
