"""Snapshots, reset and seed (issue 34): a snapshot gives back everything the
store held, byte for byte as ``export`` writes it, on every backend."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore, MemoryConflictError, MemoryNotFoundError
from makers_store.errors import MemoryValidationError
from makers_store.maintenance.snapshots import MANIFEST_KEY
from tests.backends import BACKENDS, backend_url


async def populate(store: ContextStore, tag: str = "") -> None:
    """Something of everything a store holds: messages with caller and
    generated ids, metadata and a summary, state, users, an alias of a
    deleted caller id, LangGraph checkpoints and store items, a Claude
    session with a subagent transcript, OpenAI session items."""
    from langgraph.checkpoint.base import empty_checkpoint

    for n in range(3):
        cid = f"c{n}{tag}"
        await store.append_message(cid, "user", f"question {n}", message_id=f"q{n}", user_id="u1")
        await store.append_message(cid, "assistant", f"answer {n}", user_id=f"u{n}")
        await store.bind(cid).state.set("step", {"n": n, "tag": tag})
    await store.append_message(f"c0{tag}", "user", "gone", message_id="gone")
    await store.delete_message(f"c0{tag}", "gone")  # its id stays a place: an alias
    first = (await store.get_messages(f"c1{tag}"))[0].message_id
    await store.set_summary(f"c1{tag}", "They asked and were answered.", until=first)
    await store.update_conversation(f"c2{tag}", metadata={"title": "Third"})
    saver = store.langgraph_checkpointer
    config = {"configurable": {"thread_id": f"c0{tag}", "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    await store.langgraph_store.aput(("memories", "u1"), f"likes{tag}", {"tea": True})
    claude = store.claude_session_store()
    key = {"project_key": "proj", "session_id": f"c1{tag}"}
    await claude.append(key, [{"type": "user", "uuid": f"e1{tag}", "message": {}}])  # type: ignore[arg-type, list-item]
    sub = {**key, "subpath": "subagents/agent-1"}
    await claude.append(sub, [{"type": "user", "uuid": f"s1{tag}", "message": {}}])  # type: ignore[arg-type, list-item]
    session = store.openai_session(f"c2{tag}")
    await session.add_items([{"role": "user", "content": f"openai {tag}"}])  # type: ignore[list-item]


async def exported(store: ContextStore) -> str:
    out = io.StringIO()
    await store.admin.export_jsonl(out.write)
    return out.getvalue()


ROUND_TRIP = [b for b in BACKENDS if b in ("memory", "stepwise", "sqlite", "postgres")]


@pytest.mark.parametrize("backend", ROUND_TRIP)
async def test_restore_gives_back_exactly_what_was_saved(backend: str, tmp_path: Path) -> None:
    snaps = tmp_path / "snaps"
    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        await populate(store)
        before = await exported(store)
        for kind in ('"type":"adapter"', '"type":"alias"', '"type":"blob"', "summary", "u2"):
            assert kind in before  # the store holds something of everything
        info = await store.admin.save_snapshot("base", directory=snaps)
        assert info.counts["conversations"] == 3 and info.counts["messages"] >= 6
        assert info.counts["users"] == 3
        await populate(store, tag="-later")  # more of everything, and changes
        await store.delete_conversation("c2")
        await store.append_message("c1", "user", "after the save")
        assert await exported(store) != before
        restored = await store.admin.restore_snapshot("base", directory=snaps)
        assert restored == info
        assert await exported(store) == before
        assert await store.blobs.get(MANIFEST_KEY) is None  # the snapshot's own, not the store's
        await store.admin.reset()
        assert (await store.admin.counts()).conversations == 0
        assert (await exported(store)).count("\n") == 1  # the header alone
        assert await store.admin.reset(to="base", directory=snaps) == info
        assert await exported(store) == before


async def test_save_list_delete_and_names(tmp_path: Path) -> None:
    async with makers_store.open_store(f"sqlite:///{tmp_path}/p/.makers-store/store.db") as store:
        await store.append_message("c", "user", "hi")
        first = await store.admin.save_snapshot("first")
        assert Path(first.path) == tmp_path / "p/.makers-store/snapshots/first.db"
        with pytest.raises(MemoryConflictError, match="exists"):
            await store.admin.save_snapshot("first")
        await store.append_message("c", "user", "again")
        second = await store.admin.save_snapshot("second")
        replaced = await store.admin.save_snapshot("first", replace=True)
        assert replaced.counts["messages"] == 2
        names = [info.name async for info in store.admin.list_snapshots()]
        assert names == ["first", "second"]  # newest first
        assert second.counts["messages"] == 2 and first.counts["messages"] == 1
        assert await store.admin.delete_snapshot("second") is True
        assert await store.admin.delete_snapshot("second") is False
        with pytest.raises(MemoryNotFoundError, match="snapshot 'second' not found"):
            await store.admin.restore_snapshot("second")
        for bad in ("", ".hidden", "a/b", "x.db", "é"):
            with pytest.raises(MemoryValidationError, match="snapshot name"):
                await store.admin.save_snapshot(bad)
        left = sorted(p.name for p in (tmp_path / "p/.makers-store/snapshots").iterdir())
        assert left == ["first.db"]  # no temporary file behind


async def test_another_connection_reads_the_restored_store(tmp_path: Path) -> None:
    """What serve's workers see: a store opened before the restore (its own
    connections) reads the snapshot's data after it, and writes on."""
    url = f"sqlite:///{tmp_path}/store.db"
    async with makers_store.open_store(url) as store, makers_store.open_store(url) as worker:
        await store.append_message("c", "user", "kept")
        await store.admin.save_snapshot("s")
        await worker.append_message("c", "user", "lost")
        assert len(await worker.get_messages("c")) == 2
        await store.admin.restore_snapshot("s")
        assert [m.content for m in await worker.get_messages("c")] == ["kept"]
        await worker.append_message("c", "user", "next")
        assert [m.content for m in await store.get_messages("c")] == ["kept", "next"]


