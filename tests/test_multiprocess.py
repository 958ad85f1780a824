"""Many OS processes on one store (SQLite file, PostgreSQL, S3), and writers
killed mid-stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import makers_store
from makers_store.maintenance.index_repair import iter_index_entries
from tests.backends import SHARED_BACKENDS, backend_url

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def appends_per_process(kind: str) -> int:
    """Each request to the local S3 server takes milliseconds: fewer appends there."""
    return 60 if kind == "s3" else 500


def worker(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        _out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err


async def all_messages(store: makers_store.ContextStore, cid: str) -> list[makers_store.Message]:
    out: list[makers_store.Message] = []
    after = None
    while True:
        page = await store.get_messages(conversation_id=cid, limit=100, after=after)
        out += page
        if len(page) < 100:
            return out
        after = page[-1].message_id


async def index_entries(store: makers_store.ContextStore) -> list[str]:
    """The current index entries; any other must be one whose batched
    deletion meta owes (object storage), never clutter."""
    current = []
    async for entry in iter_index_entries(store.runner):
        assert entry.current or entry.owed, entry
        if entry.current:
            current.append(entry.key)
    return current


@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_four_processes_append_to_one_conversation(kind: str, tmp_path: Path) -> None:
    url = backend_url(kind, tmp_path)
    each = appends_per_process(kind)
    total = 4 * each
    finish([worker("append", url, "shared", str(each), f"w{n}", "u1") for n in range(4)])
    async with makers_store.open_store(url) as store:
        messages = await all_messages(store, "shared")
        assert len(messages) == total
        ids = [m.message_id for m in messages]
        assert len(set(ids)) == total and ids == sorted(ids)
        assert [int(mid.split("_")[1]) for mid in ids] == list(range(total))  # one total order
        for n in range(4):  # each writer's messages appear in the order it wrote them
            mine = [m.content for m in messages if m.content.startswith(f"w{n}-")]
            assert mine == [f"w{n}-{i}" for i in range(each)]
        meta = await store.get_conversation(conversation_id="shared")
        assert meta is not None and meta.message_count == total
        # Writers' clocks and seqs need not agree in order; last_message_at never goes back.
        assert meta.last_message_at == max(m.created_at for m in messages)
        assert len(await index_entries(store)) == 2  # one recency entry, one for user u1
        for uid in (None, "u1"):
            [item] = (await store.list_conversations(user_id=uid)).items
            assert item == meta


@pytest.mark.parametrize("kind", SHARED_BACKENDS)
async def test_four_processes_write_conversations_of_one_user(kind: str, tmp_path: Path) -> None:
    url = backend_url(kind, tmp_path)
    each = appends_per_process(kind)
    finish([worker("spread", url, f"p{n}-", "5", str(each), f"w{n}", "u") for n in range(4)])
    async with makers_store.open_store(url) as store:
        seen = []
        page = await store.list_conversations(user_id="u", limit=7)
        while True:
            seen += page.items
            if page.next_cursor is None:
                break
            page = await store.list_conversations(user_id="u", limit=7, after=page.next_cursor)
        assert sorted(c.conversation_id for c in seen) == sorted(
            f"p{n}-{i}" for n in range(4) for i in range(5)
        )
        assert all(c.message_count == each // 5 for c in seen)
        stamps = [c.last_message_at for c in seen]
        assert stamps == sorted(stamps, reverse=True)
        assert len(await index_entries(store)) == 40  # exactly one per conversation per index
        for meta in seen:
            messages = await all_messages(store, meta.conversation_id)
            assert len(messages) == each // 5
            assert meta.last_message_at == max(m.created_at for m in messages)


@pytest.mark.parametrize("kind", SHARED_BACKENDS)
@pytest.mark.parametrize("kill_after", [5, 60, 200])
async def test_writer_killed_mid_stream_leaves_a_consistent_store(
    kind: str, tmp_path: Path, kill_after: int
) -> None:
    url = backend_url(kind, tmp_path)
    proc = worker("forever", url, "c")
    assert proc.stdout is not None
    acked = -1
    deadline = time.monotonic() + 60
    while acked < kill_after and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "writer died"
        acked = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()

    async with makers_store.open_store(url) as store:
        messages = await all_messages(store, "c")
        numbers = [m.content["n"] for m in messages]
        assert numbers == list(range(len(numbers)))  # no gap, no duplicate, no torn message
        assert len(numbers) >= acked + 1  # nothing acknowledged was lost
        assert all(m.metadata == {"n": m.content["n"]} for m in messages)
        meta = await store.get_conversation(conversation_id="c")
        assert meta is not None and meta.message_count == len(numbers)
        for _ in range(10):
            await store.append_message(conversation_id="c", role="user", content={"n": -1})
        meta = await store.get_conversation(conversation_id="c")
        # Without transactions, the killed writer's last message may have been
        # written but not committed; the next writer commits it on its behalf.
        late = [] if store.blobs.capabilities.atomic else [{"n": len(numbers)}]
        after = [m.content for m in await all_messages(store, "c")][len(numbers) :]
        assert after in ([{"n": -1}] * 10, late + [{"n": -1}] * 10)
        assert meta is not None and meta.message_count == len(numbers) + len(after)
        assert len(await index_entries(store)) == 2
        [item] = (await store.list_conversations(user_id="u")).items
        assert item == meta
