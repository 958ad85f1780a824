"""``to_dict()`` of every result object keeps its shape: the keys, their order
and the omit rules the CLI's ``--json`` output and the Node bridge read (all
made by ``models.fields_dict``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from makers_store import (
    ConversationMeta,
    CopyReport,
    IndexCheck,
    IndexDrift,
    IndexEntry,
    ListConversationsResult,
    Message,
    RebuildSummary,
    StoreCounts,
    TransferCounts,
)

META = ConversationMeta("c", 1, 2, 3, {"t": "x"})
DRIFT = IndexDrift("missing", "k", "c", None, "r")

CASES: list[tuple[Any, str]] = [
    (
        Message("m", "user", {"a": [1]}, 5),
        '{"message_id": "m", "role": "user", "content": {"a": [1]}, "created_at": 5,'
        ' "metadata": null}',
    ),
    (
        Message("m", "user", [1, "x"], 5, {"k": None}, 7),
        '{"message_id": "m", "role": "user", "content": [1, "x"], "created_at": 5,'
        ' "metadata": {"k": null}, "updated_at": 7}',
    ),
    (
        META,
        '{"conversation_id": "c", "created_at": 1, "last_message_at": 2, "message_count": 3,'
        ' "metadata": {"t": "x"}}',
    ),
    (ListConversationsResult([]), '{"items": [], "next_cursor": null, "previous_cursor": null}'),
    (
        ListConversationsResult([META], "n", "p"),
        '{"items": [' + json.dumps(META.to_dict()) + "],"
        ' "next_cursor": "n", "previous_cursor": "p"}',
    ),
    (
        StoreCounts(1, 2, 3, 4, 5, 6),
        '{"conversations": 1, "messages": 2, "state_entries": 3, "index_entries": 4,'
        ' "users": 5, "adapter_blobs": 6}',
    ),
    (
        TransferCounts(1, 2, 3, 4, 5),
        '{"conversations": 1, "messages": 2, "state_entries": 3, "adapter_blobs": 4, "blobs": 5}',
    ),
    (
        CopyReport(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, True),
        '{"conversations": 1, "conversations_written": 2, "conversations_unchanged": 3,'
        ' "blobs": 4, "blobs_written": 5, "blobs_unchanged": 6, "bytes_written": 7,'
        ' "extra_conversations": 8, "extra_blobs": 9, "pruned_conversations": 10,'
        ' "pruned_blobs": 11}',
    ),
    (
        IndexEntry("i/k", None, None, None, False, "bad"),
        '{"key": "i/k", "index": "all", "user_id": null, "last_message_at": null,'
        ' "conversation_id": null, "current": false, "reason": "bad", "owed": false}',
    ),
    (
        IndexEntry("i/k", "u", 5, "c", False, "why", owed=True),
        '{"key": "i/k", "index": "user", "user_id": "u", "last_message_at": 5,'
        ' "conversation_id": "c", "current": false, "reason": "why", "owed": true}',
    ),
    (
        DRIFT,
        '{"kind": "missing", "key": "k", "conversation_id": "c", "user_id": null, "reason": "r"}',
    ),
    (
        IndexCheck(3, 4, 5, [DRIFT]),
        '{"ok": false, "entries_checked": 3, "conversations_checked": 4, "owed_deletions": 5,'
        ' "drift": [' + json.dumps(DRIFT.to_dict()) + "]}",
    ),
    (RebuildSummary(1, 2, 3), '{"conversations": 1, "created": 2, "removed": 3}'),
]


@pytest.mark.parametrize(("result", "shown"), CASES, ids=lambda value: type(value).__name__)
def test_to_dict_keeps_its_shape(result: Any, shown: str) -> None:
    assert json.dumps(result.to_dict()) == shown


def test_to_dict_does_not_copy_what_the_caller_stored() -> None:
    message = Message("m", "user", {"a": [1]}, 5, {"k": 1})
    shown = message.to_dict()
    assert shown["content"] is message.content and shown["metadata"] is message.metadata
