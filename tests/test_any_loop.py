"""The contract every backend keeps: any event loop, any thread, clean cancellation.

A store object may be used from any event loop and any thread, one after
another or at once; ``close()`` from any of them releases everything; the
sync facade works in programs that run many short event loops; what a
backend keeps per loop (PostgreSQL connections, S3 clients) is released
when that loop shuts down or the store closes; and a call cancelled at any
await point leaves the store usable, with no connection left in an unknown
state and no hang when the program ends. :class:`TestAnyLoopContract` runs
on every backend (``tests.backends.BACKENDS``); the PostgreSQL and S3
specifics (server-side connections, prepared statements) follow it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store.errors import PreconditionFailedError
from makers_store.sync_api import SyncContextStore
from tests.backends import BACKENDS, backend_url

#: Threads, each with an event loop of its own, that use one store at once.
THREADS = 5
#: asyncio.run calls one after another on one store.
SHORT_LOOPS = 6


def held(store: makers_store.ContextStore) -> int:
    """Event loops for which the backend holds connections or a client now."""
    blobs: Any = store.blobs
    return int(getattr(blobs, "loops_with_connections", getattr(blobs, "loops_with_clients", 0)))


def in_thread(target: Callable[[], object], timeout: float = 120) -> None:
    """Run ``target`` in a thread of its own; fail if it raises or hangs."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"still running after {timeout} s: a hang"
    if failures:
        raise failures[0]


