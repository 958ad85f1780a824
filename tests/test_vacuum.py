"""``store.admin.vacuum()`` (issue 24, item 3): SQLite gives back the free
pages of deleted conversations while other processes read and write,
PostgreSQL vacuums its own tables, S3 and memory have nothing to do and say
so, and no backend changes a byte of data."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore, VacuumReport
from makers_store.emulator.sqlite import vacuum as sqlite_vacuum
from tests.backends import BACKENDS, backend_url
from tests.test_multiprocess import worker

PAD = "x" * 3000  # bigger than a row's share of a page: each message fills pages


async def fill(store: ContextStore, conversations: int, messages: int = 10) -> list[str]:
    cids = [f"c{i:04d}" for i in range(conversations)]
    for i, cid in enumerate(cids):
        await store.append_messages(
            cid,
            [{"role": "user", "content": f"{cid}-{n}-{PAD}"} for n in range(messages)],
            user_id=f"u{i % 3}",
        )
        await store.bind(cid).state.set("step", i)
        await store.update_conversation(cid, {"title": cid})
    return cids


async def snapshot(store: ContextStore) -> list[str]:
    """Everything the store holds, as export writes it."""
    lines: list[str] = []
    await store.admin.export_jsonl(lines.append)
    return lines


async def test_vacuum_changes_no_data(url: str) -> None:
    async with makers_store.open_store(url) as store:
        cids = await fill(store, 12, messages=3)
        for cid in cids[:8]:
            await store.delete_conversation(cid)
        before = await snapshot(store)
        report = await store.admin.vacuum()
        assert isinstance(report, VacuumReport) and report.note
        assert await snapshot(store) == before
        assert [m.content for m in await store.get_messages(cids[-1])] == [
            f"{cids[-1]}-{n}-{PAD}" for n in range(3)
        ]
        await store.append_message(cids[-1], "assistant", "still writable")


@pytest.mark.parametrize("kind", [k for k in ("memory", "stepwise", "s3") if k in BACKENDS])
async def test_object_storage_and_memory_have_nothing_to_do(kind: str, tmp_path: Path) -> None:
    async with makers_store.open_store(backend_url(kind, tmp_path)) as store:
        await fill(store, 2, messages=1)
        await store.delete_conversation("c0000")
        report = await store.admin.vacuum()
        assert report.nothing_to_do and report.note.startswith("nothing to do")
        assert report.backend == ("s3" if kind == "s3" else "memory")
        assert (report.bytes_before, report.bytes_after, report.reclaimed_bytes) == (None,) * 3
        assert store.blobs.describe()["reclaimable_bytes"] == 0
        assert report.to_dict() == {
            "backend": report.backend,
            "bytes_before": None,
            "bytes_after": None,
            "note": report.note,
            "nothing_to_do": True,
            "reclaimed_bytes": None,
        }


@pytest.mark.skipif("postgres" not in BACKENDS, reason="PostgreSQL not among the backends")
async def test_postgres_vacuums_its_own_tables_and_reports(tmp_path: Path) -> None:
    async with makers_store.open_store(backend_url("postgres", tmp_path)) as store:
        cids = await fill(store, 30, messages=4)
        for cid in cids[:25]:
            await store.delete_conversation(cid)
        before = await snapshot(store)
        facts = store.blobs.describe()
        assert facts["reclaimable_bytes"] >= 0 and facts["reclaimable_estimate"] is True
        report = await store.admin.vacuum()
        assert report.backend == "postgres" and not report.nothing_to_do
        assert report.bytes_before and report.bytes_after  # pg_total_relation_size of its tables
        assert report.reclaimed_bytes is not None and report.reclaimed_bytes >= 0
        assert "VACUUM" in report.note and store.blobs.schema in report.note
        assert "warned" not in report.note  # the owner may vacuum its tables
        assert await snapshot(store) == before


# --- SQLite ------------------------------------------------------------------------


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/store.db"


def stop(proc: subprocess.Popen[str]) -> tuple[list[str], str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return out.splitlines(), err


@pytest.mark.slow
async def test_sqlite_gives_back_space_while_other_processes_read_and_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path)
    async with makers_store.open_store(url) as store:
        cids = await fill(store, 400)
        await store.append_messages(
            "read", [{"role": "user", "content": f"r{n}"} for n in range(50)]
        )
        for cid in cids[:350]:
            await store.delete_conversation(cid)
        # what the writes left for the search index, indexed now: this process
        # would do it once they pause, during the vacuum (the file then grew)
        await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]
        kept = await snapshot(store)
        facts = store.blobs.describe()
        assert facts["auto_vacuum"] == "incremental"  # a file of this version, from birth
        reclaimable, on_disk_before = facts["reclaimable_bytes"], facts["size_bytes"]
        assert reclaimable > 4_000_000

        # Small chunks: many short transactions for the reader and the writer to
        # run between (the size is a tuning constant; the rule is the same).
        monkeypatch.setattr(sqlite_vacuum, "CHUNK_PAGES", 64)
        reader = worker("read-forever", url, "read", "50")
        writer = worker("forever", url, "written")
        try:
            assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
            assert writer.stdout is not None and writer.stdout.readline() == "0\n"
            began = time.time()
            report = await store.admin.vacuum()
            ended = time.time()
            assert reader.poll() is None and writer.poll() is None
        finally:
            reads, reader_err = stop(reader)
            appends, writer_err = stop(writer)

    assert report.backend == "sqlite" and not report.nothing_to_do
    # The file's size is the writer's too: it appends as fast as it can all
    # along, so on a loaded machine (a slow vacuum) it may add more than the
    # vacuum gives back (the report's reclaimed bytes are then 0, never below).
    # What the vacuum gave back is the pages it names; the file shrinks by that
    # much once the others stop (the quiet vacuum below).
    assert report.reclaimed_bytes == max(0, report.bytes_before - report.bytes_after)
    given_back = re.search(r"([\d,]+) free pages given back in short transactions", report.note)
    assert given_back is not None, report.note
    conn = sqlite3.connect(tmp_path / "store.db")
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    assert int(given_back.group(1).replace(",", "")) * page_size > 4_000_000, report.note
    # the reader read the same messages throughout, during the vacuum too
    assert reads and all(line.startswith("ok ") for line in reads), (reads[-3:], reader_err)
    during = [
        line
        for line in reads
        if began <= float(line.split()[1]) and float(line.split()[2]) <= ended
    ]
    assert during, "no read ran while the vacuum did"
    # the writer waited its turn (busy handling), never failed: every acknowledged append is there
    assert "Error" not in writer_err, writer_err
    async with makers_store.open_store(url) as store:
        written = await store.get_conversation("written")
        assert written is not None and written.message_count >= len(appends) + 1
        assert store.blobs.describe()["reclaimable_bytes"] < reclaimable / 20
        await store.delete_conversation("written")
        assert await snapshot(store) == kept
        # once the others stopped, the next vacuum's checkpoint shrinks the file on disk
        quiet = await store.admin.vacuum()
        assert "the WAL emptied" in quiet.note
        assert store.blobs.describe()["size_bytes"] < on_disk_before - 4_000_000


def make_old_style(path: Path) -> None:
    """Turn a store file into what versions before incremental auto-vacuum made."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA auto_vacuum = NONE")
        conn.execute("VACUUM")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    finally:
        conn.close()


