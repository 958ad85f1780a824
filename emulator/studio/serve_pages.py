"""Pages only ``makers-store serve`` has: the playground and the run traces.

The playground page posts to the project's agent routes on the same origin
(the Studio is served by the front at ``/_studio/``) under a fresh
conversation id unless one is given (``?id=``), reads the answer frame
by frame, shows the run id and the instance that served it (the front's
``makers-run-id`` and ``makers-instance`` headers) and stops a run through
the project's own stop route. Traces are the records ``ctx.tracer`` wrote to
``.makers-store/traces.jsonl`` (:mod:`..runtime.worker.trace_log`, the one reader of
that format).
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from makers_store import MemoryValidationError

from ..runtime.worker.trace_log import is_failed, recent_records, trace_path
from .config import Renderer, StudioConfig
from .shapes import pretty

TRACES_SHOWN = 200
#: Runs the conversation page lists (the traces page has the rest).
RUNS_SHOWN = 10


#: The Traces page's filter: every run, or the failed ones only.
SHOWN_RUNS = ("all", "failed")


def trace_rows(
    config: StudioConfig, conversation_id: str | None, shown: str = "all"
) -> list[dict[str, Any]]:
    """The newest runs (of one conversation, if given; only the failed ones
    if ``shown`` is "failed"), newest first."""
    assert config.project is not None
    records = recent_records(trace_path(config.project), TRACES_SHOWN * 5)
    rows = []
    for record in records:
        if conversation_id and record.get("conversation_id") != conversation_id:
            continue
        failed = is_failed(record)
        if shown == "failed" and not failed:
            continue
        http_status = record.get("http_status")
        rows.append(
            {
                "run": str(record.get("run_id", "")),
                "conversation": str(record.get("conversation_id", "")),
                "route": str(record.get("route", "")),
                "instance": str(record.get("instance", "")),
                "status": str(record.get("status", "")),
                "http": str(http_status) if isinstance(http_status, int) else "",
                "failed": failed,
                "duration": f"{float(record.get('duration_ms') or 0):.0f} ms",
                "started": _started(record.get("started_at")),
                "spans": len(record.get("spans") or []),
                "detail": pretty(
                    {"attributes": record.get("attributes"), "spans": record.get("spans")}
                ),
            }
        )
        if len(rows) >= TRACES_SHOWN:
            break
    return rows


def _started(value: Any) -> int | None:
    """A record's ``started_at`` (epoch seconds) in milliseconds, for ``moment``."""
    return int(float(value) * 1000) if isinstance(value, int | float) else None


def fresh_conversation_id() -> str:
    """``play-3f9a1c2e``: a conversation no one has used, for a playground
    opened without one (agents such as init's answer 400 without an id)."""
    return f"play-{secrets.token_hex(4)}"


def routes(p: str, config: StudioConfig, render: Renderer) -> list[Route]:
    async def playground(request: Request) -> Response:
        query = request.query_params  # a re-run opens it with its route and body ready
        return render.page(
            request,
            "playground.html",
            routes=list(config.agent_routes),
            cid=query.get("id") or fresh_conversation_id(),
            route=query.get("route") or "",
            body=query.get("body") or '{"message": "hello"}',
        )

    def shown_runs(request: Request) -> str:
        shown = request.query_params.get("runs") or "all"
        if shown not in SHOWN_RUNS:
            raise MemoryValidationError(f"runs must be one of {', '.join(SHOWN_RUNS)}")
        return shown

    async def traces(request: Request) -> Response:
        cid, shown = request.query_params.get("id", ""), shown_runs(request)
        rows = trace_rows(config, cid or None, shown)
        return render.page(request, "traces.html", rows=rows, cid=cid, runs=shown)

    async def traces_part(request: Request) -> Response:
        cid, shown = request.query_params.get("id", ""), shown_runs(request)
        rows = trace_rows(config, cid or None, shown)
        return HTMLResponse(render.text("trace_rows.html", rows=rows, cid=cid, runs=shown))

    async def runs_part(request: Request) -> Response:
        """The conversation page's compact list of its runs (which instance served each)."""
        cid = request.query_params.get("id", "")
        rows = trace_rows(config, cid or None)[:RUNS_SHOWN]
        return HTMLResponse(render.text("runs.html", runs=rows, cid=cid))

    return [
        Route(f"{p}/runs.part", runs_part),
        Route(f"{p}/playground", playground),
        Route(f"{p}/traces", traces),
        Route(f"{p}/traces.part", traces_part),
    ]
