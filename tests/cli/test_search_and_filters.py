"""Search, time filters and formats (issue 23, items 16 and 17): the library's
search on an atomic and an object-storage-like backend, and msg search, conv
list --find, --since/--until and --format through real processes."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
import tracemalloc
from pathlib import Path

import pytest

import makers_store
from makers_store import MessageHit
from tests.cli.conftest import make_store, run_process


class Clock:
    """Milliseconds the test sets (the library's clock hook)."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


HOUR = 3_600_000
NOW = time.time_ns() // 1_000_000


def build(url: str) -> None:
    """Three conversations over three days; 'refund' in several shapes."""
    clock = Clock(NOW - 72 * HOUR)

    async def fill() -> None:
        async with makers_store.open_store(url, clock=clock) as store:
            await store.append_message(conversation_id="old", role="user",
                                       content="a REFUND three days ago", user_id="u1")  # fmt: skip
            clock.now = NOW - 24 * HOUR
            await store.append_message(
                conversation_id="mid", role="assistant",
                content=[{"type": "text", "text": "your refund is on its way"},
                         {"type": "image_url", "image_url": {"url": "refund.png"}}],
                user_id="u2",
            )  # fmt: skip
            nested = {"content": [{"type": "text", "text": "Refund ok"}]}
            await store.append_message(conversation_id="mid", role="tool", content=nested)
            clock.now = NOW - HOUR
            hostile = "nothing to see\x1b[31m refund\x1b]0;x\x07"
            await store.append_message(conversation_id="new", role="user", content=hostile)
            await store.update_conversation(conversation_id="new",
                                             metadata={"title": "Refund policy"})  # fmt: skip
            await store.append_message(conversation_id="new", role="user", content="no match")

    asyncio.run(fill())


@pytest.mark.parametrize("backend", ["memory://", "memory://?atomic=false"])
def test_the_library_search_on_each_kind_of_backend(backend: str) -> None:
    async def run() -> None:
        store = makers_store.open_store(backend, clock=Clock(NOW))
        async with store:
            for cid, content in (("a", "Hello World"), ("b", [{"type": "text", "text": "world"}]),
                                 ("c", "nothing")):  # fmt: skip
                await store.append_message(conversation_id=cid, role="user", content=content)
            found = [hit async for hit in store.admin.search_messages("WORLD")]
            assert sorted(hit.conversation_id for hit in found) == ["a", "b"]
            assert all(isinstance(hit, MessageHit) for hit in found)
            assert {hit.snippet for hit in found} == {"Hello World", "world"}
            assert [m.conversation_id async for m in store.admin.find_conversations("B")] == ["b"]
            none = [hit async for hit in store.admin.search_messages("world", role="tool")]
            assert none == []
            with pytest.raises(makers_store.MemoryValidationError):
                _ = [hit async for hit in store.admin.search_messages("")]

    asyncio.run(run())


def test_the_library_search_filters_and_prunes(url: str) -> None:
    build(url)
    with makers_store.open_sync_store(url) as store:
        everything = list(store.admin.search_messages("refund"))
        assert [(h.conversation_id, h.role) for h in everything] == [
            ("new", "user"), ("mid", "tool"), ("mid", "assistant"), ("old", "user"),
        ]  # fmt: skip
        assert everything[0].snippet.startswith("nothing to see\x1b[31m refund")  # exact data
        searched: list[int] = []
        recent = list(
            store.admin.search_messages(
                "refund", since=NOW - 30 * HOUR, on_conversation=lambda: searched.append(1)
            )
        )
        assert [h.conversation_id for h in recent] == ["new", "mid", "mid"]
        assert len(searched) == 2  # "old" was never read: older than since, newest first
        assert [h.conversation_id for h in store.admin.search_messages(
            "refund", until=NOW - 30 * HOUR)] == ["old"]  # fmt: skip
        by_user = store.admin.search_messages("refund", user_id="u2")
        assert [h.conversation_id for h in by_user] == ["mid", "mid"]
        assert len(list(store.admin.search_messages("refund", limit=2))) == 2
        hit = next(store.admin.search_messages("refund", conversation_ids=["old"]))
        assert hit.to_dict() == {
            "conversation_id": "old", "message_id": hit.message_id, "role": "user",
            "created_at": NOW - 72 * HOUR, "snippet": "a REFUND three days ago",
        }  # fmt: skip


def test_a_search_holds_a_page_of_messages_not_the_store(url: str) -> None:
    size, count = 1024 * 1024, 100

    async def fill() -> None:
        async with makers_store.open_store(url) as store:
            for n in range(count):
                text = chr(ord("a") + n % 26) * size
                await store.append_message(conversation_id=f"c{n % 2}", role="user", content=text)

    asyncio.run(fill())
    with makers_store.open_sync_store(url) as store:
        list(store.admin.search_messages("zzz"))  # warm up
        tracemalloc.start()
        try:
            assert list(store.admin.search_messages("needle")) == []
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < count * size / 2, peak


def test_msg_search_through_a_pipe(url: str) -> None:
    build(url)
    run = run_process("--store", url, "msg", "search", "refund")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["conversation", "message", "role", "time", "match"]
    assert [line.split()[0] for line in lines[1:]] == ["new", "mid", "mid", "old"]
    assert "\x1b" not in run.stdout and "\\x1b[31m refund\\x1b]0;x\\x07" in run.stdout
    rows = list(csv.DictReader(io.StringIO(run_process(
        "--store", url, "msg", "search", "REFUND", "--format", "csv").stdout)))  # fmt: skip
    assert [row["conversation_id"] for row in rows] == ["new", "mid", "mid", "old"]
    assert rows[0]["snippet"] == "nothing to see\x1b[31m refund\x1b]0;x\x07"  # exact in csv
    tool = json.loads(run_process("--store", url, "msg", "search", "refund", "--role", "tool",
                                  "--json").stdout)  # fmt: skip
    assert [h["conversation_id"] for h in tool["items"]] == ["mid"] and tool["more"] is False
    limited = run_process("--store", url, "msg", "search", "refund", "-n", "1")
    assert len(limited.stdout.splitlines()) == 2 and "more: --limit 2 or --all" in limited.stderr
    lines = run_process("--store", url, "msg", "search", "refund", "--since", "30h",
                        "--format", "jsonl").stdout.splitlines()  # fmt: skip
    assert [json.loads(line)["conversation_id"] for line in lines] == ["new", "mid", "mid"]
    tsv = run_process("--store", url, "msg", "search", "refund", "-c", "old", "-c", "mid",
                      "--format", "tsv").stdout.splitlines()  # fmt: skip
    assert len(tsv) == 4 and tsv[0] == "conversation_id\tmessage_id\trole\tcreated_at\tsnippet"
    nothing = run_process("--store", url, "msg", "search", "absent")
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "no messages match\n")


