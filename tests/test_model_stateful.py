"""Random sequences of every operation against a plain Python model, on every backend.

The model is the spec's semantics written the obvious way (lists and dicts).
After every step the store must agree with it on every read, including
pagination with ``after``/``before`` in both orders, walked in full. Messages
are appended with generated ids and with the caller's own (``message_id=``),
mixed, repeated (a retry, or a conflict) and used as cursors.
"""

from __future__ import annotations

import asyncio
import copy
import io
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import makers_store
from makers_store import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from makers_store._core.keys import id_segment
from makers_store.maintenance.exporting import export_jsonl
from makers_store.maintenance.importing import import_jsonl
from tests.backends import BACKENDS, backend_url

# The longest ids, of 4-byte characters, are cut in keys (keys.id_segment).
CIDS = st.sampled_from(["c1", "c2", "a/b", "..", "日本", "x" * 256, "%2F", "😀" * 256])
USERS = st.sampled_from(["u1", "u2", "u/3", "用" * 255 + "😀"])
KEYS = st.sampled_from(["k", "k/2", "ключ", "鍵" * 256])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)
CONTENT = (
    st.text(max_size=8)
    | st.lists(st.text(max_size=3), max_size=3)
    | st.dictionaries(st.text(max_size=3), JSON, max_size=3)
)
METADATA = st.none() | st.dictionaries(st.text(max_size=3), JSON, max_size=3)
#: the caller's message ids (None: generated), few so that they repeat
CLIENT_IDS = st.none() | st.sampled_from(["m1", "m/2", "ü", "web-" + "é" * 200, "😀" * 256])


@dataclass
class Msg:
    message_id: str
    role: str
    content: Any
    created_at: int
    metadata: Any
    updated_at: int | None = None
    #: its place in the conversation (what a generated id carries)
    seq: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = {
            "message_id": self.message_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at,
            "metadata": self.metadata,
        }
        if self.updated_at is not None:
            out["updated_at"] = self.updated_at
        return out


@dataclass
class Conv:
    created_at: int
    last_message_at: int
    #: when the model saw the last append (orders appends of one millisecond)
    last_write: int = 0
    messages: list[Msg] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    users: set[str] = field(default_factory=set)
    next_seq: int = 0
    #: the caller's ids and their seqs: kept when the message is deleted (a
    #: cursor still), dropped by clear, rebuilt by an import
    aliases: dict[str, int] = field(default_factory=dict)

    def as_dict(self, cid: str) -> dict[str, Any]:
        return {
            "conversation_id": cid,
            "created_at": self.created_at,
            "last_message_at": self.last_message_at,
            "message_count": len(self.messages),
            "metadata": self.metadata,
        }


def generated(message_id: str) -> bool:
    return message_id.startswith("msg_")


def position(message_id: str, conv: Conv) -> int | None:
    """A message id's place in conversation ``conv``: a generated id carries
    its sequence number (a cursor valid in any conversation, even deleted);
    a client id has the place it was appended at here, or none."""
    if generated(message_id):
        return int(message_id.split("_")[1])
    return conv.aliases.get(message_id)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


