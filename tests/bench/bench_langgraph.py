"""LangGraph checkpointer speed: ours against ``AsyncSqliteSaver`` (issue 5).

Both savers write SQLite files in ``workdir`` and receive the same small,
realistic checkpoints: a chat state with a messages list (LangChain message
objects), a couple of plain channels, versions and metadata as the Pregel loop
builds them. Each timed ``aput`` stores the next checkpoint of one thread
(parent = the previous one); each timed ``aget_tuple`` loads the latest
checkpoint of a thread with 50 checkpoints, with two pending writes.

Targets: ``aput`` >= 2x and ``aget_tuple`` >= 2x ``AsyncSqliteSaver``.
Run alone with ``python tests/bench/bench_langgraph.py [--quick]``.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_harness import Row, Sizes, compare, run_alone, say, sqlite_url
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import makers_store

HISTORY = 50


def messages(turns: int) -> list[BaseMessage]:
    found: list[BaseMessage] = []
    for turn in range(turns):
        found.append(HumanMessage(f"Question {turn}: what changed in the Q{turn % 4 + 1} report?"))
        found.append(
            AIMessage(
                f"Answer {turn}: revenue grew 4%, churn fell to 2.1%, headcount is flat.",
                response_metadata={"model": "claude-sonnet", "stop_reason": "end_turn"},
            )
        )
    return found


class Thread:
    """Successive checkpoints of one thread, as the Pregel loop would put them."""

    def __init__(self, saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
        self.saver = saver
        self.config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        self.step = 0
        self.history = messages(3)

    async def put(self) -> None:
        self.step += 1
        version = self.step
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=self.step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {
                "messages": self.history,
                "summary": "The user reviews quarterly figures.",
                "remaining_steps": 24,
                "branch:to:agent": None,
            },
            "channel_versions": {"messages": version, "summary": 1, "remaining_steps": version},
            "versions_seen": {"agent": {"messages": version - 1}, "__input__": {}},
            "updated_channels": ["messages", "remaining_steps"],
        }
        metadata: CheckpointMetadata = {
            "source": "loop",
            "step": self.step,
            "parents": {},
            "run_id": "run-0001",
        }
        new_versions: ChannelVersions = {"messages": version, "remaining_steps": version}
        self.config = await self.saver.aput(self.config, checkpoint, metadata, new_versions)

    async def add_writes(self) -> None:
        await self.saver.aput_writes(
            self.config, [("messages", messages(1)), ("branch:to:tools", None)], "task-1", "~agent"
        )


async def _ours(path: Path) -> tuple[makers_store.ContextStore, BaseCheckpointSaver[Any]]:
    store = makers_store.open_store(sqlite_url(path))
    return store, store.langgraph_checkpointer


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    say("langgraph: MakersCheckpointSaver vs AsyncSqliteSaver (aput, aget_tuple)")
    store, ours = await _ours(workdir / "langgraph-ours.db")
    async with AsyncSqliteSaver.from_conn_string(str(workdir / "langgraph-peer.db")) as peer:
        await peer.setup()
        try:
            writers = {"ours": Thread(ours, "put-ours"), "peer": Thread(peer, "put-peer")}
            puts = await compare({name: t.put for name, t in writers.items()}, sizes)

            readers = {"ours": Thread(ours, "get-ours"), "peer": Thread(peer, "get-peer")}
            for reader in readers.values():
                for _ in range(HISTORY):
                    await reader.put()
                await reader.add_writes()
            latest: dict[str, Any] = {  # no checkpoint_id: the latest one
                name: {"configurable": {"thread_id": f"get-{name}", "checkpoint_ns": ""}}
                for name in readers
            }

            async def get_ours() -> None:
                assert await ours.aget_tuple(latest["ours"]) is not None

            async def get_peer() -> None:
                assert await peer.aget_tuple(latest["peer"]) is not None

            gets = await compare({"ours": get_ours, "peer": get_peer}, sizes)
        finally:
            await store.close()
    return [
        Row("langgraph aput", puts["ours"], "AsyncSqliteSaver.aput", puts["peer"], 2.0, ">= 2"),
        Row(
            "langgraph aget_tuple (latest)",
            gets["ours"],
            "AsyncSqliteSaver.aget_tuple",
            gets["peer"],
            2.0,
            ">= 2",
        ),
    ]


if __name__ == "__main__":
    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
