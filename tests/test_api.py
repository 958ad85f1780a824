"""The public API's contract (spec section 3), on every backend."""

from __future__ import annotations

import pytest

import makers_store
from makers_store import (
    ContextStore,
    MemoryNotFoundError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    StoreError,
)


async def test_spec_example_round_trip(store: ContextStore) -> None:
    mid = await store.append_message(
        conversation_id="c1",
        role="user",
        content="hi",
        user_id="u_123",
        metadata={"source": "web"},
    )
    assert mid.startswith("msg_")
    msgs = await store.get_messages(conversation_id="c1", limit=50)
    assert [m.to_dict() for m in msgs] == [
        {
            "message_id": mid,
            "role": "user",
            "content": "hi",
            "created_at": 1_700_000_000_000,
            "metadata": {"source": "web"},
        }
    ]
    page = await store.list_conversations(user_id="u_123", limit=20)
    assert [c.conversation_id for c in page.items] == ["c1"]
    assert page.next_cursor is None and page.previous_cursor is None
    bound = store.bind("c1")
    await bound.state.set("session", {"step": 2})
    assert await bound.state.get("session") == {"step": 2}
    meta = await store.get_conversation(conversation_id="c1")
    assert meta is not None and meta.message_count == 1
    assert meta.to_dict() == {
        "conversation_id": "c1",
        "created_at": 1_700_000_000_000,
        "last_message_at": 1_700_000_000_000,
        "message_count": 1,
        "metadata": {},
    }


async def test_content_shapes_round_trip(store: ContextStore) -> None:
    contents = [
        "plain",
        ["a", "b"],
        {"type": "image", "url": "https://x/y.png"},
        [{"type": "text", "text": "t"}, {"type": "image_url", "image_url": {"url": "u"}}],
        "",
    ]
    for content in contents:
        await store.append_message(conversation_id="c", role="assistant", content=content)
    got = await store.get_messages(conversation_id="c", limit=10)
    assert [m.content for m in got] == contents


async def test_message_ids_unique_and_sorted(store: ContextStore) -> None:
    ids = [
        await store.append_message(conversation_id="c", role="user", content=str(i))
        for i in range(30)
    ]
    assert ids == sorted(ids) and len(set(ids)) == 30
    other = await store.append_message(conversation_id="d", role="user", content="x")
    assert other not in ids


async def test_pagination_follows_listing_order(store: ContextStore) -> None:
    ids = [
        await store.append_message(conversation_id="c", role="user", content=str(i))
        for i in range(10)
    ]

    async def page(**kw: object) -> list[str]:
        return [m.message_id for m in await store.get_messages(conversation_id="c", **kw)]  # type: ignore[arg-type]

    assert await page(limit=3) == ids[:3]
    assert await page(limit=3, after=ids[2]) == ids[3:6]
    assert await page(limit=3, before=ids[5]) == ids[2:5]
    assert await page(limit=3, order="desc") == ids[::-1][:3]
    assert await page(limit=3, order="desc", after=ids[7]) == [ids[6], ids[5], ids[4]]
    assert await page(limit=3, order="desc", before=ids[2]) == [ids[5], ids[4], ids[3]]
    # A cursor stays valid after its message is deleted.
    await store.delete_message(conversation_id="c", message_id=ids[4])
    assert await page(limit=2, after=ids[4]) == ids[5:7]
    assert await page(limit=2, order="desc", after=ids[4]) == [ids[3], ids[2]]


async def test_update_message_changes_only_given_fields(store: ContextStore) -> None:
    mid = await store.append_message(
        conversation_id="c", role="user", content="a", metadata={"x": 1}
    )
    updated = await store.update_message(conversation_id="c", message_id=mid, content="b")
    assert (updated.content, updated.metadata) == ("b", {"x": 1})
    assert updated.updated_at is not None and updated.updated_at > updated.created_at
    updated = await store.update_message(conversation_id="c", message_id=mid, metadata={"y": 2})
    assert (updated.content, updated.metadata) == ("b", {"y": 2})  # replaced, not merged
    [stored] = await store.get_messages(conversation_id="c")
    assert stored == updated and "updated_at" in stored.to_dict()