class StoreMachine(RuleBasedStateMachine):
    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="makers-model-"))
        self.loop = asyncio.new_event_loop()
        self.clock = Clock()
        self.store = makers_store.open_store(backend_url(self.kind, self.dir), clock=self.clock)
        self.convs: dict[str, Conv] = {}
        self.state: dict[str, dict[str, Any]] = {}
        self.seen_ids: list[str] = []  # ids of deleted messages too: cursors must keep working
        self.writes = 0
        self.backup: tuple[list[str], dict[str, Conv], dict[str, dict[str, Any]]] | None = None

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(ms=st.integers(0, 2))
    def tick(self, ms: int) -> None:
        self.clock.now += ms  # 0 makes ties in last_message_at

    # --- writes ----------------------------------------------------------

    @rule(
        cid=CIDS,
        role=st.sampled_from(["user", "assistant", "system", "tool"]),
        content=CONTENT,
        metadata=METADATA,
        user=st.none() | USERS,
        message_id=CLIENT_IDS,
        repeat=st.booleans(),
    )
    def append(
        self,
        cid: str,
        role: str,
        content: Any,
        metadata: Any,
        user: str | None,
        message_id: str | None,
        repeat: bool,
    ) -> None:
        held = self._held(cid, message_id)
        if repeat and held is not None:  # a retried request: the same message again
            role, content, metadata = held.role, held.content, held.metadata
        self._append_batch(cid, [(role, content, metadata, message_id)], user, batch=False)

    @rule(
        cid=CIDS,
        items=st.lists(
            st.tuples(
                st.sampled_from(["user", "assistant", "tool"]), CONTENT, METADATA, CLIENT_IDS
            ),
            max_size=3,
            unique_by=lambda item: item[3] or object(),
        ),
        user=st.none() | USERS,
    )
    def append_batch(
        self, cid: str, items: list[tuple[str, Any, Any, str | None]], user: str | None
    ) -> None:
        self._append_batch(cid, items, user, batch=True)

    def _held(self, cid: str, message_id: str | None) -> Msg | None:
        """The visible message that holds the caller's id ``message_id``."""
        messages = self.convs[cid].messages if cid in self.convs else []
        return next((m for m in messages if m.message_id == message_id), None)

    def _append_batch(
        self,
        cid: str,
        items: list[tuple[str, Any, Any, str | None]],
        user: str | None,
        *,
        batch: bool,
    ) -> None:
        # Each item that names a held id is a retry (equal data) or a conflict.
        fresh = []
        for index, (role, content, metadata, message_id) in enumerate(items):
            held = self._held(cid, message_id)
            if held is None:
                fresh.append(index)
            elif (held.role, held.content, held.metadata) != (role, content, metadata):
                if index > 0:
                    return  # earlier items would commit first on object storage: not modelled
                with pytest.raises(MemoryConflictError, match="already names another message"):
                    self._call_append(cid, items, user, batch=batch)
                return
        mids = self._call_append(cid, items, user, batch=batch)
        assert [mid for mid, item in zip(mids, items, strict=True) if item[3] is not None] == [
            item[3] for item in items if item[3] is not None
        ]
        if not fresh:
            return  # nothing new: nothing changes, not even the time
        now = self.clock.now
        conv = self.convs.setdefault(cid, Conv(created_at=now, last_message_at=now))
        conv.last_message_at = now
        self.writes += 1
        conv.last_write = self.writes
        if user is not None:
            conv.users.add(user)
        for index in fresh:
            role, content, metadata, message_id = items[index]
            mid, seq = mids[index], conv.next_seq
            conv.next_seq += 1
            conv.messages.append(Msg(mid, role, content, now, metadata, seq=seq))
            if message_id is None:
                assert int(mid.split("_")[1]) == seq and mid not in self.seen_ids
            else:
                conv.aliases[mid] = seq
            self.seen_ids.append(mid)

    def _call_append(
        self,
        cid: str,
        items: list[tuple[str, Any, Any, str | None]],
        user: str | None,
        *,
        batch: bool,
    ) -> list[str]:
        if batch:
            return list(
                self.run(
                    self.store.append_messages(
                        conversation_id=cid,
                        messages=[
                            {"role": role, "content": content, "metadata": metadata}
                            | ({} if message_id is None else {"message_id": message_id})
                            for role, content, metadata, message_id in items
                        ],
                        user_id=user,
                    )
                )
            )
        [(role, content, metadata, message_id)] = items
        return [
            self.run(
                self.store.append_message(
                    conversation_id=cid,
                    role=role,
                    content=content,
                    metadata=metadata,
                    user_id=user,
                    message_id=message_id,
                )
            )
        ]

    def _pick(self, cid: str, index: int) -> str:
        messages = self.convs[cid].messages if cid in self.convs else []
        if messages and index >= 0:
            return messages[index % len(messages)].message_id
        return self.seen_ids[index % len(self.seen_ids)] if self.seen_ids else "msg_0000000000_zz"

    @rule(
        cid=CIDS,
        index=st.integers(-3, 20),
        content=st.none() | CONTENT,
        metadata=st.sampled_from(["keep"]) | METADATA,
    )
    def update_message(self, cid: str, index: int, content: Any, metadata: Any) -> None:
        mid = self._pick(cid, index)
        target = next(
            (m for m in self.convs.get(cid, Conv(0, 0)).messages if m.message_id == mid), None
        )
        kwargs: dict[str, Any] = {}
        if content is not None:
            kwargs["content"] = content
        if metadata != "keep":
            kwargs["metadata"] = metadata
        if target is None:
            with pytest.raises(MemoryNotFoundError):
                self.run(self.store.update_message(conversation_id=cid, message_id=mid, **kwargs))
            return
        got = self.run(self.store.update_message(conversation_id=cid, message_id=mid, **kwargs))
        target.content = kwargs.get("content", target.content)
        target.metadata = kwargs.get("metadata", target.metadata)
        target.updated_at = self.clock.now
        assert got.to_dict() == target.as_dict()

    @rule(cid=CIDS, index=st.integers(-3, 20))
    def delete_message(self, cid: str, index: int) -> None:
        mid = self._pick(cid, index)
        messages = self.convs.get(cid, Conv(0, 0)).messages
        target = next((m for m in messages if m.message_id == mid), None)
        if target is None:
            with pytest.raises(MemoryNotFoundError):
                self.run(self.store.delete_message(conversation_id=cid, message_id=mid))
            return
        self.run(self.store.delete_message(conversation_id=cid, message_id=mid))
        messages.remove(target)

    @rule(cid=CIDS)
    def clear(self, cid: str) -> None:
        self.run(self.store.clear_messages(conversation_id=cid))
        if cid in self.convs:
            self.convs[cid].messages.clear()
            self.convs[cid].aliases.clear()

    @rule(
        cid=CIDS,
        patch=st.dictionaries(st.sampled_from(["title", "tag", "n"]), st.none() | JSON, max_size=3),
    )
    def update_conversation(self, cid: str, patch: dict[str, Any]) -> None:
        if cid not in self.convs:
            with pytest.raises(MemoryNotFoundError):
                self.run(self.store.update_conversation(conversation_id=cid, metadata=patch))
            return
        got = self.run(self.store.update_conversation(conversation_id=cid, metadata=patch))
        meta = self.convs[cid].metadata
        for key, value in patch.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        assert got.to_dict() == self.convs[cid].as_dict(cid)

    @rule(cid=CIDS)
    def delete_conversation(self, cid: str) -> None:
        self.run(self.store.delete_conversation(conversation_id=cid))
        self.convs.pop(cid, None)
        self.state.pop(cid, None)

    @rule(cid=CIDS, key=KEYS, value=JSON)
    def state_set(self, cid: str, key: str, value: Any) -> None:
        self.run(self.store.bind(cid).state.set(key, value))
        self.state.setdefault(cid, {})[key] = value

    @rule(cid=CIDS, key=KEYS)
    def state_delete(self, cid: str, key: str) -> None:
        self.run(self.store.bind(cid).state.delete(key))
        self.state.get(cid, {}).pop(key, None)

    # --- backups: export, then import later ---------------------------------

    @rule()
    def back_up(self) -> None:
        out = io.StringIO()
        self.run(export_jsonl(self.store.runner, out.write))
        cids = set(self.convs) | {cid for cid, items in self.state.items() if items}
        self.backup = (
            out.getvalue().splitlines(keepends=True),
            {cid: copy.deepcopy(self.convs[cid]) for cid in cids if cid in self.convs},
            {cid: dict(self.state.get(cid, {})) for cid in cids},
        )

    @rule()
    def restore(self) -> None:
        """Each conversation of the backup replaces the current one; others stay."""
        if self.backup is None:
            return
        lines, convs, state = self.backup
        self.run(import_jsonl(self.store.runner, lambda: lines))
        for cid in state:
            if cid in convs:
                # an import gives the conversation back as it was exported: its
                # messages where they were, its next seq and the aliases of
                # deleted caller ids too, so no seq is handed out twice (issue 35)
                self.convs[cid] = copy.deepcopy(convs[cid])
            else:
                self.convs.pop(cid, None)
            self.state[cid] = dict(state[cid])

    # --- reads -----------------------------------------------------------

    @rule(cid=CIDS, key=KEYS)
    def state_get(self, cid: str, key: str) -> None:
        assert self.run(self.store.bind(cid).state.get(key)) == self.state.get(cid, {}).get(key)

    @rule(
        cid=CIDS,
        limit=st.integers(1, 4),
        order=st.sampled_from(["asc", "desc"]),
        cursor=st.sampled_from([None, "after", "before"]),
        index=st.integers(0, 30),
    )
    def get_messages(
        self, cid: str, limit: int, order: str, cursor: str | None, index: int
    ) -> None:
        kwargs: dict[str, Any] = {}
        conv = self.convs.get(cid)
        expected = list(conv.messages) if conv is not None else []
        if cursor is not None and self.seen_ids:
            mid = self.seen_ids[index % len(self.seen_ids)]
            kwargs[cursor] = mid
            at = None if conv is None else position(mid, conv)
            if conv is not None and at is None:  # a client id never appended here
                with pytest.raises(MemoryValidationError, match=f"{cursor} must be the id"):
                    self.run(
                        self.store.get_messages(
                            conversation_id=cid, limit=limit, order=order, **kwargs
                        )
                    )
                return
            # The page next to the cursor, on the side the cursor names.
            if at is None:
                expected = []
            elif (cursor == "after") == (order == "asc"):
                window = [m for m in expected if m.seq > at]
                expected = window[:limit]
            else:
                window = [m for m in expected if m.seq < at]
                expected = window[-limit:]
        else:
            expected = expected[:limit] if order == "asc" else expected[-limit:]
        if order == "desc":
            expected = sorted(expected, key=lambda m: m.seq, reverse=True)
        got = self.run(
            self.store.get_messages(conversation_id=cid, limit=limit, order=order, **kwargs)
        )
        assert [m.to_dict() for m in got] == [m.as_dict() for m in expected]

    @rule(limit=st.integers(1, 3), order=st.sampled_from(["asc", "desc"]), user=st.none() | USERS)
    def walk_conversations(self, limit: int, order: str, user: str | None) -> None:
        # Newest first, in one millisecond the last written first (issue 12,
        # item 26); "asc" is the exact reverse.
        rows = [
            (-c.last_message_at, -c.last_write, id_segment(cid), cid)
            for cid, c in self.convs.items()
            if user is None or user in c.users
        ]
        rows.sort(reverse=order == "asc")
        expected = [self.convs[cid].as_dict(cid) for *_, cid in rows]
        pages = []
        page = self.run(self.store.list_conversations(limit=limit, order=order, user_id=user))
        while True:
            pages.append(page)
            if page.next_cursor is None:
                break
            page = self.run(
                self.store.list_conversations(
                    limit=limit, order=order, user_id=user, after=page.next_cursor
                )
            )
        walked = [c.to_dict() for p in pages for c in p.items]
        assert walked == expected
        assert pages[0].previous_cursor is None
        for i, p in enumerate(pages):
            if p.items:
                assert (p.previous_cursor is not None) == (i > 0)
        # and back again with `before`, from the last page
        back = pages[-1]
        collected = [c.to_dict() for c in back.items]
        while back.previous_cursor is not None:
            back = self.run(
                self.store.list_conversations(
                    limit=limit, order=order, user_id=user, before=back.previous_cursor
                )
            )
            assert len(back.items) == limit
            collected = [c.to_dict() for c in back.items] + collected
        assert collected == expected

    @invariant()
    def conversations_agree(self) -> None:
        for cid in ["c1", "a/b", "日本", "😀" * 256]:
            got = self.run(self.store.get_conversation(conversation_id=cid))
            expected = self.convs[cid].as_dict(cid) if cid in self.convs else None
            assert (got.to_dict() if got else None) == expected


@pytest.mark.parametrize("kind", BACKENDS)
def test_store_matches_model(kind: str) -> None:
    machine = type(f"StoreMachine_{kind}", (StoreMachine,), {"kind": kind})
    runner = machine.TestCase
    runner.settings = settings(
        # fewer examples where each step is a round trip to a server
        max_examples={"sqlite": 100, "postgres": 40, "s3": 8}.get(kind, 200),
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    runner().runTest()