async def test_an_older_file_is_switched_by_its_first_vacuum(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    async with makers_store.open_store(url) as store:
        await store.append_message("c", "user", "create the file")
    make_old_style(tmp_path / "store.db")
    async with makers_store.open_store(url) as store:
        assert store.blobs.describe()["auto_vacuum"] == "none"
        empty = await store.admin.vacuum()  # no free pages: no rewrite either
        assert (
            empty.note.startswith("no free pages")
            and store.blobs.describe()["auto_vacuum"] == "none"
        )
        cids = await fill(store, 60)
        for cid in cids[:50]:
            await store.delete_conversation(cid)
        kept = await snapshot(store)
        first = await store.admin.vacuum()
        assert "one full VACUUM" in first.note and first.bytes_after < first.bytes_before
        assert store.blobs.describe()["auto_vacuum"] == "incremental"
        assert await snapshot(store) == kept
        for cid in cids[50:55]:
            await store.delete_conversation(cid)
        kept = await snapshot(store)
        second = await store.admin.vacuum()
        assert "short transactions" in second.note and second.bytes_after < second.bytes_before
        assert store.blobs.describe()["reclaimable_bytes"] == 0
        assert await snapshot(store) == kept


def test_the_blocking_store_vacuums_too(tmp_path: Path) -> None:
    with makers_store.open_sync_store(sqlite_url(tmp_path)) as store:
        store.append_messages("c", [{"role": "user", "content": PAD} for _ in range(200)])
        store.delete_conversation("c")
        assert store.blobs.describe()["reclaimable_bytes"] > 0
        report = store.admin.vacuum()
        assert report.reclaimed_bytes and report.reclaimed_bytes > 0
        assert store.blobs.describe()["reclaimable_bytes"] == 0


async def test_sqlite_vacuum_gives_back_the_pages_of_deleted_messages_index_rows(
    tmp_path: Path,
) -> None:
    """A process that deletes and ends at once (a CLI command) leaves the
    deleted messages' search-index rows for a later catch-up; the vacuum
    drops them first, so their pages are given back now, not left free
    after it (``reclaimable_bytes`` 0 once every catch-up is done)."""
    url = sqlite_url(tmp_path)
    async with makers_store.open_store(url) as store:
        cids = await fill(store, 40)
        await store.blobs.catch_up_search_index()
    async with makers_store.open_store(url) as store:  # ends before its catch-up is due
        for cid in cids[:30]:
            await store.delete_conversation(cid)
    async with makers_store.open_store(url) as store:
        report = await store.admin.vacuum()
        assert report.reclaimed_bytes and report.reclaimed_bytes > 0
        assert await store.blobs.catch_up_search_index() == 0  # nothing was left waiting
        assert store.blobs.describe()["reclaimable_bytes"] == 0
        hits = [hit async for hit in store.admin.search_messages(PAD[:20])]
        assert {hit.conversation_id for hit in hits} == set(cids[30:])