async def test_unknown_targets(store: ContextStore) -> None:
    assert await store.get_messages(conversation_id="nope") == []
    assert await store.get_conversation(conversation_id="nope") is None
    await store.delete_conversation(conversation_id="nope")
    await store.clear_messages(conversation_id="nope")
    mid = await store.append_message(conversation_id="c", role="user", content="a")
    for bad in ("msg_abc123", mid.replace("msg_0000000000", "msg_0000000009"), mid[:-1] + "z"):
        with pytest.raises(MemoryNotFoundError, match="message_id"):
            await store.update_message(conversation_id="c", message_id=bad, content="x")
        with pytest.raises(MemoryNotFoundError):
            await store.delete_message(conversation_id="c", message_id=bad)
    with pytest.raises(MemoryNotFoundError):
        await store.delete_message(conversation_id="other", message_id=mid)
    with pytest.raises(MemoryNotFoundError, match="conversation_id"):
        await store.update_conversation(conversation_id="nope", metadata={"a": 1})
    with pytest.raises(KeyError):  # MemoryNotFoundError is also a KeyError
        await store.update_conversation(conversation_id="nope", metadata={"a": 1})


async def test_clear_keeps_conversation_and_metadata(store: ContextStore) -> None:
    await store.append_message(conversation_id="c", role="user", content="a", user_id="u")
    await store.update_conversation(conversation_id="c", metadata={"title": "T"})
    await store.clear_messages(conversation_id="c")
    meta = await store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 0 and meta.metadata == {"title": "T"}
    assert await store.get_messages(conversation_id="c") == []
    mid = await store.append_message(conversation_id="c", role="user", content="b")
    assert [m.message_id for m in await store.get_messages(conversation_id="c")] == [mid]
    assert [c.conversation_id for c in (await store.list_conversations(user_id="u")).items] == ["c"]


async def test_update_conversation_merges_shallowly(store: ContextStore) -> None:
    await store.append_message(conversation_id="c", role="user", content="a")
    await store.update_conversation(
        conversation_id="c", metadata={"title": "A", "tag": "x", "n": {"a": 1}}
    )
    meta = await store.update_conversation(
        conversation_id="c", metadata={"tag": None, "n": {"b": 2}}
    )
    assert meta.metadata == {"title": "A", "n": {"b": 2}}


async def test_delete_conversation_removes_everything(store: ContextStore) -> None:
    await store.append_message(conversation_id="c", role="user", content="a", user_id="u")
    await store.append_message(conversation_id="keep", role="user", content="a", user_id="u")
    await store.bind("c").state.set("k", 1)
    await store.delete_conversation(conversation_id="c")
    assert await store.get_conversation(conversation_id="c") is None
    assert await store.bind("c").state.get("k") is None
    keys = [info.key for info in await store.blobs.list("")]
    assert keys and not any("/c/" in k or k.endswith("/c") for k in keys), keys
    listed = await store.list_conversations(user_id="u")
    assert [c.conversation_id for c in listed.items] == ["keep"]


async def test_list_conversations_by_recency_with_cursors(store: ContextStore) -> None:
    for i in range(7):
        await store.append_message(conversation_id=f"c{i}", role="user", content="x", user_id="u")
    await store.append_message(conversation_id="c2", role="user", content="again", user_id="u")
    order = ["c2", "c6", "c5", "c4", "c3", "c1", "c0"]
    first = await store.list_conversations(user_id="u", limit=3)
    assert [c.conversation_id for c in first.items] == order[:3]
    assert first.previous_cursor is None and first.next_cursor
    second = await store.list_conversations(user_id="u", limit=3, after=first.next_cursor)
    assert [c.conversation_id for c in second.items] == order[3:6]
    assert second.previous_cursor and second.next_cursor
    back = await store.list_conversations(user_id="u", limit=3, before=second.previous_cursor)
    assert back == first
    last = await store.list_conversations(user_id="u", limit=3, after=second.next_cursor)
    assert [c.conversation_id for c in last.items] == ["c0"] and last.next_cursor is None
    asc = await store.list_conversations(user_id="u", limit=10, order="asc")
    assert [c.conversation_id for c in asc.items] == order[::-1]
    assert (await store.list_conversations(user_id="nobody")).items == []


async def test_a_conversation_can_join_several_users(store: ContextStore) -> None:
    await store.append_message(conversation_id="c", role="user", content="a", user_id="u1")
    await store.append_message(conversation_id="c", role="user", content="b", user_id="u2")
    await store.append_message(conversation_id="c", role="user", content="c")
    for uid in ("u1", "u2"):
        items = (await store.list_conversations(user_id=uid)).items
        assert [(c.conversation_id, c.message_count) for c in items] == [("c", 3)]


