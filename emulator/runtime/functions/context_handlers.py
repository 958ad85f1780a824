"""Cloud functions written agent-style: ``async def handler(context)``, the context handler.

The current official claude-agent-starter-python template writes its
``cloud-functions/`` this way (the decision and its evidence:
:data:`..platform_choices.CONTEXT_HANDLER_ENTRY`). ``context`` is agent-like:
``request`` (``body`` as an agent's, see :mod:`..worker.request_body`; ``raw_body``,
``headers``, ``query``, ``method``, ``path``), ``env`` (a copy), ``conversation_id``,
``run_id`` and ``agent`` = ``{conversation_id, store}``, where ``store`` is
the async store bound as an agent's is, without the LangGraph adapters
(:mod:`.store`); ``params`` (the ``[id]`` path parameters) is an
extra of this emulator. There is no ``utils``, ``tools`` or ``kv``: those
are agents'.

The result becomes the response the way a non-streaming agent's does
(:func:`..worker.responses.to_response`: a dict is JSON, ``{"status_code": n,
"body": ...}`` an envelope...). Cloud functions do not stream, so a stream
is refused. The cloud-function limits apply (:mod:`.limits`): at
the wall-clock limit an async handler is cancelled; a plain ``def handler``
(run in a thread, which cannot be killed) keeps running, its answer dropped,
with ``context.request.signal`` set so it can notice.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from makers_store import ContextStore

from ..platform_choices import INVALID_JSON_BODY_STATUS
from ..project.routes import Route
from ..worker.agent_run import agent_request, call_handler
from ..worker.context import AgentHandle, AgentRequest
from ..worker.request_body import handler_body
from ..worker.responses import SSEResponse, error_response, to_response
from ..worker.runs import Run
from .limits import FunctionLimits, timed_out
from .store import CloudFunctionStore

logger = logging.getLogger("makers_store.serve")
_warned_sync: set[str] = set()


@dataclass
class HandlerContext:
    """What a context handler's ``handler(context)`` receives."""

    request: AgentRequest
    env: dict[str, str]
    conversation_id: str
    run_id: str
    agent: AgentHandle[ContextStore]
    #: The ``[id]`` / ``[[rest]]`` path parameters (an extra of this emulator).
    params: dict[str, str] = field(default_factory=dict)

    @property
    def store(self) -> CloudFunctionStore[ContextStore]:
        return self.agent.store


def _warn_if_sync(handler: Any, route: Route) -> None:
    is_async = inspect.iscoroutinefunction(handler) or inspect.isasyncgenfunction(handler)
    if is_async or route.relative in _warned_sync:
        return
    _warned_sync.add(route.relative)
    logger.warning(
        "%s: `handler` is not `async def`; it runs in a thread here, and it cannot await "
        "context.agent.store (async, as the templates use it): write `async def handler(context)`",
        route.relative,
    )


async def _refuse_stream(response: SSEResponse, route: Route, run_id: str) -> Response:
    close = getattr(response.source, "aclose", None)
    if close is not None:
        await close()
    message = (
        f"{route.relative} returned a stream; cloud functions do not stream on the platform: "
        "return the whole body (a dict, a str...), or stream from an agent under agents/"
    )
    logger.error("run %s: %s", run_id, message)
    return error_response(500, message, run_id=run_id)


async def run_context_handler(
    handler: Any,
    route: Route,
    request: Request,
    raw: bytes,
    agent: AgentHandle[ContextStore],
    run_id: str,
    env: dict[str, str],
    params: dict[str, str],
    limits: FunctionLimits,
) -> Response:
    """Answer ``request`` with ``handler(context)``.

    ``agent.store`` is already bound to the request's conversation (or to
    none) and its run. The caller adds the identity headers.
    """
    if not callable(handler):
        return error_response(500, f"{route.relative}: `handler` must be a function")
    try:
        body = handler_body(route, request.method, raw, request.headers.get("content-type"))
    except ValueError as exc:
        return error_response(INVALID_JSON_BODY_STATUS, str(exc))
    run = Run(agent.conversation_id, run_id)
    context = HandlerContext(
        request=agent_request(request, body, raw, run.signal),
        env=dict(env),
        conversation_id=agent.conversation_id,
        run_id=run_id,
        agent=agent,
        params=params,
    )
    _warn_if_sync(handler, route)
    deadline = asyncio.timeout(limits.wall_clock_s)
    try:
        async with deadline:
            result = await call_handler(handler, context)
    except TimeoutError:
        if not deadline.expired():
            raise  # the handler's own TimeoutError: a 500 like any other error
        run.signal.set()  # a thread that runs on can notice
        logger.error("%s: still running at the cloud-function wall-clock limit; answered 504",
                     route.relative)
        return timed_out(route.relative, limits)
    response = to_response(result, run, lambda status: None)
    if isinstance(response, SSEResponse):
        return await _refuse_stream(response, route, run_id)
    return response
