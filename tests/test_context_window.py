"""The context window and the platform's summary convention (issue 24, item 5):
``store.context_window``, ``store.set_summary`` and the converters, one test
per rule on every backend, then a 1,000-message conversation run through
summarise-and-continue with a fake model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import TypeAdapter

import makers_store
from makers_store import (
    ContextStore,
    ContextWindow,
    MemoryNotFoundError,
    MemoryValidationError,
    Message,
    to_anthropic_messages,
    to_anthropic_request,
    to_openai_input,
)
from makers_store.blob_ops import BlobInfo, Entry, Op
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.emulator.memory.backend import (
    MemoryBlobStore,
    MemoryMap,
    StepwiseMemoryBlobStore,
)
from makers_store.lifecycle.context_window import SUMMARY_INTRO
from tests.test_convert import OPENAI, check_anthropic_rules

CID = "c1"


async def turns(store: ContextStore, count: int, cid: str = CID) -> list[str]:
    """``count`` messages, user and assistant in turn: their ids."""
    return await store.append_messages(
        cid,
        [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(count)],
    )


def ids(window: ContextWindow) -> list[str]:
    return [m.message_id for m in window.messages]


# --- reading -----------------------------------------------------------------


async def test_without_a_summary_the_window_is_the_newest_messages(store: ContextStore) -> None:
    mids = await turns(store, 30)
    window = await store.context_window(CID, last=10)
    assert window == ContextWindow(CID, None, window.messages, None, truncated=True)
    assert ids(window) == mids[-10:]  # oldest first
    whole = await store.context_window(CID, last=30)
    assert ids(whole) == mids and not whole.truncated
    assert ids(await store.context_window(CID)) == mids[-20:]  # last=20 by default


async def test_the_window_is_the_summary_and_the_messages_after_the_mark(
    store: ContextStore,
) -> None:
    mids = await turns(store, 12)
    await store.update_conversation(CID, {"title": "kept", "tag": "kept too"})
    meta = await store.set_summary(CID, "they greeted", until=mids[7])
    # one shallow merge: both keys written, the rest kept
    assert meta.metadata == {
        "title": "kept",
        "tag": "kept too",
        "summary": "they greeted",
        "summarizedUntil": mids[7],
    }
    assert (await store.get_conversation(CID)).metadata == meta.metadata
    window = await store.context_window(CID, last=20)
    assert window.summary == "they greeted" and window.summarized_until == mids[7]
    assert ids(window) == mids[8:] and not window.truncated
    window = await store.context_window(CID, last=2)
    assert ids(window) == mids[-2:] and window.truncated


async def test_a_mark_may_be_a_callers_own_id(store: ContextStore) -> None:
    first = await turns(store, 3)
    mine = await store.append_message(CID, "assistant", "answer", message_id="web-7f3a")
    after = await turns(store, 2)
    await store.set_summary(CID, "s", until=mine)
    window = await store.context_window(CID)
    assert ids(window) == after and window.summarized_until == "web-7f3a"
    assert first  # summarised


async def test_a_mark_at_a_deleted_message_keeps_its_place(store: ContextStore) -> None:
    mids = await turns(store, 6)
    mine = await store.append_message(CID, "assistant", "a", message_id="mine-1")
    rest = await turns(store, 3)
    for mark, after in ((mids[2], [*mids[3:], mine, *rest]), (mine, rest)):
        await store.set_summary(CID, "s", until=mark)
        await store.delete_message(CID, mark)
        window = await store.context_window(CID)
        assert ids(window) == [m for m in after if m != mids[2]]
        assert window.summarized_until == mark


async def test_a_mark_that_names_no_place_is_ignored(store: ContextStore) -> None:
    await turns(store, 3)
    await store.append_message(CID, "assistant", "a", message_id="mine-1")
    await store.set_summary(CID, "before the clear", until="mine-1")
    await store.clear_messages(CID)  # drops the alias of "mine-1"
    later = await turns(store, 4)
    window = await store.context_window(CID)
    assert window.summary == "before the clear" and window.summarized_until is None
    assert ids(window) == later
    for bogus in ("nobody", "msg_9999999999_zz", 42):  # hand-written metadata
        await store.update_conversation(CID, {"summarizedUntil": bogus})
        window = await store.context_window(CID, last=3)
        assert ids(window) == later[-3:] and window.summarized_until is None


async def test_a_summary_without_a_mark_and_a_mark_without_a_summary(
    store: ContextStore,
) -> None:
    mids = await turns(store, 5)
    await store.update_conversation(CID, {"summary": "older things"})
    window = await store.context_window(CID)
    assert window.summary == "older things" and ids(window) == mids  # nothing is hidden
    await store.update_conversation(CID, {"summary": None, "summarizedUntil": mids[1]})
    window = await store.context_window(CID)
    assert window.summary is None and ids(window) == mids[2:]  # the mark is followed


async def test_a_summary_that_is_not_text(store: ContextStore) -> None:
    await turns(store, 2)
    await store.update_conversation(CID, {"summary": {"topics": ["tea", "茶"]}})
    assert (await store.context_window(CID)).summary == '{"topics":["tea","茶"]}'
    await store.update_conversation(CID, {"summary": ""})
    assert (await store.context_window(CID)).summary is None


async def test_a_missing_conversation_is_an_empty_window(store: ContextStore) -> None:
    assert await store.get_messages("nobody") == []
    assert await store.context_window("nobody") == ContextWindow("nobody", None, [])


async def test_last_is_checked(store: ContextStore) -> None:
    for bad in (0, -1, 1001, "5", 2.0, True, None):
        with pytest.raises(MemoryValidationError, match="last"):
            await store.context_window(CID, last=bad)  # type: ignore[arg-type]
    await turns(store, 3)
    assert len((await store.context_window(CID, last=1000)).messages) == 3


async def test_a_window_cut_by_count_does_not_open_with_orphan_tool_results(
    store: ContextStore,
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    await store.append_messages(
        CID,
        [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
            {"role": "tool", "content": "sunny", "metadata": {"tool_call_id": "call_1"}},
            {"role": "tool", "content": "warm", "metadata": {"tool_call_id": "call_1"}},
            {"role": "assistant", "content": "sunny and warm"},
        ],
    )
    window = await store.context_window(CID, last=3)  # would open with the two results
    assert [m.content for m in window.messages] == ["sunny and warm"] and window.truncated
    whole = await store.context_window(CID, last=4)  # opens with the call: kept
    assert [m.role for m in whole.messages] == ["assistant", "tool", "tool", "assistant"]


async def test_the_window_is_read_in_one_unit_whatever_the_length(
    store: ContextStore,
) -> None:
    await turns(store, 50)  # (1,200 messages: test_a_long_conversation_is_never_read_whole)
    mids = await turns(store, 150)
    await store.set_summary(CID, "s", until=mids[-31])
    reads = 0
    run = store.runner.run

    async def counted(make: Any, *, write: bool) -> Any:
        nonlocal reads
        reads += 1
        return await run(make, write=write)

    store.runner.run = counted  # type: ignore[method-assign]
    window = await store.context_window(CID, last=20)
    assert reads == 1 and ids(window) == mids[-20:] and window.truncated


class CountingMap(MemoryMap):
    """Counts the blobs (values) and keys the operations return."""

    def __init__(self) -> None:
        super().__init__()
        self.values = 0
        self.keys = 0

    def apply(self, op: Op, undo: list[tuple[str, Any]] | None = None) -> object:
        result = super().apply(op, undo)
        found = result if isinstance(result, list) else [result]
        self.values += sum(1 for item in found if isinstance(item, Entry | makers_store.Blob))
        self.keys += sum(1 for item in found if type(item) is BlobInfo)
        return result


@pytest.mark.parametrize("atomic", [True, False], ids=["memory", "stepwise"])
async def test_a_long_conversation_is_never_read_whole(atomic: bool) -> None:
    data = CountingMap()
    blobs = MemoryBlobStore(data) if atomic else StepwiseMemoryBlobStore(data)
    async with ContextStore(blobs, clock=FixedClock(), ids=counting_suffixes()) as store:
        mids = [mid for _ in range(2) for mid in await turns(store, 1000 // 2)]
        mids += await turns(store, 200)
        await store.delete_message(CID, mids[-5])  # a gap inside the window
        await store.append_message(CID, "user", "x", message_id="mine")
        for mark in (mids[-40], "mine", None):
            if mark is not None:
                await store.set_summary(CID, "s", until=mark)
            data.values = data.keys = 0
            window = await store.context_window(CID, last=20)
            assert len(window.messages) <= 20
            # meta, the alias of a caller's id, the page (21 to see more, + the gap)
            assert data.values <= 1 + 1 + 22, data.values
            assert data.keys <= 25, data.keys


# --- writing -----------------------------------------------------------------


async def test_set_summary_refuses_a_message_not_in_the_conversation(
    store: ContextStore,
) -> None:
    mids = await turns(store, 3)
    other = await turns(store, 1, cid="c2")
    await store.delete_message(CID, mids[0])
    before = (await store.get_conversation(CID)).metadata
    for until in (mids[0], other[0], "nobody", "msg_0000000099_x"):  # deleted, elsewhere, never
        with pytest.raises(MemoryNotFoundError, match="until"):
            await store.set_summary(CID, "s", until=until)
    with pytest.raises(MemoryNotFoundError, match="conversation_id"):
        await store.set_summary("missing", "s", until=mids[1])
    assert (await store.get_conversation(CID)).metadata == before  # nothing written
    assert await store.get_conversation("missing") is None


async def test_set_summary_checks_its_arguments(store: ContextStore) -> None:
    mids = await turns(store, 1)
    with pytest.raises(MemoryValidationError, match="summary"):
        await store.set_summary(CID, {"not": "text"}, until=mids[0])  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="summary is required"):
        await store.set_summary(CID, until=mids[0])
    with pytest.raises(MemoryValidationError, match="until"):
        await store.set_summary(CID, "s")
    with pytest.raises(MemoryValidationError, match="until"):
        await store.set_summary(CID, "s", until="")
    with pytest.raises(MemoryValidationError, match="metadata"):  # the metadata cap holds
        await store.set_summary(CID, "x" * 300_000, until=mids[0])
    assert (await store.get_conversation(CID)).metadata == {}


async def test_a_bound_store_uses_its_conversation(store: ContextStore) -> None:
    mids = await turns(store, 4)
    ctx = store.bind(CID)
    await ctx.set_summary("first two", until=mids[1])  # the one-argument form
    window = await ctx.context_window(last=5)
    assert window.summary == "first two" and ids(window) == mids[2:]
    await ctx.set_summary(summary="first three", until=mids[2])
    assert ids(await ctx.context_window()) == mids[3:]


async def test_set_summary_racing_a_delete_of_its_message(store: ContextStore) -> None:
    """Either the summary is written while the message exists (and the later
    delete leaves the mark at its place) or the delete wins and nothing is
    written: the mark never names a message that is not, or was never, there."""
    mids = await turns(store, 40)
    for round_, mark in enumerate(mids[:-1:2]):
        before = (await store.get_conversation(CID)).metadata
        written, deleted = await asyncio.gather(
            store.set_summary(CID, f"round {round_}", until=mark),
            store.delete_message(CID, mark),
            return_exceptions=True,
        )
        assert deleted is None
        metadata = (await store.get_conversation(CID)).metadata
        if isinstance(written, BaseException):
            assert isinstance(written, MemoryNotFoundError) and metadata == before
        else:
            assert metadata["summarizedUntil"] == mark == written.metadata["summarizedUntil"]
            window = await store.context_window(CID, last=100)
            assert ids(window)[0] == mids[mids.index(mark) + 1]


async def test_set_summary_racing_an_append_of_its_id(store: ContextStore) -> None:
    """A caller's id still being appended is not a message yet: refused, or
    written once the message is committed, never a mark at nothing."""
    await turns(store, 2)
    for i in range(15):
        mid = f"web-{i}"
        appended, written = await asyncio.gather(
            store.append_message(CID, "assistant", f"a{i}", message_id=mid),
            store.set_summary(CID, f"s{i}", until=mid),
            return_exceptions=True,
        )
        assert appended == mid
        if not isinstance(written, MemoryNotFoundError):
            assert not isinstance(written, BaseException), written
            assert (await store.get_message(CID, mid)) is not None


# --- the converters ------------------------------------------------------------


def sample_window(summary: str | None) -> ContextWindow:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return ContextWindow(
        CID,
        summary,
        [
            Message("m1", "user", "and then?", 1),
            Message("m2", "assistant", "", 2, {"tool_calls": [call]}),
            Message("m3", "tool", "42", 3, {"tool_call_id": "call_1"}),
            Message("m4", "assistant", "42 it is", 4),
        ],
    )


def test_openai_input_opens_with_the_summary_as_a_system_message() -> None:
    items = to_openai_input(sample_window("they met"))
    OPENAI.validate_python(items)
    assert items[0] == {"role": "system", "content": f"{SUMMARY_INTRO}\nthey met"}
    assert items[1:] == to_openai_input(sample_window("they met").messages)
    assert to_openai_input(sample_window(None)) == to_openai_input(sample_window(None).messages)


def test_anthropic_request_carries_the_summary_as_system_text() -> None:
    window = sample_window("they met")
    request = to_anthropic_request(window)
    assert request == {
        "messages": to_anthropic_messages(window.messages),
        "system": f"{SUMMARY_INTRO}\nthey met",
    }
    check_anthropic_rules(request["messages"])
    # stored system turns join the summary there, in order; without any, no key
    with_system = [Message("s", "system", [{"type": "text", "text": "be brief"}], 0)]
    assert to_anthropic_request(with_system + window.messages)["system"] == "be brief"
    assert "system" not in to_anthropic_request(sample_window(None))
    assert to_anthropic_messages(window) == request["messages"]  # the list form: unchanged
    anthropic_types = pytest.importorskip("anthropic.types.message_create_params")
    TypeAdapter(anthropic_types.MessageCreateParamsNonStreaming).validate_python(
        {"model": "m", "max_tokens": 10, **request}
    )


def test_the_store_methods_take_a_window_too() -> None:
    window = sample_window("they met")
    with makers_store.open_sync_store("memory://") as store:
        assert store.to_openai_input(window) == to_openai_input(window)
        assert store.to_anthropic_messages(window) == to_anthropic_messages(window)
        assert store.to_anthropic_request(window) == to_anthropic_request(window)


# --- summarise and continue ------------------------------------------------------

#: Summarise every SUMMARY_EVERY turns, keeping the last KEEP messages verbatim;
#: a window of LAST holds every message not yet summarised.
SUMMARY_EVERY, KEEP, LAST = 4, 4, 12


def fake_model_summary(previous: str | None, messages: list[Message]) -> str:
    """A deterministic "model" that summarises by listing the ids it folded in."""
    folded = [] if previous is None else previous.split(",")
    return ",".join(folded + [m.message_id for m in messages])


@pytest.mark.slow
async def test_summarise_and_continue_over_a_thousand_messages(store: ContextStore) -> None:
    """Each turn the agent reads the window (the history a model sees), sends
    it with the new question, and stores the question and the answer in one
    write; every few turns it folds what it last saw, but for the newest
    KEEP messages, into the summary. On S3 200 messages: the local server
    (moto) takes 1.5 to 3 minutes for 1,000, and the stepwise memory backend
    runs the 1,000 with S3's semantics in process."""
    turns = 100 if store.blobs.describe()["kind"] == "s3" else 500
    appended: list[str] = []
    summaries = 0
    for turn in range(turns):
        window = await store.context_window(CID, last=LAST)
        # the summary and the window cover every message exactly once
        summarised = [] if window.summary is None else window.summary.split(",")
        assert not window.truncated
        assert summarised + ids(window) == appended, turn
        # ... and with the new question make valid input for both APIs
        question = {"role": "user", "content": f"question {turn}"}
        items = [*to_openai_input(window), question]
        OPENAI.validate_python(items)
        assert (items[0]["role"] == "system") == (window.summary is not None)
        request = store.to_anthropic_request(window)
        check_anthropic_rules([*request["messages"], question])
        assert ("system" in request) == (window.summary is not None)
        own = f"turn-{turn}" if turn % 9 == 0 else None  # caller's ids among generated ones
        appended += await store.append_messages(
            CID, [{**question, "message_id": own}, {"role": "assistant", "content": f"a{turn}"}]
        )
        older = window.messages[:-KEEP]
        if turn % SUMMARY_EVERY == SUMMARY_EVERY - 1 and older:
            await store.set_summary(
                CID, fake_model_summary(window.summary, older), until=older[-1].message_id
            )
            summaries += 1
    assert len(appended) == 2 * turns and summaries >= turns // SUMMARY_EVERY - 1
    final = await store.context_window(CID, last=LAST)
    assert final.summary is not None
    assert final.summary.split(",") + ids(final) == appended