ODD_IDS = [
    "a/b",
    "a%2Fb",
    "..",
    ".",
    "../c",
    "%",
    "x:y",
    "with space",
    "日本語",
    "🙂",
    "a" * 256,
    "c/../meta",
    "meta",
    "a/",
    "A",
    "i/all/1",
]


async def test_unusual_conversation_ids_are_isolated(store: ContextStore) -> None:
    for n, cid in enumerate(ODD_IDS):
        await store.append_message(conversation_id=cid, role="user", content=f"m{n}", user_id=cid)
        await store.bind(cid).state.set("k", n)
    for n, cid in enumerate(ODD_IDS):
        [message] = await store.get_messages(conversation_id=cid)
        assert message.content == f"m{n}"
        assert await store.bind(cid).state.get("k") == n
        meta = await store.get_conversation(conversation_id=cid)
        assert meta is not None and meta.conversation_id == cid and meta.message_count == 1
        assert [c.conversation_id for c in (await store.list_conversations(user_id=cid)).items] == [
            cid
        ]
    listed = await store.list_conversations(limit=100)
    assert sorted(c.conversation_id for c in listed.items) == sorted(ODD_IDS)
    await store.delete_conversation(conversation_id="a/b")
    assert await store.get_messages(conversation_id="a%2Fb") != []
    assert await store.get_messages(conversation_id="a/") != []


@pytest.mark.parametrize("cid", ["", "a" * 257, None, 5])
async def test_bad_conversation_ids_fail(store: ContextStore, cid: object) -> None:
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        await store.append_message(conversation_id=cid, role="user", content="x")  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        await store.get_messages(conversation_id=cid)  # type: ignore[arg-type]
    assert await store.blobs.list("") == []


async def _snapshot(store: ContextStore) -> list[tuple[str, bytes]]:
    out = []
    for info in await store.blobs.list(""):
        blob = await store.blobs.get(info.key)
        assert blob is not None
        out.append((info.key, blob.data))
    return out


BAD_CALLS = [
    ("role", {"role": "bot", "content": "x"}),
    ("content", {"role": "user", "content": 3}),
    ("content", {"role": "user", "content": {"x": float("nan")}}),
    ("content", {"role": "user", "content": [float("inf")]}),
    ("content", {"role": "user", "content": {1: "non-str key"}}),
    ("content", {"role": "user", "content": {"f": print}}),
    ("metadata", {"role": "user", "content": "x", "metadata": [1]}),
    ("metadata", {"role": "user", "content": "x", "metadata": {"a": {"b": float("nan")}}}),
    ("user_id", {"role": "user", "content": "x", "user_id": ""}),
    ("user_id", {"role": "user", "content": "x", "user_id": "u" * 257}),
]


@pytest.mark.parametrize(("argument", "kwargs"), BAD_CALLS)
async def test_bad_append_changes_nothing(
    store: ContextStore, argument: str, kwargs: dict[str, object]
) -> None:
    await store.append_message(conversation_id="c", role="user", content="keep", user_id="u")
    before = await _snapshot(store)
    with pytest.raises(MemoryValidationError, match=argument):
        await store.append_message(conversation_id="c", **kwargs)  # type: ignore[arg-type]
    assert await _snapshot(store) == before