async def test_seed_loads_fixtures_idempotently(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    async with makers_store.open_store("memory://") as source:
        await populate(source)
        (seeds / "a.jsonl").write_text(await exported(source), encoding="utf-8")
    async with makers_store.open_store(f"sqlite:///{tmp_path}/store.db") as store:
        await store.append_message("mine", "user", "not a fixture")
        counts = await store.admin.seed(seeds)
        assert counts.conversations == 3
        await store.append_message("c0", "user", "a dev run wrote this")
        once = await exported(store)
        again = await store.admin.seed(seeds / "a.jsonl")
        assert again.conversations == 3
        twice = await exported(store)
        assert "a dev run wrote this" in once and "a dev run wrote this" not in twice
        assert await store.admin.seed(seeds) == again
        assert await exported(store) == twice  # the same conversations every time
        assert "not a fixture" in twice  # others are left alone
        (seeds / "b.jsonl").write_text('{"type":"header"}\n', encoding="utf-8")
        with pytest.raises(MemoryValidationError, match=r"b\.jsonl"):
            await store.admin.seed(seeds)  # checked whole first: nothing written
        assert await exported(store) == twice
        with pytest.raises(MemoryNotFoundError):
            await store.admin.seed(tmp_path / "none")


@pytest.mark.parametrize("backend", ROUND_TRIP)
async def test_a_seed_loads_and_reloads_on_every_backend(backend: str, tmp_path: Path) -> None:
    """One unit for the whole seed where the backend has transactions
    (memory, SQLite, PostgreSQL), one per conversation on the stepwise one."""
    seed = tmp_path / "seed.jsonl"
    async with makers_store.open_store("memory://") as source:
        await populate(source)
        seed.write_text(await exported(source), encoding="utf-8")
    async with makers_store.open_store(backend_url(backend, tmp_path)) as store:
        first = await store.admin.seed(seed)
        assert first.conversations == 3
        once = await exported(store)
        await store.append_message("c0", "user", "a dev run wrote this")
        assert await store.admin.seed(seed) == first
        assert await exported(store) == once


async def test_a_seed_beyond_one_transaction_is_refused_and_s3_seeds_per_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the backend has transactions the seed is one unit, up to a bound
    (refused beyond it, nothing written); without them (the stepwise backend,
    as S3) each conversation is its own unit and the bound does not apply."""
    from makers_store.maintenance import snapshots

    seed = tmp_path / "seed.jsonl"
    async with makers_store.open_store("memory://") as source:
        await populate(source)
        seed.write_text(await exported(source), encoding="utf-8")
    monkeypatch.setattr(snapshots, "SEED_UNIT_MAX_BYTES", seed.stat().st_size - 1)
    async with makers_store.open_store(f"sqlite:///{tmp_path}/store.db") as store:
        with pytest.raises(MemoryValidationError, match="makers-store import"):
            await store.admin.seed(seed)
        assert await store.admin.count_conversations() == 0
    async with makers_store.open_store("memory://?atomic=false") as stepwise:
        assert (await stepwise.admin.seed(seed)).conversations == 3
        assert await stepwise.admin.count_conversations() == 3


def test_the_blocking_api(tmp_path: Path) -> None:
    with makers_store.open_sync_store(f"sqlite:///{tmp_path}/store.db") as store:
        store.append_message("c", "user", "hi")
        info = store.admin.save_snapshot("s")
        assert [i.name for i in store.admin.list_snapshots()] == ["s"]
        assert store.admin.snapshot_info("s") == info
        assert json.loads(json.dumps(info.to_dict()))["counts"]["messages"] == 1
        store.admin.reset()
        assert store.admin.reset(to="s") == info
        assert store.get_messages("c")[0].content == "hi"


async def test_the_seed_init_writes_loads(tmp_path: Path) -> None:
    from makers_store.emulator.runtime.project.templates import FILES

    (tmp_path / "welcome.jsonl").write_text(FILES["seeds/welcome.jsonl"], encoding="utf-8")
    async with makers_store.open_store("memory://") as store:
        counts = await store.admin.seed(tmp_path / "welcome.jsonl")
        assert (counts.conversations, counts.messages) == (1, 2)
        messages = await store.get_messages("welcome")
        assert [m.message_id for m in messages] == ["welcome-1", "welcome-2"]


WRITER = """
import sys, makers_store
with makers_store.open_sync_store(sys.argv[1]) as store:
    print("writing", flush=True)
    n = 0
    while True:
        store.append_messages(f"w{n % 40}", [{"role": "user", "content": "x" * 2000}] * 5)
        n += 1
"""


def test_a_save_while_another_process_writes_is_the_store_of_one_moment(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    url = f"sqlite:///{tmp_path}/store.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("w0", "user", "start")
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, url], stdout=subprocess.PIPE, text=True
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
            saved = []
            for n in range(3):
                while store.admin.counts().messages < 50 * (n + 1):
                    time.sleep(0.02)  # the writer is under way
                saved.append(store.admin.save_snapshot(f"s{n}"))
        finally:
            writer.kill()
            writer.communicate()
    for info in saved:
        with makers_store.open_sync_store(f"sqlite:///{info.path}") as snapshot:
            assert snapshot.admin.check_index().ok
            total = 0
            for meta in snapshot.iter_conversations():
                messages = list(snapshot.iter_messages(meta.conversation_id))
                assert len(messages) == meta.message_count  # no append seen in half
                total += len(messages)
            assert total == info.counts["messages"] > 1
    assert saved[0].counts["messages"] < saved[2].counts["messages"]
