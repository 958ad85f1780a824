"""One agent run: the request's body, ``ctx``, the handler, its limits, its trace.

The run is registered (so an abort can reach it) from before the handler is
called until its response is complete. Its ``signal`` is set by an abort, a
client disconnect or ``agents.timeout``; a run still going a grace period
later is cancelled (a stream simply ends; a plain handler answers
:data:`..platform_choices.ABORTED_STATUS` / ``TIMEOUT_STATUS``). When it ends,
its tracer is logged and appended to ``traces.jsonl``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive

import makers_store
from makers_store.errors import MemoryValidationError

from ..errors import RelayedError, ResultError
from ..platform_choices import (
    ABORTED_STATUS,
    INTERRUPT_STATUS,
    INVALID_JSON_BODY_STATUS,
    TIMEOUT_STATUS,
)
from ..project.routes import Route
from ..sse import dumps
from ..wire import INTERNAL_HEADER_PREFIX
from . import trace_log
from .context import AbortFunction, AgentContext, AgentRequest, ToolsSetup, Utils
from .kv import KVSpaces
from .request_body import handler_body
from .responses import SSEResponse, error_response, is_graph_interrupt, json_response, to_response
from .runs import ActiveRuns, Run
from .tracing import Tracer

logger = logging.getLogger("makers_store.serve")
trace_logger = logging.getLogger("makers_store.serve.trace")


async def call_handler(handler: Any, ctx: object) -> Any:
    """``handler(ctx)``: awaited, a thread for a plain function, an async generator as is."""
    if inspect.isasyncgenfunction(handler):
        return handler(ctx)
    if inspect.iscoroutinefunction(handler):
        return await handler(ctx)
    if not callable(handler):
        raise ResultError(f"`handler` must be a function, not {type(handler).__name__}")
    result = await asyncio.to_thread(handler, ctx)
    return await result if inspect.isawaitable(result) else result


async def _watch_disconnect(receive: Receive, run: Run) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            run.abort("disconnected")
            return


def agent_request(request: Request, body: Any, raw: bytes, signal: asyncio.Event) -> AgentRequest:
    """``ctx.request`` (also a cloud-function context handler's ``context.request``)."""
    headers = {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in request.scope["headers"]
        if not k.startswith(INTERNAL_HEADER_PREFIX)  # the front's own, not the client's
    }
    return AgentRequest(
        method=request.method,
        path=request.url.path,
        url=str(request.url),
        headers=headers,
        query=dict(request.query_params),
        body=body,
        raw_body=raw,
        signal=signal,
    )


class _Cancelled(Exception):
    """The run did not end within the grace period after its signal."""


async def _until_done_or_stopped(handler: Any, ctx: AgentContext, run: Run) -> Any:
    task = asyncio.ensure_future(call_handler(handler, ctx))
    stop = asyncio.ensure_future(run.must_stop.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise _Cancelled
    return task.result()


def _interrupt_values(exc: BaseException) -> list[Any]:
    values: list[Any] = []
    for arg in exc.args:
        for item in arg if isinstance(arg, list | tuple) else [arg]:
            value = getattr(item, "value", item)
            try:
                dumps(value)
            except (TypeError, ValueError):
                value = str(value)
            values.append(value)
    return values


@dataclass
class AgentRunner:
    """What every agent run of one worker shares."""

    store: Callable[[], makers_store.ContextStore]
    #: The route's ``handler`` (ResultError naming the file when it cannot be imported).
    load: Callable[[Route], Any]
    runs: ActiveRuns
    kv: KVSpaces
    env: dict[str, str]
    tools: ToolsSetup
    abort: AbortFunction
    instance: int
    timeout_s: float | None

    async def run(self, route: Route, request: Request, cid: str, run_id: str) -> Response:
        raw = await request.body()
        try:
            body = handler_body(route, request.method, raw, request.headers.get("content-type"))
        except ValueError as exc:
            return error_response(INVALID_JSON_BODY_STATUS, str(exc))
        try:
            store = self.store().bind(cid or None, run_id=run_id)
        except MemoryValidationError as exc:
            return error_response(400, f"makers-conversation-id header: {exc}")
        handler = self.load(route)
        run = Run(cid, run_id)
        ctx = self._context(route, request, body, raw, store, run)
        return await self._drive(route, request, handler, ctx, run)

    def _context(
        self,
        route: Route,
        request: Request,
        body: Any,
        raw: bytes,
        store: makers_store.ContextStore,
        run: Run,
    ) -> AgentContext:
        return AgentContext(
            request=agent_request(request, body, raw, run.signal),
            env=dict(self.env),
            conversation_id=run.conversation_id,
            run_id=run.run_id,
            store=store,
            utils=Utils(run.run_id, self.abort),
            tracer=Tracer(run.run_id),
            kv=self.kv.for_route(route.relative),
            tools_setup=self.tools,
        )

    async def _drive(
        self, route: Route, request: Request, handler: Any, ctx: AgentContext, run: Run
    ) -> Response:
        self.runs.start(run)
        watcher = asyncio.create_task(_watch_disconnect(request.receive, run))
        timer = None
        if self.timeout_s is not None:
            timer = asyncio.get_running_loop().call_later(
                self.timeout_s, self._timed_out, run, route
            )

        response: Response | None = None

        def end(status: str, http_status: int | None = None) -> None:
            """The run is over: ``status`` as the handler left it, ``http_status``
            what the client was answered (a stream's: its response's)."""
            watcher.cancel()
            if timer is not None:
                timer.cancel()
            self.runs.finish(run)
            if http_status is None and response is not None:
                http_status = response.status_code
            self._trace(route, request, ctx, status, http_status)

        try:
            result = await _until_done_or_stopped(handler, ctx, run)
            response = to_response(result, run, end)
        except _Cancelled:
            status = TIMEOUT_STATUS if run.reason == "timeout" else ABORTED_STATUS
            end(run.reason or "aborted", status)
            message = f"the run was cancelled: {run.reason} and not finished after the grace period"
            return error_response(status, message, run_id=run.run_id)
        except RelayedError as exc:
            end("error", exc.response.status_code)
            return exc.response
        except ResultError as exc:
            end("error", 500)
            logger.error("run %s: %s: %s", run.run_id, route.relative, exc)
            return error_response(500, str(exc), run_id=run.run_id)
        except Exception as exc:
            if is_graph_interrupt(exc):
                end("interrupted", INTERRUPT_STATUS)
                logger.info("run %s: %s raised GraphInterrupt (not an error)", run.run_id,
                            route.relative)
                payload = {"interrupted": True, "interrupts": _interrupt_values(exc),
                           "run_id": run.run_id}
                return json_response(payload, INTERRUPT_STATUS)
            end("error", 500)
            logger.exception("run %s: %s raised", run.run_id, route.relative)
            return error_response(500, f"{type(exc).__name__}: {exc}", run_id=run.run_id)
        if not isinstance(response, SSEResponse):
            end(run.reason or "ok", response.status_code)
        return response

    def _timed_out(self, run: Run, route: Route) -> None:
        if run.signal.is_set():
            return
        logger.warning(
            "run %s: %s reached agents.timeout (%gs); its signal is set, and it is cancelled "
            "if still running in a few seconds",
            run.run_id,
            route.relative,
            self.timeout_s,
        )
        run.abort("timeout")

    def _trace(
        self,
        route: Route,
        request: Request,
        ctx: AgentContext,
        status: str,
        http_status: int | None,
    ) -> None:
        tracer = ctx.tracer
        status = trace_log.run_status(status, http_status)
        summary = tracer.summary(status)
        trace_logger.info("trace route=%s %s http=%s", route.path, summary, http_status)
        record = trace_log.build_record(
            tracer,
            status=status,
            http_status=http_status,
            conversation_id=ctx.conversation_id,
            route=request.url.path,
            file=route.relative,
            instance=self.instance,
        )
        trace_log.append_record(trace_log.trace_path(self.tools.project), record)
