"""The SQLite emulator: migrations in place, locks, corrupt files, rollbacks,
and where units run (inline, or moved off the event loop part-way)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import makers_store
from makers_store import BackendError
from makers_store._core import keys
from makers_store.blob_ops import Program, delete_many, put, scan
from makers_store.clock import FixedClock
from makers_store.emulator.sqlite import inline as sqlite_inline
from makers_store.emulator.sqlite import migrations
from makers_store.emulator.sqlite import ops as sqlite_ops
from makers_store.emulator.sqlite import units as sqlite_units
from makers_store.emulator.sqlite.backend import SqliteBlobStore


async def test_schema_is_recorded(tmp_path: Path) -> None:
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await blobs.put("k", b"v")
    await blobs.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    assert conn.execute("PRAGMA user_version").fetchone() == (migrations.SCHEMA_VERSION,)
    names = [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name")]
    assert names == [name for name, _ in migrations.MIGRATIONS]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


async def test_new_migrations_apply_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        mid = await store.append_message(conversation_id="c", role="user", content="kept")

    def add_column(db: migrations.Database) -> None:
        db.execute("ALTER TABLE blobs ADD COLUMN note TEXT")

    upgraded = [*migrations.MIGRATIONS, ("9999_add_note", add_column)]
    monkeypatch.setattr(migrations, "MIGRATIONS", upgraded)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(upgraded))
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        [message] = await store.get_messages(conversation_id="c")
        assert message.message_id == mid and message.content == "kept"
        assert store.blobs.describe()["schema_version"] == len(upgraded)
    conn = sqlite3.connect(path)
    assert "note" in [row[1] for row in conn.execute("PRAGMA table_info(blobs)")]
    conn.close()

    older = upgraded[:-1]  # the release before
    monkeypatch.setattr(migrations, "MIGRATIONS", older)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(older))
    with pytest.raises(BackendError, match="newer makers-store"):
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.get_messages(conversation_id="c")


async def test_index_entries_of_the_first_layout_are_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0002 turns ranks from last_message_at into RANK_MAX - last_message_at."""
    path = tmp_path / "s.db"
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
        patch.setattr(migrations, "SCHEMA_VERSION", 1)
        async with makers_store.open_store(f"sqlite:///{path}", clock=FixedClock()) as store:
            store.blobs.index_messages = False  # type: ignore[attr-defined]  # no index at 1
            for cid in ("old", "mid", "new"):
                await store.append_message(
                    conversation_id=cid, role="user", content=cid, user_id="u"
                )
    # Write the first layout's entries over what this release wrote (it had
    # no ties within a millisecond: neither in the entries nor in meta).
    conn = sqlite3.connect(path)
    with conn:
        for (key,) in conn.execute("SELECT key FROM blobs WHERE key LIKE 'i/%'").fetchall():
            head, rank, cid = key.rsplit("/", 2)
            at = keys.RANK_MAX - int(rank.split("~")[0])
            conn.execute("UPDATE blobs SET key = ? WHERE key = ?", [f"{head}/{at:015d}/{cid}", key])
        for key, data in conn.execute("SELECT key, data FROM blobs WHERE key LIKE '%/meta'"):
            meta = json.loads(data)
            meta.pop("last_tie", None)
            conn.execute(
                "UPDATE blobs SET data = ? WHERE key = ?", [json.dumps(meta).encode(), key]
            )
    conn.close()
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        for user in (None, "u"):
            page = await store.list_conversations(user_id=user)
            assert [c.conversation_id for c in page.items] == ["new", "mid", "old"]


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_a_held_lock_times_out_with_a_clear_error(tmp_path: Path, synchronous: str) -> None:
    """At ``normal`` the write waits on the worker thread, at ``full`` on the
    inline thread, where every write runs."""
    path = tmp_path / "s.db"
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        await store.append_message(conversation_id="c", role="user", content="x")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    url = f"sqlite:///{path}?busy_timeout_ms=100&synchronous={synchronous}"
    try:
        async with makers_store.open_store(url) as store:
            with pytest.raises(BackendError, match="locked"):
                await store.append_message(conversation_id="c", role="user", content="y")
            # readers are not blocked by a writer (WAL)
            assert len(await store.get_messages(conversation_id="c")) == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        meta = await store.get_conversation(conversation_id="c")
        assert meta is not None and meta.message_count == 1


