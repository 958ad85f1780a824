"""The runs a worker is executing, so that an abort can reach them.

A run is one request to an agent. Its ``signal`` (``ctx.request.signal``) is
set when ``abort_active_run(conversation_id)`` names its conversation (from
any instance: the front fans the abort out to the instances holding that
conversation's requests), when its client disconnects, or when it reaches
``agents.timeout``. A run that has not finished a grace period after its
signal is cancelled (``must_stop``).

The front chooses each run id at dispatch, so an abort can name a run this
worker has not registered yet (its request still in transit, its body still
arriving, its module still importing). Such a run is remembered as a
*pending abort* for :data:`PENDING_ABORT_TTL_S` and is aborted the moment it
starts; runs that finished recently are recognised and not reported.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..platform_choices import STOP_GRACE_S, TIMEOUT_GRACE_S

StopReason = Literal["aborted", "disconnected", "timeout"]

#: How long an abort waits for a dispatched run to start here. Longer than a
#: request normally takes to reach the handler (its body arriving, its module
#: importing); short enough that a run id that never starts is soon forgotten.
PENDING_ABORT_TTL_S = 60.0
#: Finished run ids remembered, so an abort of a run that has just ended (its
#: response still on its way through the front) is not mistaken for a pending one.
_REMEMBERED_FINISHED = 1024


@dataclass(frozen=True)
class AbortedRun:
    """One run an abort stopped: its id and when it started (epoch seconds)."""

    run_id: str
    started: float


@dataclass(eq=False)
class Run:
    conversation_id: str
    run_id: str
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set a grace period after ``signal``: the run is then cancelled.
    must_stop: asyncio.Event = field(default_factory=asyncio.Event)
    started: float = field(default_factory=time.time)
    #: Why ``signal`` was set first (None while running normally).
    reason: StopReason | None = None

    def abort(self, reason: StopReason = "aborted") -> None:
        """Set ``signal``; ``must_stop`` follows after the grace period."""
        if self.signal.is_set():
            return
        self.reason = reason
        self.signal.set()
        grace = TIMEOUT_GRACE_S if reason == "timeout" else STOP_GRACE_S
        asyncio.get_running_loop().call_later(grace, self.must_stop.set)


class ActiveRuns:
    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Run]] = {}
        #: run id -> (when the abort arrived, monotonic; the AbortedRun to report).
        self._pending: dict[str, tuple[float, AbortedRun]] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()

    def start(self, run: Run) -> None:
        if run.conversation_id:  # a run without a conversation cannot be named by an abort
            self._runs.setdefault(run.conversation_id, {})[run.run_id] = run
        if self._pending.pop(run.run_id, None) is not None:
            run.abort()  # aborted between its dispatch and now

    def finish(self, run: Run) -> None:
        runs = self._runs.get(run.conversation_id)
        if runs is not None:
            runs.pop(run.run_id, None)
            if not runs:
                del self._runs[run.conversation_id]
        self._finished[run.run_id] = None
        if len(self._finished) > _REMEMBERED_FINISHED:
            self._finished.popitem(last=False)

    def abort(
        self,
        conversation_id: str,
        *,
        except_run: str | None = None,
        dispatched: Mapping[str, float] | None = None,
    ) -> list[AbortedRun]:
        """Abort every active run of ``conversation_id`` but ``except_run``; the ones aborted.

        ``dispatched``: run ids the front has sent here for this conversation
        (with their dispatch time, epoch seconds); those not started yet are
        aborted when they start, and reported now.
        """
        aborted: list[AbortedRun] = []
        active = self._runs.get(conversation_id, {})
        for run in list(active.values()):
            if run.run_id != except_run and not run.signal.is_set():
                run.abort()
                aborted.append(AbortedRun(run.run_id, run.started))
        self._forget_expired()
        for run_id, dispatched_at in (dispatched or {}).items():
            if run_id == except_run or run_id in active or run_id in self._finished:
                continue
            if run_id not in self._pending:
                pending = AbortedRun(run_id, dispatched_at)
                self._pending[run_id] = (time.monotonic(), pending)
                aborted.append(pending)
        return aborted

    def _forget_expired(self) -> None:
        oldest = time.monotonic() - PENDING_ABORT_TTL_S
        for run_id in [r for r, (since, _) in self._pending.items() if since < oldest]:
            del self._pending[run_id]

    def __len__(self) -> int:
        return sum(len(runs) for runs in self._runs.values())


def latest(runs: list[AbortedRun]) -> AbortedRun | None:
    """The most recently started of ``runs`` (the one the platform would name)."""
    return max(runs, key=lambda run: run.started, default=None)
