"""Speed of the OpenAI Agents SDK adapter: ``store.openai_session(...).add_items``
against ``agents.memory.SQLiteSession.add_items``, both on file databases in
one temporary directory, timed side by side in one run (see bench_harness).

Target: >= 3x SQLiteSession with one item per call (a user turn), each call
one unit of work on either side. Three items per call (a tool round: call,
output, reply) is shown for information: there our cost grows by a JSON
encode and an insert per item, while SQLiteSession's is dominated by its one
commit, so the ratio falls to about 2x.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.memory import SQLiteSession
from bench_harness import Row, Sizes, compare, say, sqlite_url

import makers_store

TEXT = (
    "Please summarise the attached quarterly report in three bullet points, "
    "keeping the figures for revenue, churn and headcount, and flag anything "
    "that changed by more than ten percent since the previous quarter."
)

ONE: list[Any] = [{"role": "user", "content": TEXT}]
THREE: list[Any] = [
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "fetch_report",
        "arguments": '{"quarter":"Q3"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": TEXT},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
    },
]


class OurSessions:
    """add_items on one session, moving to a fresh conversation well before
    the 10,000-message quota of a conversation."""

    PER_CONVERSATION = 6_000

    def __init__(self, store: makers_store.ContextStore, name: str, items: list[Any]) -> None:
        self.store = store
        self.name = name
        self.items = items
        self.conversations = 0
        self.in_conversation = 0
        self.session = store.openai_session(f"{name}-0")

    async def add(self) -> None:
        if self.in_conversation + len(self.items) > self.PER_CONVERSATION:
            self.conversations += 1
            self.in_conversation = 0
            self.session = self.store.openai_session(f"{self.name}-{self.conversations}")
        self.in_conversation += len(self.items)
        await self.session.add_items(self.items)


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    say("openai_session.add_items vs SQLiteSession.add_items (1 and 3 items per call)")
    store = makers_store.open_store(sqlite_url(workdir / "openai-ours.db"))
    peer = SQLiteSession("openai", workdir / "openai-peer.db")
    one, three = OurSessions(store, "one", ONE), OurSessions(store, "three", THREE)

    async def peer_one() -> None:
        await peer.add_items(ONE)

    async def peer_three() -> None:
        await peer.add_items(THREE)

    try:
        found = await compare(
            {"ours-1": one.add, "peer-1": peer_one, "ours-3": three.add, "peer-3": peer_three},
            sizes,
        )
    finally:
        await store.close()
        peer.close()
    return [
        Row(
            "openai_session.add_items (1 item)",
            found["ours-1"],
            "SQLiteSession.add_items",
            found["peer-1"],
            3.0,
            ">= 3",
        ),
        Row(
            "openai_session.add_items (3 items)",
            found["ours-3"],
            "SQLiteSession.add_items",
            found["peer-3"],
            None,  # the target is per call of one item, like append_message's row
            "info",
        ),
    ]