def test_instances_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Switching a new file to WAL fails at once, bypassing busy_timeout, while
    another connection holds a lock: the first open of each instance waits
    instead (this once made two instances starting together fail)."""
    from concurrent.futures import ThreadPoolExecutor

    for attempt in range(20):
        path = tmp_path / f"new-{attempt}.db"
        stores = [SqliteBlobStore(path) for _ in range(4)]
        with ThreadPoolExecutor(len(stores)) as pool:
            versions = list(pool.map(lambda store: store.describe()["schema_version"], stores))
        assert versions == [migrations.SCHEMA_VERSION] * len(stores)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for store in stores:
            asyncio.run(store.close())


async def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BackendError, match=r"junk\.db"):
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.get_conversation(conversation_id="c")


async def test_failed_unit_rolls_back_and_connection_stays_usable(tmp_path: Path) -> None:
    blobs = SqliteBlobStore(tmp_path / "s.db")

    def half() -> Program[None]:
        yield from put("a", b"1")
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await blobs.run(half(), write=True)
    assert await blobs.get("a") is None
    await blobs.put("b", b"2")
    assert (await blobs.get("b")) is not None
    await blobs.close()
    with pytest.raises(BackendError, match="closed"):
        await blobs.get("b")


# --- where units run -------------------------------------------------------

LOOP_THREAD = threading.main_thread().name


def past_the_budget() -> None:
    """Stand-in for work that takes longer than a unit may hold the loop."""
    time.sleep(sqlite_units.INLINE_BUDGET * 1.5)


_WRITES = ("INSERT", "UPDATE", "DELETE")


@contextmanager
def statements(blobs: SqliteBlobStore) -> Iterator[list[tuple[str, str]]]:
    """(thread name, SQL) of each statement the inline connection runs. SQLite
    traces a statement again when it starts a trigger (the search index's, on
    ``blobs``): such a repeat is left out."""
    seen: list[tuple[str, str]] = []
    conn = blobs._inline.conn
    assert conn is not None

    def trace(sql: str) -> None:
        entry = (threading.current_thread().name, sql)
        if not (seen and seen[-1] == entry and sql.lstrip().upper().startswith(_WRITES)):
            seen.append(entry)

    conn.set_trace_callback(trace)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


async def warm(blobs: SqliteBlobStore) -> None:
    """The first units open the file (on the worker thread), then the inline connection."""
    await blobs.put("warm", b"")
    await blobs.put("warm", b"")


async def test_a_long_unit_goes_on_off_the_loop_in_its_transaction(tmp_path: Path) -> None:
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await warm(blobs)
    threads: list[str] = []

    def long(fail: bool) -> Program[None]:
        for n in range(3):
            threads.append(threading.current_thread().name)
            yield from put(f"k{n}", b"v")
            past_the_budget()
        if fail:
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await blobs.run(long(fail=True), write=True)
    assert threads[0] == LOOP_THREAD and threads[-1].startswith("makers-sqlite-inline")
    assert [await blobs.get(f"k{n}") for n in range(3)] == [None] * 3  # all rolled back
    threads.clear()
    await blobs.run(long(fail=False), write=True)
    assert threads[0] == LOOP_THREAD and threads[-1].startswith("makers-sqlite-inline")
    assert [info.key for info in await blobs.list("k")] == ["k0", "k1", "k2"]
    await blobs.close()


async def test_long_listings_deletes_and_puts_finish_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the deadline, a listing, a batch delete or a large Put answers a
    Partial that the inline thread completes: results are whole and in order."""
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await warm(blobs)
    keys_ = [f"x/{n:03d}" for n in range(50)]
    for key in keys_:
        await blobs.put(key, key.encode())
    monkeypatch.setattr(sqlite_ops, "CHUNK", 4)
    monkeypatch.setattr(sqlite_ops, "LARGE_PUT", 10)
    monkeypatch.setattr(sqlite_units, "INLINE_BUDGET", 0.0)  # every unit is past it at once

    def work() -> Program[tuple[list[str], list[str], str]]:
        ahead = [entry.key for entry in (yield from scan("x/"))]
        back = [entry.key for entry in (yield from scan("x/", reverse=True, limit=30))]
        yield from delete_many(keys_[:45])
        info = yield from put("big", b"more than ten bytes")
        return ahead, back, info.key

    ahead, back, big = await blobs.run(work(), write=True)
    assert ahead == keys_ and back == keys_[::-1][:30] and big == "big"
    assert [info.key for info in await blobs.list("x/")] == keys_[45:]
    assert (await blobs.get("big")) is not None
    await blobs.close()


