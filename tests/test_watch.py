"""ContextStore.watch: changes by any writer reach the watcher, on every backend."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore, StoreChange, StoreWatch
from makers_store.api.watch import part_of_key
from tests.backends import SHARED_BACKENDS, backend_url

#: every backend's first signal comes well within this (S3 is polled at 0.2 s here)
WAIT = 10.0


async def next_change(changes: StoreWatch) -> StoreChange:
    return await asyncio.wait_for(anext(changes), WAIT)


async def changes_until(changes: StoreWatch, wanted: str) -> set[str]:
    """Parts seen until one names ``wanted`` (writes may come as several events)."""
    seen: set[str] = set()
    while wanted not in seen:
        seen |= (await next_change(changes)).parts
    return seen


async def test_a_conversation_watch_sees_messages_state_and_meta(store: ContextStore) -> None:
    await store.append_message("c1", "user", "first")
    async with store.watch("c1", poll_interval=0.2) as changes:
        await store.append_message("c1", "assistant", "second")
        change = await next_change(changes)
        assert change.conversation_id == "c1"
        assert "messages" in change.parts
        await store.bind("c1").state.set("step", {"n": 2})
        assert "state" in await changes_until(changes, "state")
        await store.update_conversation("c1", {"title": "Trip"})
        assert "conversation" in await changes_until(changes, "conversation")


async def test_writes_to_other_conversations_are_not_reported(store: ContextStore) -> None:
    await store.append_message("c1", "user", "first")
    async with store.watch("c1", poll_interval=0.2) as changes:
        await store.append_message("c2", "user", "elsewhere")
        await store.bind("c2").state.set("k", 1)
        await store.append_message("c1", "user", "here")
        change = await next_change(changes)
        assert change.conversation_id == "c1"
        assert "messages" in change.parts


async def test_the_store_watch_sees_new_conversations(store: ContextStore) -> None:
    async with store.watch(poll_interval=0.2) as changes:
        await store.append_message("new", "user", "hello")
        seen = await changes_until(changes, "conversations")
        assert "conversations" in seen


async def test_a_bound_store_watches_its_conversation(store: ContextStore) -> None:
    bound = store.bind("c9")
    watch = bound.watch(poll_interval=0.2)
    assert watch.conversation_id == "c9"
    async with watch as changes:
        await bound.append_message(role="user", content="hi")
        assert (await next_change(changes)).conversation_id == "c9"


@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_another_store_object_writing_is_seen(kind: str, tmp_path: Path) -> None:
    """Another process's store is another store object on the same data: on
    SQLite it commits on its own connection, on PostgreSQL its own pool."""
    url = backend_url(kind, tmp_path)
    async with makers_store.open_store(url) as watcher, makers_store.open_store(url) as writer:
        await writer.append_message("shared", "user", "one")
        async with watcher.watch("shared", poll_interval=0.2) as changes:
            await writer.append_message("shared", "assistant", "two")
            assert "messages" in await changes_until(changes, "messages")


async def test_invalid_arguments_are_refused(store: ContextStore) -> None:
    with pytest.raises(makers_store.MemoryValidationError, match="poll_interval"):
        store.watch("c1", poll_interval=0)
    with pytest.raises(makers_store.MemoryValidationError, match="poll_interval"):
        store.watch("c1", poll_interval=True)
    with pytest.raises(makers_store.MemoryValidationError):
        store.watch("")


async def test_closing_the_watch_ends_the_iteration() -> None:
    async with makers_store.open_store("memory://") as store:
        watch = store.watch("c1")
        await watch.start()
        feed = store.blobs.data.writes  # type: ignore[attr-defined]
        assert feed.listening
        await watch.aclose()
        assert not feed.listening
        with pytest.raises(StopAsyncIteration):
            await anext(watch)


#: Watches of one SQLite file, each closed while its data-version read may be
#: running in a worker thread (reads back to back). Run in a process of its
#: own: closing the connection under a running read crashed the interpreter
#: (SIGSEGV), which took down the Studio when a page left during a read.
CLOSE_DURING_READ = textwrap.dedent(
    """
    import asyncio, random, sqlite3, sys
    from pathlib import Path
    from makers_store.emulator.sqlite import watch as sqlite_watch

    async def main(path):
        sqlite_watch.CHECK_INTERVAL = 0
        for _ in range(2000):
            watch = sqlite_watch.watch_data_version(path, 0.01)
            await anext(watch)
            step = asyncio.ensure_future(anext(watch))
            for _ in range(random.randrange(1, 50)):
                await asyncio.sleep(0)
            step.cancel()
            await asyncio.gather(step, return_exceptions=True)
            await watch.aclose()

    path = Path(sys.argv[1])
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").close()
    asyncio.run(main(path))
    """
)


def test_a_sqlite_watch_closed_during_a_read_does_not_crash(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_DURING_READ, str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_part_of_key_classifies_the_layout() -> None:
    assert part_of_key("c/c1/meta") == "conversation"
    assert part_of_key("c/c1/m/0000000001") == "messages"
    assert part_of_key("c/c1/g/ab12/m/0000000001") == "messages"
    assert part_of_key("c/c1/g/ab12/s/k") == "state"
    assert part_of_key("c/c1/s/k") == "state"
    assert part_of_key("c/c1/x/langgraph/cp") == "frameworks"
    assert part_of_key("i/all/000000000000001/c1") == "conversations"
    assert part_of_key("l/ns/.k") is None
    assert part_of_key("v/layout") is None


def test_the_sync_facade_blocks_until_a_change(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store, makers_store.open_sync_store(url) as writer:
        store.append_message("c1", "user", "first")
        with store.watch("c1") as changes:
            thread = threading.Thread(
                target=writer.append_message, args=("c1", "user", "from a thread")
            )
            thread.start()
            change = next(changes)
            thread.join()
        assert change == StoreChange("c1", frozenset({"messages", "conversation"}))
