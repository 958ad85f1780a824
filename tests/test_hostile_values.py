"""Hostile values: whatever the store accepts it can read back, export and
import again; whatever it cannot, it refuses with MemoryValidationError
naming the argument, before anything is written, on every backend.

Issue 12, items 1a (a backup that cannot be restored), 3 (nesting), 4
(imported ids and sequences), 5 (lone surrogates), 5a (size caps) and 6
(import records that name other conversations' keys).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import makers_store
from makers_store._core import codec, validate
from makers_store.clock import FixedClock, counting_suffixes
from makers_store.errors import MemoryCorruptError, MemoryValidationError
from makers_store.maintenance.exporting import export_jsonl
from makers_store.maintenance.importing import MAX_IMPORTED_SEQ, import_jsonl

HEADER = '{"type":"header","format":"makers-store-export","version":1}'


def nested(levels: int) -> Any:
    """A value of ``levels`` levels of lists and dicts, alternating."""
    value: Any = "leaf"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


async def raw(store: makers_store.ContextStore) -> dict[str, bytes]:
    """Every blob of the store, key to bytes."""
    out = {}
    for info in await store.blobs.list():
        blob = await store.blobs.get(info.key)
        assert blob is not None
        out[info.key] = blob.data
    return out


async def export_text(store: makers_store.ContextStore) -> str:
    lines: list[str] = []
    await export_jsonl(store.runner, lines.append)
    return "".join(lines)


async def import_text(store: makers_store.ContextStore, text: str) -> None:
    await import_jsonl(store.runner, lambda: text.splitlines(keepends=True))


async def refused(
    store: makers_store.ContextStore, call: Callable[[], Awaitable[object]], *names: str
) -> str:
    """Run ``call``, which must raise MemoryValidationError whose message names
    each of ``names``, and leave every blob as it was."""
    before = await raw(store)
    with pytest.raises(MemoryValidationError) as caught:
        await call()
    message = str(caught.value)
    for name in names:
        assert name in message, message
    message.encode("utf-8")  # the message itself can be printed
    assert await raw(store) == before
    return message


def say(
    store: makers_store.ContextStore,
    cid: str,
    content: Any,
    metadata: dict[str, Any] | None = None,
    user_id: str | None = None,
) -> Awaitable[str]:
    return store.append_message(
        conversation_id=cid, role="user", content=content, metadata=metadata, user_id=user_id
    )


async def seeded(store: makers_store.ContextStore) -> str:
    mid = await store.append_message(conversation_id="c", role="user", content="hi")
    await store.bind("c").state.set("k", 1)
    return mid


# --- 3: nesting ---------------------------------------------------------------


async def test_values_at_the_nesting_limit_are_kept(store: makers_store.ContextStore) -> None:
    deepest = nested(codec.MAX_NESTING)
    mid = await store.append_message(
        conversation_id="c", role="user", content=deepest, metadata={"m": nested(98)}
    )
    await store.bind("c").state.set("deep", deepest)
    await store.update_conversation(conversation_id="c", metadata={"t": nested(99)})
    [message] = await store.get_messages(conversation_id="c")
    assert (message.message_id, message.content) == (mid, deepest)
    assert await store.bind("c").state.items() == {"deep": deepest}
    fresh = makers_store.open_store("memory://")
    await import_text(fresh, await export_text(store))
    assert await export_text(fresh) == await export_text(store)


async def test_values_nested_too_deeply_are_refused(store: makers_store.ContextStore) -> None:
    mid = await seeded(store)
    deep = nested(codec.MAX_NESTING + 1)
    limit = f"at most {codec.MAX_NESTING} levels"
    state = store.bind("c").state
    await refused(
        store,
        lambda: store.append_message(conversation_id="c", role="user", content=deep),
        "content",
        limit,
    )
    await refused(
        store,
        lambda: store.append_message(
            conversation_id="c", role="user", content="x", metadata={"m": nested(100)}
        ),
        "metadata",
        limit,
    )
    await refused(
        store,
        lambda: store.update_message(conversation_id="c", message_id=mid, content=deep),
        "content",
    )
    await refused(store, lambda: state.set("k", deep), "value", limit)
    await refused(store, lambda: state.set("k", nested(5000)), "value", limit)
    await refused(
        store,
        lambda: store.update_conversation(conversation_id="c", metadata={"t": nested(100)}),
        "metadata",
        limit,
    )
    assert await state.get("k") == 1


def test_values_at_the_limit_decode_from_a_deep_call_stack() -> None:
    """Records wrap a value in more levels; the limit leaves room for them
    and for a caller already deep in its own stack."""
    content = codec.encode_json(nested(codec.MAX_NESTING), argument="content")
    metadata = codec.encode_json({"m": nested(99)}, argument="metadata")
    record = codec.encode_message(
        message_id="msg_0000000000_a",
        role="user",
        content_json=content,
        created_at=1,
        metadata_json=metadata,
    )

    def descend(frames: int) -> list[makers_store.Message]:
        return descend(frames - 1) if frames else codec.decode_messages([record, record])

    depth = sys.getrecursionlimit() - 250
    assert descend(depth)[1].content == nested(codec.MAX_NESTING)


async def test_stored_values_too_deep_to_decode_are_corrupt_not_a_crash(
    store: makers_store.ContextStore,
) -> None:
    """Data written by an older version, before the limit, reads as corrupt."""
    await seeded(store)
    bomb = b"[" * 50_000 + b"]" * 50_000
    from makers_store._core import keys

    await store.blobs.put(keys.state_key("c", "old"), bomb)
    with pytest.raises(MemoryCorruptError, match="nested too deeply"):
        await store.bind("c").state.get("old")
    with pytest.raises(MemoryCorruptError, match="nested too deeply"):
        await store.bind("c").state.items()
    await store.blobs.put(keys.message_key("c", 0), b"[1," + bomb + b"]")
    with pytest.raises(MemoryCorruptError, match="nested too deeply"):
        await store.get_messages(conversation_id="c")


async def test_import_refuses_deep_values_naming_the_line(
    store: makers_store.ContextStore,
) -> None:
    await seeded(store)
    deep = json.dumps(nested(codec.MAX_NESTING + 1))
    conversation = (
        '{"type":"conversation","conversation_id":"n","created_at":1,"last_message_at":1,'
        '"metadata":{},"user_ids":[]}'
    )
    message = (
        '{"type":"message","conversation_id":"n","message_id":"msg_0000000000_a",'
        f'"role":"user","created_at":1,"metadata":null,"content":{deep}}}'
    )
    await refused(
        store,
        lambda: import_text(store, f"{HEADER}\n{conversation}\n{message}\n"),
        "line 3",
        "content",
        "levels",
    )
    bomb = '{"type":"state","conversation_id":"n","key":"k","value":' + "[" * 50_000
    await refused(store, lambda: import_text(store, f"{HEADER}\n{bomb}\n"), "line 2", "deeply")


# --- 5: lone surrogates ---------------------------------------------------------

LONE = "x\ud800"


def surrogate_calls(
    store: makers_store.ContextStore, mid: str
) -> list[tuple[str, Callable[[], Awaitable[object]]]]:
    state = store.bind("c").state
    return [
        ("conversation_id", lambda: say(store, LONE, "hi")),
        ("user_id", lambda: say(store, "c", "hi", user_id=LONE)),
        ("content", lambda: say(store, "c", LONE)),
        ("content", lambda: say(store, "c", [{"text": LONE}])),
        ("metadata", lambda: say(store, "c", "hi", {LONE: 1})),
        ("metadata", lambda: say(store, "c", "hi", {"k": [LONE]})),
        (
            "content",
            lambda: store.update_message(conversation_id="c", message_id=mid, content=LONE),
        ),
        (
            "metadata",
            lambda: store.update_message(conversation_id="c", message_id=mid, metadata={"k": LONE}),
        ),
        ("metadata", lambda: store.update_conversation(conversation_id="c", metadata={LONE: 1})),
        ("key", lambda: state.set(LONE, 1)),
        ("value", lambda: state.set("k", {"a": LONE})),
        ("key", lambda: state.delete(LONE)),
        (
            "messages[1]",
            lambda: store.append_messages(
                conversation_id="c",
                messages=[{"role": "user", "content": "ok"}, {"role": "user", "content": LONE}],
            ),
        ),
        ("conversation_id", lambda: store.get_conversation(conversation_id=LONE)),
        ("user_id", lambda: store.list_conversations(user_id=LONE)),
    ]


async def test_lone_surrogates_are_refused_before_any_write(
    store: makers_store.ContextStore,
) -> None:
    """Not UnicodeEncodeError, and on object storage no message blob or index
    entry is left behind by the refused call."""
    mid = await seeded(store)
    for argument, call in surrogate_calls(store, mid):
        message = await refused(store, call, argument)
        assert "lone surrogate" in message
    with pytest.raises(MemoryValidationError, match="conversation_id"):
        store.bind(LONE)


def test_every_surrogate_is_found() -> None:
    for text in ("\ud800", "\udfff", "a\udc80b", "ü\udbff", "\U0010ffff\ud800"):
        with pytest.raises(MemoryValidationError, match="lone surrogate"):
            codec.encode_json({"k": ["ok", text]}, argument="value")
        with pytest.raises(MemoryValidationError, match="lone surrogate"):
            validate.identifier(text, "key")
    for text in ("\U0010ffff", "\ud7ff\ue000", "日本語", "\x00"):
        codec.encode_json(text, argument="value")


# --- 5a: size caps -----------------------------------------------------------------


async def test_message_metadata_is_capped(store: makers_store.ContextStore) -> None:
    mid = await seeded(store)
    cap = validate.MAX_MESSAGE_METADATA_BYTES
    too_big = {"k": "x" * cap}
    await refused(store, lambda: say(store, "c", "x", too_big), "metadata", "1 MB", str(cap))
    await refused(
        store,
        lambda: store.update_message(conversation_id="c", message_id=mid, metadata=too_big),
        "metadata",
    )
    fits = {"k": "x" * (cap - 10)}  # {"k":"..."} adds 8 bytes
    await say(store, "c", "x", fits)
    assert (await store.get_messages(conversation_id="c"))[-1].metadata == fits


async def test_conversation_metadata_is_capped_after_the_merge(
    store: makers_store.ContextStore,
) -> None:
    await seeded(store)
    cap = validate.MAX_CONVERSATION_METADATA_BYTES
    too_big = {"k": "x" * cap}
    await refused(
        store,
        lambda: store.update_conversation(conversation_id="c", metadata=too_big),
        "metadata",
        "256 KB",
    )
    half = "x" * (cap // 2)
    await store.update_conversation(conversation_id="c", metadata={"a": half})
    message = await refused(
        store,
        lambda: store.update_conversation(conversation_id="c", metadata={"b": half}),
        "merged",
    )
    assert str(cap) in message
    swapped = {"a": None, "b": half}  # a swap still fits
    await store.update_conversation(conversation_id="c", metadata=swapped)
    meta = await store.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata == {"b": half}


async def test_oversized_metadata_stored_before_the_cap_may_shrink(
    store: makers_store.ContextStore,
) -> None:
    from makers_store._core import keys

    await seeded(store)
    blob = await store.blobs.get(keys.meta_key("c"))
    assert blob is not None
    record = codec.ConversationRecord.decode(blob.data)
    record.metadata = {"a": "x" * validate.MAX_CONVERSATION_METADATA_BYTES, "b": "y" * 1000}
    await store.blobs.put(keys.meta_key("c"), record.encode())
    await refused(
        store, lambda: store.update_conversation(conversation_id="c", metadata={"c": 1}), "metadata"
    )
    meta = await store.update_conversation(conversation_id="c", metadata={"b": None})
    assert set(meta.metadata) == {"a"}


@pytest.mark.slow
async def test_state_values_are_capped_like_content() -> None:
    """Checked before the backend is reached, so one backend proves it."""
    async with makers_store.open_store("memory://") as store:
        await seeded(store)
        value = "x" * codec.MAX_VALUE_BYTES  # plus its two quotes
        await refused(store, lambda: store.bind("c").state.set("k", value), "value", "50 MB")
        await refused(store, lambda: say(store, "c", value), "content")
        await store.bind("c").state.set("k", value[:-2])
        assert len(await store.bind("c").state.get("k")) == codec.MAX_VALUE_BYTES - 2


# --- 4: imported ids and sequences --------------------------------------------------


def conversation_line(cid: str = "n", **fields: Any) -> str:
    record = {
        "type": "conversation",
        "conversation_id": cid,
        "created_at": 1,
        "last_message_at": 1,
        "metadata": {},
        "user_ids": [],
        **fields,
    }
    return json.dumps(record)


def message_line(mid: str, cid: str = "n", **fields: Any) -> str:
    record = {
        "type": "message",
        "conversation_id": cid,
        "message_id": mid,
        "role": "user",
        "content": "hi",
        "created_at": 1,
        "metadata": None,
        **fields,
    }
    return json.dumps(record)


@pytest.mark.parametrize(
    ("lines", "named"),
    [
        ([message_line("msg_9999999999_x")], "sequence 9999999999"),
        ([message_line(f"msg_{MAX_IMPORTED_SEQ + 1:010d}_x")], "sequence"),
        ([message_line("msg_12_x")], "msg_<seq>_<suffix>"),
        ([message_line("msg_0000000001_X")], "msg_<seq>_<suffix>"),
        ([message_line("msg_0000000001_x", created_at=10**15)], "created_at"),
        ([message_line("msg_0000000001_x", created_at=-1)], "created_at"),
        ([message_line("msg_0000000001_x", updated_at=2**70)], "updated_at"),
        ([message_line("msg_0000000001_x", metadata={"k": "x" * 2**20})], "metadata"),
    ],
)
async def test_import_refuses_ids_and_sequences_later_calls_would_break_on(
    store: makers_store.ContextStore, lines: list[str], named: str
) -> None:
    await seeded(store)
    text = "\n".join([HEADER, conversation_line(), *lines]) + "\n"
    await refused(store, lambda: import_text(store, text), "line 3", named)


async def test_import_refuses_bad_conversation_fields(store: makers_store.ContextStore) -> None:
    await seeded(store)
    for line, named in [
        (conversation_line(last_message_at=10**16), "last_message_at"),
        (conversation_line(metadata={"k": "x" * 2**18}), "metadata"),
        (conversation_line(user_ids=[LONE]), "user_ids"),
        (conversation_line(cid=LONE), "conversation_id"),
    ]:
        text = f"{HEADER}\n{line}\n"
        await refused(store, lambda text=text: import_text(store, text), "line 2", named)


async def test_the_highest_imported_sequence_still_appends(
    store: makers_store.ContextStore,
) -> None:
    top = f"msg_{MAX_IMPORTED_SEQ:010d}_x"
    await import_text(store, "\n".join([HEADER, conversation_line(), message_line(top)]) + "\n")
    mid = await say(store, "n", "after")
    assert [m.message_id for m in await store.get_messages(conversation_id="n")] == [top, mid]
    assert (await store.get_messages(conversation_id="n", after=top))[0].message_id == mid


# --- 6: import records naming other conversations' keys -----------------------------

ATTACK_PATHS = [
    "x/../c/victim/meta",
    "../../victim/meta",
    "../../../c/victim/m/0000000000",
    "../../../../c/victim/s/k",
    "/../../c/victim/meta",
    "%2F..%2Fvictim/meta",
]
ATTACK_KEYS = ["../c/victim/meta", "./c/victim/meta", "x/../c/victim/meta", "/c/victim/meta"]


def adapter_line(cid: str, path: str) -> str:
    record = {"type": "adapter", "conversation_id": cid, "path": path, "data_base64": "AAE="}
    return json.dumps(record)


async def test_import_records_never_reach_another_conversation(
    store: makers_store.ContextStore,
) -> None:
    await say(store, "victim", "mine", user_id="u")
    await store.bind("victim").state.set("k", "mine")
    victim_keys = {key: data for key, data in (await raw(store)).items() if "victim" in key}
    attackers = ["x", "x/..", "../victim", "victim/..", "victim/../victim2"]
    lines = [HEADER]
    for cid in attackers:
        lines.append(conversation_line(cid))
        lines.append(message_line("msg_0000000000_a", cid, content="attack"))
        lines.append(json.dumps({"type": "state", "conversation_id": cid, "key": "k", "value": 0}))
        lines.extend(adapter_line(cid, path) for path in ATTACK_PATHS)
    for key in ATTACK_KEYS:
        lines.append(json.dumps({"type": "blob", "key": key, "data_base64": "AAE="}))
    await import_text(store, "\n".join(lines) + "\n")

    after = await raw(store)
    assert {key: data for key, data in after.items() if key in victim_keys} == victim_keys
    [message] = await store.get_messages(conversation_id="victim")
    assert message.content == "mine"
    assert await store.bind("victim").state.items() == {"k": "mine"}
    meta = await store.get_conversation(conversation_id="victim")
    assert meta is not None and meta.message_count == 1
    for key in ATTACK_KEYS:  # kept literally, outside every conversation
        assert after[key] == b"\x00\x01"
    exported = [json.loads(line) for line in (await export_text(store)).splitlines()]
    paths = {(r["conversation_id"], r["path"]) for r in exported if r["type"] == "adapter"}
    assert paths == {(cid, path) for cid in attackers for path in ATTACK_PATHS}
    # and importing them into the victim's own id replaces only the victim
    await import_text(store, "\n".join([HEADER, conversation_line("victim")]) + "\n")
    assert await store.get_messages(conversation_id="x") != []


async def test_import_refuses_keys_no_backend_can_hold(store: makers_store.ContextStore) -> None:
    await seeded(store)
    for record, named in [
        ({"type": "blob", "key": "c/victim/meta"}, "inside conversations"),
        ({"type": "blob", "key": "i/all/x"}, "inside conversations"),
        ({"type": "blob", "key": "a\x00b"}, "control character"),
        ({"type": "blob", "key": "a\ud800"}, "lone surrogate"),
        ({"type": "blob", "key": "k" * 1025}, "1024 bytes"),
        ({"type": "adapter", "conversation_id": "c", "path": "a b"}, "printable ASCII"),
        ({"type": "adapter", "conversation_id": "c", "path": "ü"}, "printable ASCII"),
        ({"type": "adapter", "conversation_id": "c", "path": ""}, "printable ASCII"),
    ]:
        text = HEADER + "\n" + json.dumps({**record, "data_base64": ""}) + "\n"
        await refused(store, lambda text=text: import_text(store, text), "line 2", named)


# --- 1a: a backup that cannot be restored ---------------------------------------------


async def test_hostile_corpus_round_trips(store: makers_store.ContextStore) -> None:
    """What the API accepts, export writes as UTF-8 and import restores exactly."""
    hostile = ["[/x]", "[red]T[/red]", "\x00\x1b]0;t\x07", "\u2028\u2029", "\U0010ffff", "%41"]
    hostile += ["../..", "ü" * 60, "a\\ud800", '"\\', "\ufeff", "\r\n"]
    for n, text in enumerate(hostile):
        await say(store, text, {text: [text, nested(20)]}, {text: text}, user_id=text)
        await store.bind(text).state.set(text, {"v": text, "n": n})
        await store.update_conversation(conversation_id=text, metadata={text: nested(99)})
    text = await export_text(store)
    text.encode("utf-8")
    fresh = makers_store.open_store("memory://")
    await import_text(fresh, text)
    assert await export_text(fresh) == text
    for cid in hostile:
        assert await fresh.get_conversation(conversation_id=cid) == await store.get_conversation(
            conversation_id=cid
        )
        assert await fresh.get_messages(conversation_id=cid) == await store.get_messages(
            conversation_id=cid
        )
        assert await fresh.bind(cid).state.items() == await store.bind(cid).state.items()


async def test_export_of_a_surrogate_stored_before_it_was_refused_is_utf8_and_named() -> None:
    from makers_store._core import keys

    async with makers_store.open_store("memory://") as store:
        await store.bind("c").state.set("ok", 1)
        await store.blobs.put(keys.state_key("c", "k\ud800"), b"1")  # an older version's
        text = await export_text(store)
        text.encode("utf-8")
        assert "\\ud800" in text
        fresh = makers_store.open_store("memory://")
        with pytest.raises(MemoryValidationError, match=r"line \d+: .*lone surrogate"):
            await import_text(fresh, text)
        assert await raw(fresh) == {}


def makers_store_cli(
    *args: str | bytes, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real executable, as a user runs it."""
    executable = Path(sys.executable).with_name("makers-store")
    env = {**os.environ, "MAKERS_STORE_DEBUG": ""}
    return subprocess.run(
        [executable, *args], input=stdin, capture_output=True, env=env, timeout=60, check=False
    )


