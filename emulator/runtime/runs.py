"""The runs a worker is executing, so that an abort can reach them.

A run is one request to an agent. Its ``signal`` (``ctx.request.signal``) is
set when ``abort_active_run(conversation_id)`` names its conversation (from
any instance: the front fans the abort out to every worker) or when its
client disconnects.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field


def new_conversation_id() -> str:
    """A conversation id for a request that came without one (a UUID, as on the platform)."""
    return str(uuid.uuid4())


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex


@dataclass(eq=False)
class Run:
    conversation_id: str
    run_id: str
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set (with ``signal``) when the client went away, not by an abort.
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)

    def abort(self, *, disconnected: bool = False) -> None:
        if disconnected:
            self.disconnected.set()
        self.signal.set()


class ActiveRuns:
    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Run]] = {}

    def start(self, run: Run) -> None:
        self._runs.setdefault(run.conversation_id, {})[run.run_id] = run

    def finish(self, run: Run) -> None:
        runs = self._runs.get(run.conversation_id)
        if runs is not None:
            runs.pop(run.run_id, None)
            if not runs:
                del self._runs[run.conversation_id]

    def abort(self, conversation_id: str, *, except_run: str | None = None) -> int:
        """Set the signal of every active run of ``conversation_id``; how many were."""
        count = 0
        for run in list(self._runs.get(conversation_id, {}).values()):
            if run.run_id != except_run and not run.signal.is_set():
                run.abort()
                count += 1
        return count

    def __len__(self) -> int:
        return sum(len(runs) for runs in self._runs.values())
