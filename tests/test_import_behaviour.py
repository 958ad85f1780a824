"""An import gives back a store that behaves as the original (issue 35, item 1).

Not bytes but behaviour is compared, on the source and on each copy: the
context window, cursors and marks naming deleted messages, the seq the next
append gets, what a prune would delete, and what a fork gives; for an
export written by this version (``next_seq``, ``cleared_below``,
``touched_at``, the aliases of deleted caller ids) and for one from before
those fields, which imports by the safe rule (a next seq past every id the
file names; a last write no older than any time the file shows).
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store._core import keys
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.errors import MemoryValidationError
from tests.backends import backend_url

DAY = 24 * 3600 * 1000
START = 1_700_000_000_000


def _open(url: str, clock: FixedClock, prefix: str) -> makers_store.ContextStore:
    return makers_store.open_store(url, clock=clock, ids=counting_suffixes(prefix))


async def _build(store: makers_store.ContextStore, clock: FixedClock) -> None:
    """A conversation whose newest message was deleted under a summary mark,
    with a caller id deleted under a cursor, cleared once, written two days
    after its last append; and one idle for two days."""
    clock.now = START
    await store.append_message("gone", "user", "cleared away")
    await store.clear_messages("gone")
    await store.append_message("idle", "user", "old")
    ids = await store.append_messages(
        "c",
        [
            {"role": "user", "content": "q0"},
            {"role": "assistant", "content": "a0"},
            {"role": "user", "content": "mine", "message_id": "client-1"},
            {"role": "assistant", "content": "a1"},
        ],
    )
    await store.append_message("c", "assistant", "to be deleted")
    newest = (await store.get_messages("c", order="desc", limit=1))[0].message_id
    await store.set_summary("c", "the first turn", until=newest)
    await store.delete_message("c", newest)
    await store.delete_message("c", "client-1")
    clock.now = START + 2 * DAY
    await store.bind("c").state.set("step", 2)  # a write two days after the last append
    await store.update_message("c", ids[1], content="a0, edited")


async def _after_caller_id(store: makers_store.ContextStore) -> Any:
    try:
        page = await store.get_messages("c", after="client-1")
    except MemoryValidationError:  # no place known for the id
        return "refused"
    return [(keys.seq_of_message_id(m.message_id), m.content) for m in page]


async def _behaviour(store: makers_store.ContextStore, clock: FixedClock) -> dict[str, Any]:
    """What a user of the store meets, with message ids cut to their seqs
    (each store names its own suffixes)."""

    def place(mid: str | None) -> int | str | None:
        seq = None if mid is None else keys.seq_of_message_id(mid)
        return mid if seq is None else seq

    def seqs(messages: list[Any]) -> list[Any]:
        return [(place(m.message_id), m.content) for m in messages]

    clock.now = START + 2 * DAY + 60_000
    window = await store.context_window("c", last=10)
    mark = (await store.get_conversation("c")).metadata["summarizedUntil"]  # type: ignore[union-attr]
    plan = await store.admin.prune_conversations(timedelta(hours=1), dry_run=True)
    out: dict[str, Any] = {
        "window": (window.summary, place(window.summarized_until), seqs(window.messages)),
        "after mark": seqs(await store.get_messages("c", after=mark)),
        "after deleted caller id": await _after_caller_id(store),
        "prune plan": sorted(plan.conversation_ids),
        "gone": seqs(await store.get_messages("gone")),
    }
    fork = await store.fork_conversation("c", "fork of c")
    out["fork"] = (fork.message_count, seqs(await store.get_messages("fork of c")))
    new = await store.append_message("c", "user", "a new question")
    gone = await store.append_message("gone", "user", "after the clear")
    out["new ids"] = (place(new), place(gone))
    after = await store.context_window("c", last=10)
    out["window after append"] = seqs(after.messages)
    out["after mark, after append"] = seqs(await store.get_messages("c", after=mark))
    out["fork appends"] = place(await store.append_message("fork of c", "user", "in the fork"))
    return out


async def _export(store: makers_store.ContextStore) -> list[str]:
    out = io.StringIO()
    await store.admin.export_jsonl(out.write)
    return out.getvalue().splitlines(keepends=True)


def _as_old_file(lines: list[str]) -> list[str]:
    """The export as a version before issue 35 wrote it."""
    old = []
    for line in lines:
        record = json.loads(line)
        if record["type"] == "alias":
            continue
        for name in ("next_seq", "cleared_below", "touched_at"):
            record.pop(name, None)
        old.append(json.dumps(record) + "\n")
    return old


async def _reference() -> dict[str, Any]:
    clock = FixedClock(START)
    async with _open("memory://", clock, "r") as store:
        await _build(store, clock)
        return await _behaviour(store, clock)


@pytest.mark.parametrize("target", ["fresh", "itself", "copy to sqlite"])
async def test_an_import_behaves_as_the_original(
    url: str, tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    expected = await _reference()
    clock = FixedClock(START)
    async with _open(url, clock, "s") as source:
        await _build(source, clock)
        lines = await _export(source)
        conversation = next(json.loads(line) for line in lines if '"conversation_id":"c"' in line)
        assert (conversation["next_seq"], conversation["touched_at"]) == (5, START + 2 * DAY)
        if target == "itself":
            await source.admin.import_jsonl(lambda: lines)
            assert await _export(source) == lines  # nothing the export shows changed
            assert await _behaviour(source, clock) == expected
            return
        if target == "copy to sqlite":
            async with _open(f"sqlite:///{tmp_path}/copy.db", clock, "d") as copy:
                report = await source.admin.copy_to(copy)
                assert report.conversations_written == 3
                assert await _behaviour(copy, clock) == expected
            return
        assert await _behaviour(source, clock) == expected
    kind = request.node.callspec.params["url"]
    (tmp_path / "fresh").mkdir()
    async with _open(backend_url(kind, tmp_path / "fresh"), clock, "d") as imported:
        await imported.admin.import_jsonl(lambda: lines)
        assert await _export(imported) == lines
        assert await _behaviour(imported, clock) == expected


async def test_the_expected_behaviour_is_the_right_one() -> None:
    """What the comparison above compares against holds what the issue asks."""
    seen = await _reference()
    assert seen["window"] == ("the first turn", 4, [])  # the mark at a deleted message holds
    assert seen["prune plan"] == ["gone", "idle"]  # c was written two days after its last append
    assert seen["after deleted caller id"] == [(3, "a1")]
    assert seen["new ids"] == (5, 1)  # never 4, the deleted message's seq; past the clear
    assert seen["window after append"] == [(5, "a new question")]
    assert seen["after mark, after append"] == [(5, "a new question")]


async def test_an_old_export_imports_by_the_safe_rule(url: str) -> None:
    """A file without next_seq and touched_at: the next seq passes the
    summary mark's (a deleted message's) and the last write is no older than
    the message update the file shows, so the prune keeps the conversation."""
    clock = FixedClock(START)
    async with _open("memory://", clock, "s") as source:
        await _build(source, clock)
        old = _as_old_file(await _export(source))
    async with _open(url, clock, "d") as imported:
        await imported.admin.import_jsonl(lambda: old)
        seen = await _behaviour(imported, clock)
    assert seen["new ids"][0] == 5  # past msg 4, which the summary mark names
    assert seen["window after append"] == [(5, "a new question")]
    assert seen["prune plan"] == ["gone", "idle"]  # the update two days later is in the file
    # what such a file cannot tell: where a deleted caller id was
    assert seen["after deleted caller id"] == "refused"


def test_an_export_that_contradicts_itself_is_refused() -> None:
    from makers_store.maintenance.importing import validate_jsonl

    header = '{"type":"header","format":"makers-store-export","version":1}\n'
    conversation = (
        '{"type":"conversation","conversation_id":"c","created_at":1,"last_message_at":1,'
        '"message_count":1,"metadata":{},"user_ids":[],"next_seq":1}\n'
    )
    message = (
        '{"type":"message","conversation_id":"c","message_id":"msg_0000000003_a",'
        '"role":"user","content":"x","created_at":1,"metadata":null}\n'
    )
    with pytest.raises(MemoryValidationError, match="below its next_seq"):
        validate_jsonl([header, conversation, message])
    alias = '{"type":"alias","conversation_id":"c","message_id":"mine","seq":7}\n'
    with pytest.raises(MemoryValidationError, match="alias"):
        validate_jsonl([header, conversation, alias])
