"""index ls / check / rebuild against drift made through the blob layer."""

from __future__ import annotations

import json

import makers_store
from makers_store._core import keys
from tests.cli.conftest import Cli, run_process, with_blobs


def entries(cli: Cli, *args: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in cli.ok("index", "ls", "--json", *args).splitlines()]


def test_index_ls_shows_raw_entries(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x", user_id="u_1")
    lib.append_message(conversation_id="c2", role="user", content="x", user_id="u 2")
    listed = entries(cli)
    assert [(e["index"], e["user_id"], e["conversation_id"]) for e in listed] == [
        ("all", None, "c2"),  # raw key order: newest first
        ("all", None, "c1"),
        ("user", "u 2", "c2"),
        ("user", "u_1", "c1"),
    ]
    assert all(e["current"] for e in listed)
    meta = lib.get_conversation(conversation_id="c1")
    assert meta is not None and listed[1]["last_message_at"] == meta.last_message_at
    assert [e["conversation_id"] for e in entries(cli, "--user", "u_1")] == ["c1"]
    assert "c2" in cli.ok("index", "ls")


def test_check_finds_drift_and_rebuild_repairs_it(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    for cid in ("c1", "c2", "c3"):
        lib.append_message(conversation_id=cid, role="user", content="x", user_id="u_1")
    assert json.loads(cli.ok("index", "check", "--json"))["ok"] is True
    entries = with_blobs(url, lambda blobs: blobs.list(keys.INDEX_ALL))
    (missing,) = [info.key for info in entries if info.key.endswith("/c1")]
    stale_rank = keys.index_key(keys.user_index_prefix("u_1"), (5, None), "c2")
    orphan = keys.index_key(keys.user_index_prefix("ghost"), (7, 3), "nobody")

    async def damage(blobs: makers_store.BlobStore) -> None:
        assert await blobs.delete(missing)
        await blobs.put(stale_rank, b"")
        await blobs.put(orphan, b"")

    with_blobs(url, damage)
    run = cli("index", "check", "--json")
    assert run.exit_code == 1
    report = json.loads(run.stdout)
    assert report["ok"] is False
    assert {(d["kind"], d["key"]) for d in report["drift"]} == {
        ("missing", missing),
        ("stale", stale_rank),
        ("stale", orphan),
    }
    text = cli("index", "check")
    assert text.exit_code == 1 and "3 problems;" in text.stdout
    summary = json.loads(cli.ok("index", "rebuild", "--json"))
    assert summary == {
        "conversations": 3, "created": 1, "removed": 2, "search_index_messages": 3
    }  # fmt: skip
    assert json.loads(cli.ok("index", "check", "--json"))["ok"] is True
    assert "no drift" in cli.ok("index", "check")
    listed = lib.list_conversations(user_id="u_1")
    assert sorted(item.conversation_id for item in listed.items) == ["c1", "c2", "c3"]
    assert "entries created" in cli.ok("index", "rebuild")


def test_blob_ls_and_get(cli: Cli, lib: makers_store.SyncContextStore, url: str) -> None:
    lib.append_message(conversation_id="c1", role="user", content="hello")
    rows = [json.loads(line) for line in cli.ok("blob", "ls", "--json").splitlines()]
    raw = with_blobs(url, lambda blobs: blobs.list(""))
    assert rows == [
        {"key": i.key, "size": i.size, "etag": i.etag, "updated_at": i.updated_at} for i in raw
    ]
    assert [r["key"] for r in rows if r["key"].startswith("c/")] == [
        keys.message_key("c1", 0),
        keys.meta_key("c1"),
    ]
    only = [json.loads(line) for line in cli.ok("blob", "ls", "i/", "--json").splitlines()]
    assert only and all(r["key"].startswith("i/") for r in only)
    assert len(cli.ok("blob", "ls", "--limit", "1", "--json").splitlines()) == 1
    meta_key = keys.meta_key("c1")
    shown = json.loads(cli.ok("blob", "get", meta_key, "--json"))
    assert shown["key"] == meta_key and json.loads(shown["text"])["conversation_id"] == "c1"
    assert "conversation_id" in cli.ok("blob", "get", meta_key)
    message_key = keys.message_key("c1", 0)
    stored = with_blobs(url, lambda blobs: blobs.get(message_key))
    assert stored is not None
    assert cli.ok("blob", "get", message_key, "--raw") == stored.data.decode()


def test_check_fix_repairs_entries_of_rows_deleted_by_hand(url: str) -> None:
    """Issue 35: a conversation's rows deleted under its index entries (as a
    removal cut short leaves them) kept `index check` at exit 1; `--fix`
    removes what points at nothing and recreates what is missing, says so,
    and exits 0 once clean. Through the installed command, in a process."""
    with makers_store.open_sync_store(url) as store:
        for cid in ("c1", "gone", "c3"):
            store.append_message(conversation_id=cid, role="user", content="x", user_id="u_1")

    async def damage(blobs: makers_store.BlobStore) -> str:
        rows = [info.key for info in await blobs.list("c/gone/")]
        assert rows and all([await blobs.delete(key) for key in rows])
        listed = await blobs.list(keys.INDEX_ALL)
        (lost,) = [info.key for info in listed if info.key.endswith("/c1")]
        assert await blobs.delete(lost)
        return lost

    lost = with_blobs(url, damage)
    check = run_process("--store", url, "index", "check")
    assert check.returncode == 1
    assert check.stdout.rstrip().endswith("3 problems; run 'makers-store index check --fix'")
    fixed = run_process("--store", url, "index", "check", "--fix")
    assert fixed.returncode == 0, fixed.stderr
    lines = fixed.stdout.splitlines()
    assert f"missing  {lost}  (the conversation's meta implies it but it is absent)" in lines
    assert sum("/gone  (the conversation does not exist)" in line for line in lines) == 2
    assert lines[-3:] == [
        "checked 5 entries and 2 conversations: 3 problems",
        "fixed: 2 stale entries removed, 1 missing entry created",
        "checked 4 entries and 2 conversations: no drift",
    ]
    assert run_process("--store", url, "index", "check").returncode == 0
    with makers_store.open_sync_store(url) as store:
        listed = store.list_conversations(user_id="u_1").items
        assert sorted(item.conversation_id for item in listed) == ["c1", "c3"]
        assert [m.content for m in store.get_messages(conversation_id="c1")] == ["x"]

    clean = run_process("--store", url, "index", "check", "--fix", "--json")
    assert clean.returncode == 0, clean.stderr
    report = json.loads(clean.stdout)
    assert (report["ok"], report["fixed"], report["found"]["drift"]) == (True, None, [])


def test_check_covers_the_search_index(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    """A message the search index lost is drift; --fix rebuilds the index."""
    import sqlite3

    lib.append_message(conversation_id="c1", role="user", content="find me")
    lib.append_message(conversation_id="c1", role="user", content="and me")
    assert "search index (sqlite fts5 trigram): 2 messages" in cli.ok("index", "check")
    assert "search index: 2 messages indexed" in cli.ok("index", "rebuild")
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    with conn:  # lose one message's row
        conn.execute("DELETE FROM search_rows WHERE key = 'c/c1/m/0000000000'")
    conn.close()
    run = cli("index", "check", "--json")
    assert run.exit_code == 1
    report = json.loads(run.stdout)
    assert report["search_index"]["missing"] == ["c/c1/m/0000000000"] and not report["ok"]
    assert "missing  c/c1/m/0000000000  (search index)" in cli("index", "check").stdout
    fixed = json.loads(cli.ok("index", "check", "--fix", "--json"))
    assert fixed["ok"] and fixed["search_index_rebuilt"] == 2
    assert [h.snippet for h in lib.admin.search_messages("FIND")] == ["find me"]
