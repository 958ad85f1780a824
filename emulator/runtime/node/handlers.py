"""The store RPC methods a Node agent's ``context`` needs besides the store.

Node's ``context.kv``, ``context.tools``, ``context.sandbox``,
``context.tracer`` and ``context.utils.abortActiveRun`` are thin clients: each call names its run
(``runId``) and lands here, on the Python ``ctx`` the worker built for that run
(:class:`NodeRuns`), so the Python implementations (:mod:`..worker.kv`,
:mod:`..tools`, :mod:`..worker.tracing`, the front's abort fan-out) are the only ones.
Errors are the Python ones (``MemoryValidationError`` with its message), which
the RPC server sends back by name.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from makers_store.errors import MemoryValidationError

from ..sse import dumps
from ..store_rpc import Handler
from ..tools.catalog import BROWSER_TOOLS, FILE_TOOLS, SPECS
from ..tools.toolkit import DEFAULT_MCP_SERVER_NAME, MCP_SERVER_NAME
from ..worker.context import AgentContext
from ..worker.runs import AbortedRun, latest

#: abort(conversation_id, except_run) -> the runs aborted, on every instance (not blocking).
AsyncAbort = Callable[[str, str | None], Awaitable[list[AbortedRun]]]


class NodeRuns:
    """run id -> the Python ``ctx`` of a Node run in progress on this instance."""

    def __init__(self) -> None:
        self._contexts: dict[str, AgentContext] = {}
        #: run id -> "Name: message" of a Node stream that failed after it started
        self._stream_failures: dict[str, str] = {}

    def add(self, ctx: AgentContext) -> None:
        self._contexts[ctx.run_id] = ctx

    def remove(self, ctx: AgentContext) -> None:
        self._contexts.pop(ctx.run_id, None)
        self._stream_failures.pop(ctx.run_id, None)

    def stream_failed(self, run_id: str, error: str) -> None:
        if run_id in self._contexts:
            self._stream_failures[run_id] = error

    def stream_failure(self, run_id: str) -> str | None:
        """How the run's stream failed in Node (None: it did not)."""
        return self._stream_failures.get(run_id)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._contexts

    def context(self, params: dict[str, Any], method: str) -> AgentContext:
        run_id = params.get("runId")
        found = self._contexts.get(run_id) if isinstance(run_id, str) else None
        if found is None:
            raise MemoryValidationError(f"{method}: run {run_id!r} is not running on this instance")
        return found


def _arg(params: dict[str, Any], name: str) -> Any:
    """A parameter as given (None when absent): the Python method checks it and names it."""
    return params.get(name)


#: ``context.sandbox`` methods (Node and Python spellings) -> the attribute path on ``ctx.sandbox``.
_SANDBOX_METHODS: dict[str, tuple[str, ...]] = {
    "commands.run": ("commands", "run"),
    **{f"files.{name}": ("files", name)
       for name in ("read", "write", "list", "exists", "remove", "make_dir", "makeDir")},
    **{name: (name,) for name in ("run_code", "runCode", "get_info", "getInfo", "extend_timeout",
                                  "extendTimeout", "kill", "get_host", "getHost")},
    **{f"browser.{name}": ("browser", name)
       for name in ("goto", "screenshot", "click", "type", "evaluate", "get_content", "close")},
    # properties: reading them raises PlatformOnlyError, which Node's getters pass on
    "browser.cdp_url": ("browser", "cdp_url"),
    "browser.live_url": ("browser", "live_url"),
    "envd_access_token": ("envd_access_token",),
}


def _plain(value: Any) -> Any:
    """``value`` as plain JSON (results such as ``CommandResult`` encode via ``to_dict()``)."""
    return json.loads(dumps(value))


def _tool_catalog() -> dict[str, Any]:
    """What Node's toolkit is built from: the Python catalog, so the two cannot drift."""
    return {
        "tools": [
            {"name": s.name, "description": s.description, "parameters": s.parameters,
             "runsLocally": s.runs_locally}
            for s in SPECS
        ],
        "files": list(FILE_TOOLS),
        "browser": list(BROWSER_TOOLS),
        "mcpServer": {"defaultName": DEFAULT_MCP_SERVER_NAME,
                      "namePattern": MCP_SERVER_NAME.pattern},
    }


