"""``abort_active_run`` from one instance: its own runs, then the others' through the front.

The instance aborts the conversation's runs it holds, then asks the front's
control listener (:mod:`..front.control`) to abort them on the other
instances; the front answers with the runs aborted there and the run ids it
dispatched to this instance that had not started yet, which are aborted here
too (when they start). Python's ``ctx.utils.abort_active_run`` is synchronous
and blocks its worker for that call (:meth:`InstanceAborts.everywhere`); Node's
``abortActiveRun`` reaches it over the store socket and must not block the
worker that serves that socket (:meth:`InstanceAborts.everywhere_async`).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from ..platform_choices import ABORT_CALL_TIMEOUT_S
from .runs import AbortedRun, ActiveRuns

logger = logging.getLogger("makers_store.serve")


@dataclass(frozen=True)
class InstanceAborts:
    runs: ActiveRuns
    instance: int
    #: The front's control port (0: no front, this instance only).
    control_port: int
    #: Where and how the front takes an abort (its path, the session token header).
    control_path: str
    control_headers: Mapping[str, str]

    def everywhere(self, conversation_id: str, except_run: str | None) -> list[AbortedRun]:
        """Abort the conversation's runs here, then (blocking, briefly) on the other instances.

        Synchronous because ``abort_active_run`` is. The front fans out to the
        *other* instances only, never back to this one, so this cannot deadlock.
        """
        aborted = self.runs.abort(conversation_id, except_run=except_run)
        if self.control_port:
            elsewhere, dispatched_here = self._elsewhere(conversation_id, except_run)
            aborted += self._dispatched_here(conversation_id, except_run, dispatched_here)
            aborted += elsewhere
        return aborted

    async def everywhere_async(
        self, conversation_id: str, except_run: str | None
    ) -> list[AbortedRun]:
        """:meth:`everywhere` without blocking this worker's event loop."""
        aborted = self.runs.abort(conversation_id, except_run=except_run)
        if self.control_port:
            elsewhere, dispatched_here = await asyncio.to_thread(
                self._elsewhere, conversation_id, except_run
            )
            aborted += self._dispatched_here(conversation_id, except_run, dispatched_here)
            aborted += elsewhere
        return aborted

    def _dispatched_here(
        self, conversation_id: str, except_run: str | None, dispatched: dict[str, float]
    ) -> list[AbortedRun]:
        """Runs the front sent here that had not started (or started meanwhile)."""
        return self.runs.abort(conversation_id, except_run=except_run, dispatched=dispatched)

    def _elsewhere(
        self, conversation_id: str, except_run: str | None
    ) -> tuple[list[AbortedRun], dict[str, float]]:
        """The runs aborted on other instances, and the run ids the front dispatched here."""
        payload = {
            "conversation_id": conversation_id,
            "except_run": except_run,
            "instance": self.instance,
        }
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.control_port, timeout=ABORT_CALL_TIMEOUT_S
        )
        try:
            connection.request(
                "POST",
                self.control_path,
                body=json.dumps(payload).encode("utf-8"),
                headers={**self.control_headers, "content-type": "application/json"},
            )
            answer = connection.getresponse()
            data = json.loads(answer.read() or b"null")
            if answer.status != 200 or not isinstance(data, dict):
                raise ValueError(f"the front answered {answer.status}")
            aborted = [AbortedRun(str(r["run_id"]), float(r["started"])) for r in data["aborted"]]
            here = {str(k): float(v) for k, v in data.get("dispatched_here", {}).items()}
            return aborted, here
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("abort fan-out failed (%s); aborted on this instance only", exc)
            return [], {}
        finally:
            connection.close()