def test_conv_list_find_since_until_and_formats(url: str) -> None:
    build(url)
    found = run_process("--store", url, "conv", "list", "--find", "REFUND")
    assert [line.split()[0] for line in found.stdout.splitlines()[1:]] == ["new"]  # by title
    by_id = run_process("--store", url, "conv", "list", "--find", "OLD", "--format", "jsonl")
    assert [json.loads(line)["conversation_id"] for line in by_id.stdout.splitlines()] == ["old"]
    recent = json.loads(run_process("--store", url, "conv", "list", "--since", "2d",
                                    "--json").stdout)  # fmt: skip
    assert [i["conversation_id"] for i in recent["items"]] == ["new", "mid"]
    older = json.loads(run_process("--store", url, "conv", "list", "--until", "2h", "--order",
                                   "asc", "--json").stdout)  # fmt: skip
    assert [i["conversation_id"] for i in older["items"]] == ["old", "mid"]
    rows = list(csv.reader(io.StringIO(run_process("--store", url, "conv", "list", "--format",
                                                   "csv").stdout)))  # fmt: skip
    assert rows[0] == ["conversation_id", "created_at", "last_message_at", "message_count",
                       "metadata"]  # fmt: skip
    assert rows[1][0] == "new" and json.loads(rows[1][4]) == {"title": "Refund policy"}
    for bad, words in (
        (("--since", "yesterday"), "--since must be an ISO time"),
        (("--since", "1h", "--until", "2h"), "is after --until"),
        (("--json", "--format", "csv"), "--json and --format csv are mutually exclusive"),
        (("--find", "x", "--before", "c"), "--before pages back"),
        (("--format", "xml"), "--format must be one of table, json, jsonl, csv, tsv"),
    ):
        run = run_process("--store", url, "conv", "list", *bad)
        assert run.returncode == 2 and words in run.stderr, (bad, run.stderr)


def test_a_filtered_listing_pages_on_without_gaps_or_repeats(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/many.db")
    with makers_store.open_sync_store(url) as store:
        for n in range(250):
            store.append_message(conversation_id=f"{'hit' if n % 3 == 0 else 'miss'}-{n:03}",
                                 role="user", content="x")  # fmt: skip
    expected = json.loads(run_process("--store", url, "conv", "list", "--all",
                                      "--json").stdout)["items"]  # fmt: skip
    wanted = [i["conversation_id"] for i in expected if i["conversation_id"].startswith("hit")]
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        page = json.loads(run_process("--store", url, "conv", "list", "--find", "hit", "-n", "30",
                                      "--json", *cursor).stdout)  # fmt: skip
        seen += [i["conversation_id"] for i in page["items"]]
        if page["next_cursor"] is None:
            break
        cursor = ["--after", page["next_cursor"]]
    assert seen == wanted and len(wanted) == 84


def test_msg_list_and_export_take_time_filters(url: str, tmp_path: Path) -> None:
    build(url)
    listed = json.loads(run_process("--store", url, "msg", "list", "mid", "--until", "1h",
                                    "--json").stdout)  # fmt: skip
    assert [m["role"] for m in listed["items"]] == ["assistant", "tool"]
    assert json.loads(run_process("--store", url, "msg", "list", "mid", "--since", "1h",
                                  "--json").stdout)["items"] == []  # fmt: skip
    rows = run_process("--store", url, "msg", "list", "mid", "--format", "tsv").stdout
    assert rows.count("\n") == 3 and '"type":"text"' in rows  # one line per message
    exported = run_process("--store", url, "export", "--since", "2d").stdout.splitlines()
    kinds = [
        (json.loads(line)["type"], json.loads(line).get("conversation_id")) for line in exported
    ]
    assert {cid for kind, cid in kinds if kind == "conversation"} == {"new", "mid"}
    nothing = run_process("--store", url, "export", "--until", "2000-01-01")
    assert nothing.returncode == 0 and len(nothing.stdout.splitlines()) == 1  # the header only