async def test_writes_waiting_for_the_inline_connection_commit_together(tmp_path: Path) -> None:
    """While a unit has the inline connection off the loop, writes queue
    behind it and join its transaction, each in a savepoint: one COMMIT; a
    write that fails undoes only its own work."""
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await warm(blobs)
    away, go = threading.Event(), threading.Event()

    def first() -> Program[str]:
        yield from put("first", b"1")
        past_the_budget()
        yield from put("first-2", b"2")  # it stops before this one, and goes on off the loop
        away.set()
        go.wait(10)
        return "first done"

    def one(n: int) -> Program[int]:
        yield from put(f"joined-{n}", b"v")
        if n == 3:
            raise ValueError("this one fails")
        return n

    with statements(blobs) as seen:
        leader = asyncio.create_task(blobs.run(first(), write=True))
        await asyncio.to_thread(away.wait, 10)
        followers = [asyncio.create_task(blobs.run(one(n), write=True)) for n in range(6)]
        for _ in range(3):
            await asyncio.sleep(0)  # each has queued
        go.set()
        assert await leader == "first done"
        results = await asyncio.gather(*followers, return_exceptions=True)
    assert results[:3] == [0, 1, 2] and results[4:] == [4, 5]
    assert isinstance(results[3], ValueError)
    stored = [info.key for info in await blobs.list("")]
    assert stored == ["first", "first-2", *(f"joined-{n}" for n in (0, 1, 2, 4, 5)), "warm"]
    commits = [thread for thread, sql in seen if sql == "COMMIT"]
    assert commits and all(t.startswith("makers-sqlite-inline") for t in commits)
    assert len(commits) == 1
    assert sum(sql == "ROLLBACK TO joined" for _, sql in seen) == 1
    await blobs.close()


async def test_at_synchronous_full_writes_at_once_share_commits(tmp_path: Path) -> None:
    """Writes at once queue for the inline thread and share transactions; the
    first of a transaction runs bare (no savepoint): when it fails, it alone
    is undone and the others go on in the next one."""
    blobs = SqliteBlobStore(tmp_path / "s.db", synchronous="full")
    await warm(blobs)

    def one(n: int) -> Program[int]:
        yield from put(f"k{n}", b"v")
        if n == 0:
            raise ValueError("the first fails")
        return n

    with statements(blobs) as seen:
        results = await asyncio.gather(
            *(blobs.run(one(n), write=True) for n in range(8)), return_exceptions=True
        )
    assert isinstance(results[0], ValueError) and results[1:] == list(range(1, 8))
    assert [info.key for info in await blobs.list("k")] == [f"k{n}" for n in range(1, 8)]
    assert 1 <= sum(sql == "COMMIT" for _, sql in seen) < 7
    await blobs.close()


async def test_at_synchronous_full_writes_wait_for_the_disk_off_the_loop(
    tmp_path: Path,
) -> None:
    """A write's commit waits for an fsync: the whole write runs on the inline
    thread (SQLite's write lock is not held across the hop); reads stay inline."""
    blobs = SqliteBlobStore(tmp_path / "s.db", synchronous="full")
    await warm(blobs)
    with statements(blobs) as seen:
        await blobs.put("k", b"v")
        assert (await blobs.get("k")) is not None
    read = next(n for n, (_, sql) in enumerate(seen) if sql == "BEGIN")
    write = [(t, sql.split()[0]) for t, sql in seen[:read]]
    assert [sql for _, sql in write] == ["BEGIN", "INSERT", "COMMIT"]
    assert all(t.startswith("makers-sqlite-inline") for t, _ in write)
    assert {t for t, _ in seen[read:]} == {LOOP_THREAD}
    await blobs.close()