async def test_cyclic_and_oversized_content_rejected(store: ContextStore) -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(MemoryValidationError, match="circular"):
        await store.append_message(conversation_id="c", role="user", content=cyclic)
    limit = 50 * 1024 * 1024
    exact = "x" * (limit - 2)  # two quote characters bring it to the limit
    await store.append_message(conversation_id="big", role="user", content=exact)
    with pytest.raises(MemoryValidationError, match="50 MB"):
        await store.append_message(conversation_id="big", role="user", content=exact + "y")
    with pytest.raises(
        MemoryValidationError, match="50 MB"
    ):  # multi-byte characters count as bytes
        await store.append_message(conversation_id="big", role="user", content="é" * (limit // 2))
    meta = await store.get_conversation(conversation_id="big")
    assert meta is not None and meta.message_count == 1


@pytest.mark.parametrize("limit", [0, 101, -1, True, 2.0])
async def test_limits_out_of_range(store: ContextStore, limit: object) -> None:
    with pytest.raises(MemoryValidationError, match="limit"):
        await store.get_messages(conversation_id="c", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="limit"):
        await store.list_conversations(limit=limit)  # type: ignore[arg-type]


async def test_cursor_rules(store: ContextStore) -> None:
    mid = await store.append_message(conversation_id="c", role="user", content="a")
    with pytest.raises(MemoryValidationError, match="mutually exclusive"):
        await store.get_messages(conversation_id="c", after=mid, before=mid)
    with pytest.raises(MemoryValidationError, match="after"):
        await store.get_messages(conversation_id="c", after="garbage")
    with pytest.raises(MemoryValidationError, match="before"):
        await store.list_conversations(before="garbage")
    with pytest.raises(MemoryValidationError, match="order"):
        await store.get_messages(conversation_id="c", order="up")


async def test_quota_of_ten_thousand_messages() -> None:
    async with makers_store.open_store("memory://") as store:
        for i in range(10_000):
            await store.append_message(conversation_id="c", role="user", content=str(i))
        before = await _snapshot(store)
        with pytest.raises(MemoryQuotaExceededError, match="maximum is 10000"):
            await store.append_message(conversation_id="c", role="user", content="one more")
        assert await _snapshot(store) == before
        [first] = await store.get_messages(conversation_id="c", limit=1)
        await store.delete_message(conversation_id="c", message_id=first.message_id)
        await store.append_message(conversation_id="c", role="user", content="fits again")
        meta = await store.get_conversation(conversation_id="c")
        assert meta is not None and meta.message_count == 10_000


async def test_state_rules(store: ContextStore) -> None:
    with pytest.raises(MemoryValidationError, match="bind"):
        store.state  # noqa: B018
    state = store.bind("c").state
    assert await state.get("missing") is None
    for value in [None, "s", True, 1, 1.5, [1, "a"], {"a": {"b": [None]}}]:
        await state.set("k", value)
        assert await state.get("k") == value
    await state.set("k", "kept")
    for bad in [float("nan"), float("inf"), {1: 2}, print, {"a": {1, 2}}]:
        with pytest.raises(MemoryValidationError, match="value"):
            await state.set("k", bad)
    assert await state.get("k") == "kept"
    for key in ["", "k" * 257]:
        with pytest.raises(MemoryValidationError, match="key"):
            await state.set(key, 1)
    await state.set("k" * 256, 1)
    await state.delete("k")
    await state.delete("k")
    assert await state.get("k") is None
    assert await state.items() == {"k" * 256: 1}
    assert await store.bind("other").state.get("k" * 256) is None


async def test_errors_share_one_root() -> None:
    for name in [
        "MemoryValidationError",
        "MemoryQuotaExceededError",
        "MemoryNotFoundError",
        "MemoryConflictError",
        "MemoryCorruptError",
    ]:
        assert issubclass(getattr(makers_store, name), StoreError)
    assert issubclass(MemoryValidationError, ValueError)
    assert not issubclass(StoreError, MemoryError)


async def test_store_closes_and_bound_stores_share_it(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    bound = store.bind("c")
    await bound.append_message(conversation_id="c", role="user", content="a")
    await bound.close()  # bound stores do not own the backend
    assert len(await store.get_messages(conversation_id="c")) == 1
    await store.close()
    await store.close()


async def test_merge_message_metadata_merges_in_one_unit(store: ContextStore) -> None:
    import asyncio

    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    mid = await store.append_message(
        "c1", "assistant", "", metadata={"tool_calls": [call], "drop": 1}
    )
    merged = await store.merge_message_metadata("c1", mid, patch={"rating": 5, "drop": None})
    assert merged.metadata == {"tool_calls": [call], "rating": 5}
    assert (await store.get_message("c1", mid)).metadata == merged.metadata  # type: ignore[union-attr]
    bound = store.bind("c1")
    assert (await bound.merge_message_metadata(mid, patch={"n": 0})).metadata["n"] == 0
    # merges at once all land: each is a read-modify-write in one unit
    await asyncio.gather(
        *(store.merge_message_metadata("c1", mid, patch={f"k{n}": n}) for n in range(8))
    )
    final = (await store.get_message("c1", mid)).metadata  # type: ignore[union-attr]
    assert {f"k{n}" for n in range(8)} <= set(final) and final["tool_calls"] == [call]
    with pytest.raises(MemoryValidationError, match="patch must be a dict"):
        await store.merge_message_metadata("c1", mid, patch=[1])  # type: ignore[arg-type]
    with pytest.raises(MemoryNotFoundError):
        await store.merge_message_metadata("c1", "msg_0000000099_zz", patch={"a": 1})
