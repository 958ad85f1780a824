"""export / import: a lossless, idempotent round trip with bounded memory."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path
from typing import Any

import makers_store
from makers_store._core import keys
from tests.cli.conftest import Cli, make_store, with_blobs

ODD_ID = "odd/../id %41 ü"
ADAPTER_KEY = keys.adapter_prefix("c1", "claude") + "session/1"
OUTSIDE_KEY = "g/langgraph/ns/item"


def build_source(url: str) -> None:
    async def build() -> None:
        async with makers_store.open_store(url) as store:
            for n in range(3):
                await store.append_message(
                    conversation_id="c1", role="user", content=f"hello {n}", user_id="u_1"
                )
            edited = await store.append_message(
                conversation_id="c1",
                role="assistant",
                content=[
                    {"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                ],
                metadata={"model": "m"},
            )
            await store.update_message(conversation_id="c1", message_id=edited, content={"a": [1]})
            gone = (await store.get_messages(conversation_id="c1"))[1].message_id
            await store.delete_message(conversation_id="c1", message_id=gone)
            await store.update_conversation(conversation_id="c1", metadata={"title": "T", "n": 1})
            await store.bind("c1").state.set("run", {"paused": True, "step": 3})
            await store.bind("c1").state.set("name", "text")
            await store.append_message(
                conversation_id="c2", role="system", content="old", user_id="u_2"
            )
            await store.clear_messages(conversation_id="c2")
            await store.append_message(
                conversation_id="c2", role="user", content="new", user_id="u_1"
            )
            await store.append_message(conversation_id=ODD_ID, role="tool", content="odd")
            await store.bind("only-state").state.set("k", [1, None, "x"])
            await store.blobs.put(ADAPTER_KEY, b"\x00adapter\xff")
            await store.blobs.put(OUTSIDE_KEY, b'{"v": 1}')

    asyncio.run(build())


def snapshot(url: str) -> dict[str, Any]:
    """Everything the public API (and the raw adapter data) shows."""

    async def take() -> dict[str, Any]:
        async with makers_store.open_store(url) as store:
            listed = await store.list_conversations(limit=100)
            out: dict[str, Any] = {"list": listed.to_dict(), "conversations": {}}
            for user in ("u_1", "u_2"):
                out[user] = (await store.list_conversations(user_id=user)).to_dict()
            for cid in [*(i.conversation_id for i in listed.items), "only-state"]:
                meta = await store.get_conversation(conversation_id=cid)
                messages = await store.get_messages(conversation_id=cid, limit=100)
                out["conversations"][cid] = {
                    "meta": None if meta is None else meta.to_dict(),
                    "messages": [m.to_dict() for m in messages],
                    "state": await store.bind(cid).state.items(),
                }
            for key in (ADAPTER_KEY, OUTSIDE_KEY):
                blob = await store.blobs.get(key)
                out[key] = None if blob is None else blob.data
            return out

    return asyncio.run(take())


def test_round_trip_keeps_everything(cli: Cli, url: str, tmp_path: Path) -> None:
    build_source(url)
    dump = tmp_path / "dump.jsonl"
    cli.ok("export", "-o", str(dump))
    target = Cli(f"sqlite:///{tmp_path}/target.db")
    target.ok("import", str(dump))
    source_view = snapshot(url)
    assert snapshot(target.url) == source_view
    c1 = source_view["conversations"]["c1"]
    assert len(c1["messages"]) == 3 and "updated_at" in c1["messages"][-1]
    assert c1["state"] == {"run": {"paused": True, "step": 3}, "name": "text"}
    assert source_view[ADAPTER_KEY] == b"\x00adapter\xff"
    assert json.loads(target.ok("index", "check", "--json"))["ok"] is True
    # next_seq is recomputed: a new message sorts after the imported ones.
    new = target.ok("msg", "append", "c1", "--role", "user", "--content", "later").strip()
    assert new > c1["messages"][-1]["message_id"]


def test_import_is_idempotent_and_replaces_conversations(
    cli: Cli, url: str, tmp_path: Path
) -> None:
    build_source(url)
    dump = tmp_path / "dump.jsonl"
    cli.ok("export", "-o", str(dump))
    target = Cli(f"sqlite:///{tmp_path}/target.db")
    # The target holds a diverging c1 and an unrelated conversation.
    for n in range(6):
        target.ok("msg", "append", "c1", "--role", "user", "--content", f"other {n}", "-u", "u_9")
    target.ok("state", "set", "c1", "stale", "1")
    target.ok("msg", "append", "keep", "--role", "user", "--content", "untouched")
    refused = target("import", str(dump))  # it would replace the diverging c1
    assert refused.exit_code == 1 and "no terminal to ask on" in refused.stderr
    target.ok("import", str(dump), "--yes")
    once = snapshot(target.url)
    target.ok("import", str(dump))  # equal now: nothing replaced, nothing asked
    assert snapshot(target.url) == once
    source_view = snapshot(url)
    assert once["conversations"]["c1"] == source_view["conversations"]["c1"]
    again = tmp_path / "again.jsonl"
    target.ok("export", "--conversation", "c1", "--conversation", "c2", "-o", str(again))
    original = tmp_path / "original.jsonl"
    cli.ok("export", "--conversation", "c1", "--conversation", "c2", "-o", str(original))
    assert again.read_text() == original.read_text()
    kept = json.loads(target.ok("msg", "list", "keep", "--json"))["items"]
    assert [m["content"] for m in kept] == ["untouched"]
    assert json.loads(target.ok("conv", "list", "--user", "u_9", "--json"))["items"] == []
    assert json.loads(target.ok("index", "check", "--json"))["ok"] is True


def test_export_filters(cli: Cli, url: str) -> None:
    build_source(url)
    by_user = [json.loads(line) for line in cli.ok("export", "--user", "u_1").splitlines()]
    assert {r.get("conversation_id") for r in by_user if r["type"] != "header"} == {"c1", "c2"}
    assert not any(r["type"] == "blob" for r in by_user)
    one = [json.loads(line) for line in cli.ok("export", "-c", ODD_ID).splitlines()]
    assert [r["type"] for r in one] == ["header", "conversation", "message"]
    assert one[2]["content"] == "odd"
    missing = cli("export", "--conversation", "nope")
    assert missing.exit_code == 3


def test_a_bad_line_is_named_and_nothing_is_written(cli: Cli, url: str, tmp_path: Path) -> None:
    build_source(url)
    dump = tmp_path / "dump.jsonl"
    cli.ok("export", "-o", str(dump))
    lines = dump.read_text().splitlines()
    target = Cli(make_store(f"sqlite:///{tmp_path}/target.db"))
    for number, bad in (
        (4, "{not json"),
        (
            4,
            '{"type": "message", "conversation_id": "c1", "message_id": "nope", "role": "user",'
            ' "content": "x", "created_at": 1, "metadata": null}',
        ),
        (4, '{"type": "state", "conversation_id": "c1", "key": "k", "value": NaN}'),
        (4, '{"type": "unknown"}'),
    ):
        broken = tmp_path / "broken.jsonl"
        broken.write_text("\n".join([*lines[: number - 1], bad, *lines[number - 1 :]]) + "\n")
        run = target("import", str(broken))
        assert run.exit_code == 2, run.stderr
        assert f"line {number}" in run.stderr
        assert json.loads(target.ok("info", "--json"))["conversations"] == 0
    split = tmp_path / "split.jsonl"
    c1_lines = [line for line in lines if '"conversation_id":"c1"' in line]
    split.write_text("\n".join([c1_lines[0], lines[-1], *c1_lines[1:]]) + "\n")
    run = target("import", str(split))
    assert run.exit_code == 2 and "contiguous" in run.stderr


def test_import_from_stdin(cli: Cli, url: str, tmp_path: Path) -> None:
    build_source(url)
    text = cli.ok("export")
    target = Cli(f"sqlite:///{tmp_path}/target.db")
    target.ok("import", "-", input=text)
    assert snapshot(target.url) == snapshot(url)


def test_export_and_import_memory_stays_bounded(cli: Cli, url: str, tmp_path: Path) -> None:
    size, count = 1024 * 1024, 48  # 48 MB of message content

    async def fill() -> None:
        async with makers_store.open_store(url) as store:
            for n in range(count):
                text = chr(ord("a") + n % 26) * size
                await store.append_message(conversation_id=f"c{n % 3}", role="user", content=text)

    asyncio.run(fill())
    stored = sum(info.size for info in with_blobs(url, lambda blobs: blobs.list("c/")))
    assert stored > count * size
    # Warm up (imports allocate too), then measure growth over the baseline.
    tiny = tmp_path / "tiny.jsonl"
    Cli(make_store(f"sqlite:///{tmp_path}/empty.db")).ok("export", "-o", str(tiny))
    Cli(f"sqlite:///{tmp_path}/empty.db").ok("import", str(tiny))
    dump = tmp_path / "big.jsonl"
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        cli.ok("export", "-o", str(dump))
        export_peak = tracemalloc.get_traced_memory()[1] - baseline
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        Cli(f"sqlite:///{tmp_path}/target.db").ok("import", str(dump))
        import_peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert dump.stat().st_size > count * size
    assert export_peak < stored / 5, (export_peak, stored)
    assert import_peak < stored / 5, (import_peak, stored)