async def read_back(url: str, cid: str) -> dict[str, Any]:
    async with makers_store.open_store(url) as store:
        meta = await store.get_conversation(conversation_id=cid)
        messages = await store.get_messages(conversation_id=cid)
        return {
            "meta": None if meta is None else meta.to_dict(),
            "messages": [m.to_dict() for m in messages],
            "state": await store.bind(cid).state.items(),
        }


@pytest.mark.slow
def test_the_cli_refuses_hostile_values_and_imports(tmp_path: Path) -> None:
    """Through the executable: a usage error (exit 2) naming the argument or
    the line, the stored data unchanged."""
    url = f"sqlite:///{tmp_path}/s.db"
    assert makers_store_cli("--store", url, "state", "set", "c", "k", "1").returncode == 0
    before = asyncio.run(read_back(url, "c"))
    deep = json.dumps(nested(codec.MAX_NESTING + 1))
    bad_import = "\n".join([HEADER, conversation_line("c"), message_line("msg_9999999999_x", "c")])
    attempts = [
        (("state", "set", "c", "k", deep), None, "levels"),
        (("state", "set", "c", "k", '"\\ud800"'), None, "lone surrogate"),
        (("import", "-"), bad_import.encode(), "line 3"),
    ]
    for args, stdin, named in attempts:
        run = makers_store_cli("--store", url, *args, stdin=stdin)
        assert run.returncode == 2, run
        assert named in run.stderr.decode(), run.stderr
        assert b"unexpected" not in run.stderr and b"Traceback" not in run.stderr
        assert asyncio.run(read_back(url, "c")) == before


