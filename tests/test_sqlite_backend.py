"""The SQLite emulator: migrations in place, locks, corrupt files, rollbacks."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

import makers_store
from makers_store import BackendError, keys
from makers_store.blob import Program, put
from makers_store.clock import FixedClock
from makers_store.emulator import migrations
from makers_store.emulator.sqlite import SqliteBlobStore


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


async def test_a_held_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with makers_store.open_store(f"sqlite:///{path}") as store:
        await store.append_message(conversation_id="c", role="user", content="x")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        async with makers_store.open_store(f"sqlite:///{path}?busy_timeout_ms=100") as store:
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