async def test_the_wal_is_checkpointed_off_the_loop_and_starts_over(tmp_path: Path) -> None:
    """Without checkpoints off the loop, 6,000 writes of 4 KB would leave a
    WAL of 40 MB (the inline connection's own automatic checkpoint waits for
    10x SQLite's threshold); with them it stays near SQLite's threshold of
    1,000 pages. Writes without a pause: the checkpoints beside the writers
    never catch up, so some run on the inline thread, holding the writers."""
    path = tmp_path / "s.db"
    blobs = SqliteBlobStore(path)
    await warm(blobs)
    value = os.urandom(4000)
    with statements(blobs) as seen:
        for n in range(6_000):
            await blobs.put(f"k/{n % 500}", value)
    checkpoints = [t for t, sql in seen if sql.startswith("PRAGMA wal_checkpoint")]
    assert len(checkpoints) >= 2
    assert all(t.startswith("makers-sqlite-inline") for t in checkpoints)
    limit = 3 * sqlite_inline.CHECKPOINT_PAGES * 4096
    assert await asyncio.to_thread(os.path.getsize, f"{path}-wal") < limit
    await blobs.close()


async def test_writes_with_pauses_never_wait_for_a_checkpoint(tmp_path: Path) -> None:
    """Writes in bursts (as an agent's are): the WAL is copied beside the
    writers and starts over in the pauses, so no writer waits for a
    checkpoint (issue 36: their syncs made our speed the disk's)."""
    path = tmp_path / "s.db"
    blobs = SqliteBlobStore(path)
    await warm(blobs)
    value = os.urandom(4000)
    with statements(blobs) as seen:
        for n in range(4_000):
            await blobs.put(f"k/{n % 500}", value)
            if n % 200 == 199:
                await asyncio.sleep(0.05)
    assert not [t for t, sql in seen if sql.startswith("PRAGMA wal_checkpoint")]
    # Inline, but for a begin that met the checkpointer's brief lock as the WAL
    # started over (SQLITE_BUSY at busy_timeout 0): that write joins on the inline thread.
    assert sum(t == LOOP_THREAD for t, _ in seen) >= 0.99 * len(seen)
    limit = 3 * sqlite_inline.CHECKPOINT_PAGES * 4096
    assert await asyncio.to_thread(os.path.getsize, f"{path}-wal") < limit
    await blobs.close()


async def test_a_caller_that_stops_waiting_leaves_the_connection_usable(tmp_path: Path) -> None:
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await warm(blobs)
    away, go = threading.Event(), threading.Event()

    def slow() -> Program[None]:
        yield from put("a", b"1")
        past_the_budget()
        yield from put("b", b"2")
        away.set()
        go.wait(10)

    task = asyncio.create_task(blobs.run(slow(), write=True))
    await asyncio.to_thread(away.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    go.set()
    await blobs.put("c", b"3")  # waits for the inline thread to finish "slow" first
    # The unit ran to its end on the inline thread, as a unit whose caller went away does.
    assert [info.key for info in await blobs.list("")] == ["a", "b", "c", "warm"]
    await blobs.close()


async def test_a_caller_running_many_units_in_a_row_lets_the_loop_run(tmp_path: Path) -> None:
    """An inline unit completes without suspending its caller; after
    INLINE_BUDGET of them in a row the next one yields to the loop once."""
    blobs = SqliteBlobStore(tmp_path / "s.db")
    await warm(blobs)
    ran = 0

    async def other() -> None:
        nonlocal ran
        while True:
            ran += 1
            await asyncio.sleep(0)

    beside = asyncio.create_task(other())
    await asyncio.sleep(0)
    before = ran
    for n in range(300):
        await blobs.put(f"k{n}", b"v")
        if ran > before:
            break
    beside.cancel()
    assert ran > before
    await blobs.close()
