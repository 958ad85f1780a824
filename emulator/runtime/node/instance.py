"""The Node side of one instance, as its Python worker (:mod:`..worker.app`) sees it.

Made only when the project has Node routes: it starts the Node worker with
the store RPC server (:mod:`.worker`), gives a Node agent route its
``handler(ctx)`` and answers a Node cloud function under the platform's
limits (:mod:`.proxy`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from makers_store import ContextStore

from ..functions.limits import FunctionLimits, timed_out
from ..project.routes import Route
from ..worker.context import AgentContext
from .handlers import AsyncAbort, NodeRuns, node_handlers
from .proxy import agent_handler, function_response
from .setup import NodeRuntime
from .worker import NodeWorker


class NodeInstance:
    def __init__(self, runtime: dict[str, str | None], project: Path, routes: tuple[Route, ...]):
        self.runs = NodeRuns()
        self.worker = NodeWorker(NodeRuntime.from_json(runtime), project, routes)

    async def start(self, store: ContextStore, abort: AsyncAbort) -> None:
        await self.worker.start(store, node_handlers(self.runs, abort))

    async def close(self) -> None:
        await self.worker.close()

    def agent_handler(self, route: Route) -> Callable[[AgentContext], Awaitable[Any]]:
        return agent_handler(self.worker, self.runs, route)

    async def function(
        self,
        route: Route,
        params: dict[str, str],
        request: Request,
        raw: bytes,
        conversation_id: str,
        run_id: str,
        limits: FunctionLimits,
    ) -> Response:
        """The function's answer; the platform's 504 when it outlives the wall-clock limit."""
        answer = function_response(
            self.worker, route, request, raw, conversation_id, run_id, params
        )
        if limits.wall_clock_s is None:
            return await answer
        try:
            return await asyncio.wait_for(answer, limits.wall_clock_s)
        except TimeoutError:
            return timed_out(route.relative, limits)