def node_handlers(runs: NodeRuns, abort: AsyncAbort) -> dict[str, Handler]:
    """The ``extra`` handlers of the instance's store RPC server."""

    async def kv_get(params: dict[str, Any]) -> Any:
        return await runs.context(params, "kv.get").kv.get(_arg(params, "key"),
                                                          params.get("type") or "text")

    async def kv_set(params: dict[str, Any]) -> None:
        await runs.context(params, "kv.set").kv.set(_arg(params, "key"), _arg(params, "value"))

    async def kv_delete(params: dict[str, Any]) -> None:
        await runs.context(params, "kv.delete").kv.delete(_arg(params, "key"))

    async def kv_list(params: dict[str, Any]) -> list[str]:
        return await runs.context(params, "kv.list").kv.list(params.get("prefix"))

    async def tools_specs(params: dict[str, Any]) -> dict[str, Any]:
        return _tool_catalog()

    async def tools_run(params: dict[str, Any]) -> Any:
        toolkit = runs.context(params, "tools.run").tools
        return await toolkit.runner.run(params.get("name"), params.get("args"))

    async def sandbox_call(params: dict[str, Any]) -> Any:
        ctx = runs.context(params, "sandbox.call")
        method, args = _arg(params, "method"), _arg(params, "args") or []
        path = _SANDBOX_METHODS.get(method) if isinstance(method, str) else None
        if path is None or not isinstance(args, list):
            raise MemoryValidationError(f"context.sandbox has no method {method!r}")
        target: Any = ctx.sandbox
        for name in path:
            target = getattr(target, name)
        result = target(*args)
        return _plain(await result if inspect.isawaitable(result) else result)

    async def tracer_attributes(params: dict[str, Any]) -> None:
        attributes = _arg(params, "attributes")
        runs.context(params, "tracer.setAttributes").tracer.set_attributes(attributes)

    async def tracer_span(params: dict[str, Any]) -> None:
        tracer = runs.context(params, "tracer.span").tracer
        span = tracer.start_span(str(params.get("name")), params.get("attributes") or {})
        for event in params.get("events") or []:
            span.add_event(str(event.get("name")), event.get("attributes") or {})
        span.status = str(params.get("status", "ok"))
        # ended in Node durationMs after it started: its log line and record say so
        span.started = time.perf_counter() - float(params.get("durationMs") or 0) / 1000
        span.end()

    async def abort_active_run(params: dict[str, Any]) -> dict[str, Any]:
        ctx = runs.context(params, "utils.abortActiveRun")
        conversation_id = params.get("conversationId")
        if not isinstance(conversation_id, str) or not conversation_id:
            raise MemoryValidationError(
                "abort_active_run: conversation_id must be a non-empty str, "
                f"not {conversation_id!r}"
            )
        aborted = await abort(conversation_id, ctx.run_id)
        found = latest(aborted)
        return {
            "aborted": found is not None,
            "conversation_id": conversation_id,
            "run_id": None if found is None else found.run_id,
            # Node runs of this instance, stopped at once (their Node thread is the caller's)
            "aborted_here": [run.run_id for run in aborted if run.run_id in runs],
        }

    async def stream_failed(params: dict[str, Any]) -> None:
        ctx = runs.context(params, "run.streamFailed")
        runs.stream_failed(ctx.run_id, str(_arg(params, "error")))

    return {
        "run.streamFailed": stream_failed,
        "kv.get": kv_get,
        "kv.set": kv_set,
        "kv.delete": kv_delete,
        "kv.list": kv_list,
        "tools.specs": tools_specs,
        "tools.run": tools_run,
        "sandbox.call": sandbox_call,
        "tracer.setAttributes": tracer_attributes,
        "tracer.span": tracer_span,
        "utils.abortActiveRun": abort_active_run,
    }