@pytest.mark.slow
def test_the_cli_refuses_a_state_key_that_is_not_utf8(tmp_path: Path) -> None:
    """``makers-store state set c $'k\\xed\\xa0\\x80' 1``: refused, nothing stored."""
    url = f"sqlite:///{tmp_path}/s.db"
    run = makers_store_cli("--store", url, "state", "set", "c", b"k\xed\xa0\x80", "1")
    assert run.returncode == 2, run
    assert b"unexpected" not in run.stderr and b"Traceback" not in run.stderr
    if (tmp_path / "s.db").exists():  # a refused write need not create the store
        assert asyncio.run(read_back(url, "c"))["state"] == {}


# --- 1a: the property -------------------------------------------------------------------


def _hypothesis_test() -> Callable[[], None]:
    texts = st.one_of(
        st.text(st.characters(exclude_categories=()), max_size=12),
        st.sampled_from([LONE, "\udc80", "[/x]", "../", "%2F", "\x00", "ü" * 257, ""]),
    )
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), texts)
    values = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
        max_leaves=12,
    )
    depths = st.integers(min_value=codec.MAX_NESTING - 2, max_value=990)
    operation = st.one_of(
        st.tuples(st.just("append"), texts, values, values, st.one_of(st.none(), texts)),
        st.tuples(st.just("state"), texts, texts, values),
        st.tuples(st.just("meta"), texts, values),
        st.tuples(st.just("deep"), texts, depths),
    )

    async def apply(store: makers_store.ContextStore, op: tuple[Any, ...]) -> None:
        kind, cid, *rest = op
        if kind == "append":
            content, metadata, uid = rest
            await store.append_message(
                conversation_id=cid, role="user", content=content, metadata=metadata, user_id=uid
            )
        elif kind == "state":
            await store.bind(cid).state.set(rest[0], rest[1])
        elif kind == "meta":
            await store.append_message(conversation_id=cid, role="user", content="m")
            await store.update_conversation(conversation_id=cid, metadata={"k": rest[0]})
        else:
            await store.bind(cid).state.set("deep", nested(rest[0]))

    async def round_trip(ops: list[tuple[Any, ...]]) -> None:
        source = makers_store.open_store("memory://", clock=FixedClock(), ids=counting_suffixes())
        for op in ops:
            try:
                await apply(source, op)
            except MemoryValidationError as exc:
                str(exc).encode("utf-8")
        text = await export_text(source)
        text.encode("utf-8")
        fresh = makers_store.open_store("memory://")
        await import_text(fresh, text)
        assert await export_text(fresh) == text

    @settings(
        max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "150")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.lists(operation, max_size=6))
    def test(ops: list[tuple[Any, ...]]) -> None:
        asyncio.run(round_trip(ops))

    return test


test_anything_accepted_exports_and_imports_back = pytest.mark.slow(_hypothesis_test())
