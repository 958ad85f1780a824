"""The front's registry of requests in flight, and the abort fan-out it serves.

The front chooses each request's run id when it dispatches it, and records
here which worker holds it, per conversation, until its answer has been
relayed. ``ctx.utils.abort_active_run`` on one instance aborts that
instance's own runs, then calls :func:`serve_control` (on a 127.0.0.1
listener, guarded by the session token): the other instances holding the
conversation's requests are asked to abort them, and each is told the run
ids dispatched to it, so a run that has not started there yet (its request
in transit, its module importing) is aborted when it starts. The caller gets
back the run ids dispatched to *it*, for the same reason.

The answer waits until each other instance has taken its abort (so a run not
started yet is sure to be stopped when it starts), except for instances that
are themselves inside such a call: their event loop is blocked in it, so they
could not answer before their own call returns. Those get theirs in the
background, and the answer comes from this registry: two runs of one
conversation stopping each other both return at once.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from typing import Any

from starlette.types import Receive, Scope, Send

from ..errors import BodyRefused, ClientGone
from ..wire import ABORT_PATH, TOKEN_HEADER
from .body import read_small_json
from .headers import header, send_json
from .limits import FrontLimits
from .supervisor import Worker, WorkerPool

logger = logging.getLogger("makers_store.serve")

#: An abort request is a few ids; anything larger is not one.
_MAX_CONTROL_BODY_BYTES = 64 * 1024


class InflightRuns:
    """conversation id -> {run id: (the worker holding it, dispatch time in epoch seconds)}.

    ``aborted`` holds the run ids an abort has already named, so a second stop
    of the same run answers that nothing was running, as the worker's own
    registry does.
    """

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, tuple[Worker, float]]] = {}
        self.aborted: set[str] = set()
        #: Instances (serials) whose abort call is being served now: blocked in it.
        self.calling: set[int] = set()

    def add(self, conversation_id: str, run_id: str, worker: Worker) -> None:
        if conversation_id:
            self._runs.setdefault(conversation_id, {})[run_id] = (worker, time.time())

    def remove(self, conversation_id: str, run_id: str) -> None:
        self.aborted.discard(run_id)
        runs = self._runs.get(conversation_id)
        if runs is not None:
            runs.pop(run_id, None)
            if not runs:
                del self._runs[conversation_id]

    def by_worker(
        self, conversation_id: str, except_run: str | None
    ) -> dict[Worker, dict[str, float]]:
        """The conversation's runs in flight but ``except_run``, grouped by worker."""
        grouped: dict[Worker, dict[str, float]] = {}
        for run_id, (worker, dispatched) in self._runs.get(conversation_id, {}).items():
            if run_id != except_run:
                grouped.setdefault(worker, {})[run_id] = dispatched
        return grouped

    def __len__(self) -> int:
        return sum(len(runs) for runs in self._runs.values())


async def serve_control(
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    token: str,
    inflight: InflightRuns,
    pool: WorkerPool,
    limits: FrontLimits,
) -> None:
    """``POST /__makers/abort {conversation_id, except_run, instance}`` from a worker."""
    given = header(scope["headers"], TOKEN_HEADER.encode()) or b""
    if not hmac.compare_digest(given, token.encode()):
        await send_json(send, 404, {"error": "not found"})
        return
    if scope["path"] != ABORT_PATH or scope["method"] != "POST":
        await send_json(send, 404, {"error": "not found"})
        return
    try:
        data: Any = await read_small_json(receive, limits, _MAX_CONTROL_BODY_BYTES)
        cid, except_run = str(data["conversation_id"]), data.get("except_run")
        caller = int(data.get("instance", 0))
    except (ClientGone, BodyRefused, ValueError, KeyError, TypeError) as exc:
        await send_json(send, 400, {"error": f"bad abort request: {exc!r}"})
        return
    inflight.calling.add(caller)
    try:
        answer = await _abort(inflight, pool, cid, except_run, caller)
    finally:
        inflight.calling.discard(caller)
    await send_json(send, 200, answer)


async def _abort(
    inflight: InflightRuns, pool: WorkerPool, cid: str, except_run: str | None, caller: int
) -> dict[str, Any]:
    holders = inflight.by_worker(cid, except_run)
    # Never call the caller back: it has aborted its own runs and is blocked
    # waiting for this answer. It is sent the run ids dispatched to it instead.
    here = {run_id: at for w, runs in holders.items() if w.serial == caller
            for run_id, at in runs.items()}
    others = {w: runs for w, runs in holders.items() if w.serial != caller}
    named = {
        run_id: at
        for runs in others.values()
        for run_id, at in runs.items()
        if run_id not in inflight.aborted
    }
    inflight.aborted.update(named)
    aborted = [{"run_id": run_id, "started": at} for run_id, at in named.items()]
    blocked = {w: runs for w, runs in others.items() if w.serial in inflight.calling}
    ready = {w: runs for w, runs in others.items() if w.serial not in inflight.calling}
    if blocked:
        _deliver(pool.abort_on(blocked, cid, except_run))
    if ready:
        await pool.abort_on(ready, cid, except_run)
    return {"aborted": aborted, "dispatched_here": here}


#: Deliveries under way (the event loop keeps only weak references to tasks).
_deliveries: set[asyncio.Task[Any]] = set()


def _deliver(abort: Any) -> None:
    task = asyncio.get_running_loop().create_task(abort)
    _deliveries.add(task)

    def done(finished: asyncio.Task[Any]) -> None:
        _deliveries.discard(finished)
        if not finished.cancelled() and finished.exception() is not None:
            logger.warning("abort delivery failed: %r", finished.exception())

    task.add_done_callback(done)