def bare_loop_run(coro: Awaitable[object]) -> None:
    """Run ``coro`` the way the OpenAI SDK's threaded session test does: a
    new loop, closed with a bare ``loop.close()`` (no shutdown of its async
    generators), so nothing tells the store that the loop went away."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(coro)
    finally:
        loop.close()


async def contents(store: makers_store.ContextStore, cid: str) -> list[Any]:
    return [m.content async for m in store.iter_messages(conversation_id=cid)]


class TestAnyLoopContract:
    """What every backend promises about event loops, threads and cancellation."""

    def test_many_short_event_loops_one_after_another(self, url: str) -> None:
        store = makers_store.open_store(url)
        for n in range(SHORT_LOOPS):
            asyncio.run(store.append_message(conversation_id="c", role="user", content=str(n)))
            assert held(store) == 0, "released when its loop shut down"
        assert asyncio.run(contents(store, "c")) == [str(n) for n in range(SHORT_LOOPS)]
        asyncio.run(store.close())
        assert held(store) == 0

    def test_threads_each_with_its_own_loop_at_once(self, url: str) -> None:
        store = makers_store.open_store(url)
        start = threading.Barrier(THREADS)

        def writer(n: int) -> None:
            async def write() -> None:
                start.wait()  # all at once (each blocks only its own loop)
                for i in range(3):
                    await store.append_message(
                        conversation_id="c", role="user", content=f"{n}-{i}"
                    )

            # half close their loop bare (as the SDK's test does), half with asyncio.run
            (bare_loop_run if n % 2 else asyncio.run)(write())

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a writer hung"

        async def check_and_close() -> None:
            found = await contents(store, "c")
            assert sorted(found) == sorted(f"{n}-{i}" for n in range(THREADS) for i in range(3))
            await store.close()

        asyncio.run(check_and_close())
        assert held(store) == 0
        gc.collect()  # a socket left to the collector would warn here, failing the test

    async def test_close_from_one_loop_releases_another_running_loop(self, url: str) -> None:
        store = makers_store.open_store(url)
        other = asyncio.new_event_loop()
        runner = threading.Thread(target=other.run_forever, daemon=True)
        runner.start()
        try:
            done = asyncio.run_coroutine_threadsafe(
                store.append_message(conversation_id="c", role="user", content="there"), other
            )
            await asyncio.wrap_future(done)
            await store.append_message(conversation_id="c", role="user", content="here")
            assert held(store) in (0, 2)  # 0: a backend with nothing per loop
            await store.close()
            assert held(store) == 0
        finally:
            other.call_soon_threadsafe(other.stop)
            runner.join(30)
            other.close()

    def test_sync_facade_between_short_event_loops(self, url: str) -> None:
        with SyncContextStore(makers_store.open_store(url)) as sync:
            for n in range(3):
                sync.append_message("c", "user", f"sync {n}")
                asyncio.run(
                    sync.async_store.append_message(
                        conversation_id="c", role="user", content=f"async {n}"
                    )
                )
            assert [m.content for m in sync.iter_messages("c")] == [
                text for n in range(3) for text in (f"sync {n}", f"async {n}")
            ]
        assert held(sync.async_store) == 0

    async def test_a_failed_condition_names_its_key(self, url: str) -> None:
        async with makers_store.open_store(url) as store:
            await store.blobs.put("k", b"v")
            with pytest.raises(PreconditionFailedError) as caught:
                await store.blobs.put("k", b"w", if_match="stale")
            assert caught.value.key == "k"  # what the retry policy names when it gives up

    async def test_an_append_cancelled_at_every_step_leaves_the_store_usable(
        self, url: str
    ) -> None:
        async with makers_store.open_store(url) as store:
            await store.append_message(conversation_id="c", role="user", content="first")
            await cancel_at_every_step(
                lambda: store.append_message(conversation_id="c", role="user", content="x"),
                lambda: usable(store),
            )

    async def test_a_listing_cancelled_at_every_step_leaves_the_store_usable(
        self, url: str
    ) -> None:
        async with makers_store.open_store(url) as store:
            for n in range(3):
                await store.append_message(conversation_id=f"c{n}", role="user", content=str(n))
            await cancel_at_every_step(
                lambda: store.list_conversations(limit=10), lambda: usable(store)
            )

    def test_a_forgotten_store_with_a_cancelled_call_does_not_hang_shutdown(
        self, url: str
    ) -> None:
        for steps in (0, 1, 2, 3, 5, 8, 13, 21, 34):

            async def program(steps: int = steps) -> None:
                store = makers_store.open_store(url)
                await store.append_message(conversation_id="c", role="user", content="warm")
                call = asyncio.ensure_future(
                    store.append_message(conversation_id="c", role="user", content="cut")
                )
                for _ in range(steps):
                    await asyncio.sleep(0)
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await call
                # ... and never closes the store

            in_thread(lambda: asyncio.run(program()), timeout=30)


async def usable(store: makers_store.ContextStore) -> None:
    """The store still reads and writes after a cancelled call."""
    cid = f"after-{uuid.uuid4().hex[:8]}"
    await store.append_message(conversation_id=cid, role="user", content="ok")
    assert await contents(store, cid) == ["ok"]


class CancelAt:
    """Awaits ``coro``, cancelling the awaiting task at its ``at``-th
    suspension (0: never), exactly as ``task.cancel()`` would at that await:
    the future it waits on is cancelled and CancelledError is thrown in.
    ``suspensions`` counts the suspensions it went through."""

    def __init__(self, coro: Coroutine[Any, Any, object], at: int) -> None:
        self.coro = coro
        self.at = at
        self.suspensions = 0

    def __await__(self) -> Generator[Any, Any, object]:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                waiting = self.coro.send(value) if error is None else self.coro.throw(error)
            except StopIteration as stop:
                return stop.value
            self.suspensions += 1
            if self.suspensions == self.at:
                task = asyncio.current_task()
                assert task is not None
                task.cancel()  # taken when the task yields ``waiting`` just below
            try:
                value, error = (yield waiting), None
            except BaseException as exc:
                value, error = None, exc


async def cancel_at_every_step(
    call: Callable[[], Coroutine[Any, Any, object]], check: Callable[[], Awaitable[None]]
) -> int:
    """Cancel ``call()`` at each of its await points in turn (a fresh call
    each time), checking the store after each; returns how many there were."""
    whole = CancelAt(call(), 0)
    await whole  # the count of await points of an uncancelled call
    await check()
    for at in range(1, whole.suspensions + 1):
        cut = CancelAt(call(), at)
        task = asyncio.ensure_future(cut)  # type: ignore[arg-type]
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await check()
        if cut.suspensions < at:  # this run needed fewer: every point was reached
            break
    return whole.suspensions


# --- PostgreSQL: what the server sees ------------------------------------------


def postgres_only() -> Any:
    return pytest.mark.skipif("postgres" not in BACKENDS, reason="postgres not in the backends")


def _app(tmp_path: Path) -> tuple[str, str]:
    name = f"anyloop{uuid.uuid4().hex[:10]}"
    return backend_url("postgres", tmp_path) + f"&application_name={name}", name


def _server_connections(name: str, expected: int = 0) -> int:
    """Connections the server has for application ``name``, once it is
    ``expected`` (a backend process ends a moment after its client closed)
    or after 5 s."""
    import psycopg

    from tests.servers.postgres import server

    with psycopg.connect(server().base_url, autocommit=True) as admin:
        for _ in range(100):
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]
            ).fetchone()
            assert row is not None
            if int(row[0]) == expected:
                break
            time.sleep(0.05)
    return int(row[0])


@postgres_only()
def test_postgres_connections_close_with_their_loops_and_the_store(tmp_path: Path) -> None:
    url, name = _app(tmp_path)
    store = makers_store.open_store(url)
    for n in range(3):
        asyncio.run(store.append_message(conversation_id="c", role="user", content=str(n)))
        assert _server_connections(name) == 0, "closed when asyncio.run shut its loop down"
    bare_loop_run(store.append_message(conversation_id="c", role="user", content="bare"))
    assert _server_connections(name, 1) == 1  # nothing told the store: kept until ...
    asyncio.run(store.close())  # ... the store closes, from any loop
    assert _server_connections(name) == 0


@postgres_only()
async def test_postgres_cancelled_units_leave_no_connection_in_an_unknown_state(
    tmp_path: Path,
) -> None:
    url, name = _app(tmp_path)
    async with makers_store.open_store(url) as store:
        for n in range(8):  # psycopg prepares a statement on its fifth run
            await store.append_message(conversation_id="c", role="user", content=str(n))
        await cancel_at_every_step(
            lambda: store.append_message(conversation_id="c", role="user", content="x"),
            lambda: prepared_statements_agree(store),
        )
        await cancel_at_every_step(
            lambda: store.get_messages(conversation_id="c", limit=5),
            lambda: prepared_statements_agree(store),
        )
    assert _server_connections(name) == 0


async def prepared_statements_agree(store: makers_store.ContextStore) -> None:
    """Every idle connection is outside a transaction, and the statements
    psycopg believes prepared on it exist on the server."""
    from psycopg.pq import TransactionStatus

    blobs: Any = store.blobs
    pool = blobs._pools.current()
    for conn in list(pool.idle if pool is not None else ()):
        assert conn.info.transaction_status == TransactionStatus.IDLE
        cursor = await conn.execute("SELECT name FROM pg_prepared_statements", prepare=False)
        on_server = {row[0] for row in await cursor.fetchall()}
        believed = {name.decode() for name in conn._prepared._names.values()}
        assert believed <= on_server, f"psycopg believes {believed - on_server} prepared"


@postgres_only()
async def test_postgres_a_connection_that_lost_its_prepared_statements_is_replaced(
    tmp_path: Path,
) -> None:
    """The server forgets a connection's prepared statements behind psycopg's
    back (as a pooler or a failed cleanup would): the unit that meets the
    ``InvalidSqlStatementName`` runs again on a fresh connection, and the
    stale connection is never used again."""
    url, _ = _app(tmp_path)
    async with makers_store.open_store(url) as store:
        for n in range(8):  # statements prepared by now
            await store.append_message(conversation_id="c", role="user", content=str(n))
        blobs: Any = store.blobs
        stale = list(blobs._pools.current().idle)
        assert stale
        for conn in stale:  # a DO block: psycopg does not see the DEALLOCATE
            await conn.execute("DO $$ BEGIN EXECUTE 'DEALLOCATE ALL'; END $$", prepare=False)
        await store.append_message(conversation_id="c", role="user", content="after")
        assert (await contents(store, "c"))[-1] == "after"
        assert not set(map(id, blobs._pools.current().idle)) & set(map(id, stale))


# --- queue time: what retry budgets leave out -----------------------------------


@pytest.mark.parametrize("kind", [kind for kind in ("postgres", "s3") if kind in BACKENDS])
async def test_waiting_behind_other_units_is_reported_as_queue_time(
    kind: str, tmp_path: Path
) -> None:
    """A unit that waits for its loop's only connection (PostgreSQL) or
    request slot (S3) reports the wait, which retry budgets do not count."""
    from makers_store import retry

    one = "&pool_max=1" if kind == "postgres" else "&max_connections=1"
    async with makers_store.open_store(backend_url(kind, tmp_path) + one) as store:
        blobs: Any = store.blobs
        await blobs.put("k", b"v")  # opens this loop's connection or client
        cell = [0.0, retry.DEFAULT_RETRY.budget]  # seconds queued, the unit's budget
        token = retry._queued.set(cell)  # as RetryPolicy.run does around a unit
        try:
            if kind == "postgres":
                pool = blobs._pools.current()
                conn = await blobs._take(pool)  # hold the only connection ...
                reader = asyncio.ensure_future(blobs.get("k"))
                await asyncio.sleep(0.3)
                blobs._give(pool, conn, True)  # ... for 0.3 s
            else:
                slots = blobs._clients.current().bucket.slots
                async with slots:  # hold the only request slot for 0.3 s
                    reader = asyncio.ensure_future(blobs.get("k"))
                    await asyncio.sleep(0.3)
            assert (await reader) is not None
        finally:
            retry._queued.reset(token)
        assert cell[0] >= 0.25
