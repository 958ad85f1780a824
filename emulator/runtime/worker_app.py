"""The ASGI app one worker process runs: a project's agents and cloud functions.

Every request gets a conversation id (the ``makers-conversation-id`` header,
or a new one) and a new run id, both echoed on the response. Agents get an
:class:`~.context.AgentContext`; cloud functions run via
:mod:`.cloud_functions`. Errors never escape: a handler that raises gives a
500 with a JSON body and a logged traceback, a body that is not JSON a 400,
an unknown route a 404 that names nothing but the request.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib
import inspect
import json
import logging
import os
import traceback
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

import makers_store
from makers_store.errors import MemoryValidationError

from .cloud_functions import run_cloud_function
from .context import AgentContext, AgentHandle, AgentRequest, FunctionContext, Utils
from .http_client import UpstreamError, request_json
from .loader import load_handler
from .responses import ResultError, SSEResponse, error_response, json_response, to_response
from .routes import Route as ProjectRoute
from .routes import discover
from .runs import ActiveRuns, Run, new_conversation_id, new_run_id
from .tracing import Tracer

logger = logging.getLogger("makers_store.serve")

_RUNTIME_DIR = str(Path(__file__).parent)
_IMPORTLIB_DIR = str(Path(importlib.__file__).parent)
INTERNAL_PREFIX = "/__makers/"
TOKEN_HEADER = "makers-internal-token"
CONVERSATION_HEADER = "makers-conversation-id"
RUN_HEADER = "makers-run-id"


@dataclass(frozen=True)
class WorkerSettings:
    project: Path
    store_url: str
    instance: int
    token: str
    #: The front's control port (abort fan-out); 0 when running without a front.
    control_port: int = 0


def _conversation_id(request: Request) -> str:
    value: bytes
    for name, value in request.scope["headers"]:
        if name == CONVERSATION_HEADER.encode():
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                return value.decode("latin-1")
    return ""


def parse_body(raw: bytes) -> Any:
    """The request body as JSON (``{}`` when empty); ValueError if it is not JSON."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"the request body is not valid JSON: {exc}") from exc


def project_traceback(exc: BaseException) -> str:
    """The traceback of an import failure without the import machinery's frames."""
    trace = traceback.TracebackException.from_exception(exc)
    trace.stack = traceback.StackSummary.from_list(
        [
            frame
            for frame in trace.stack
            if not frame.filename.startswith(("<frozen", _RUNTIME_DIR, _IMPORTLIB_DIR))
        ]
    )
    return "".join(trace.format()).rstrip()


async def _watch_disconnect(receive: Receive, run: Run) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            run.abort(disconnected=True)
            return


async def call_handler(handler: Any, ctx: AgentContext) -> Any:
    if inspect.isasyncgenfunction(handler):
        return handler(ctx)
    if inspect.iscoroutinefunction(handler):
        return await handler(ctx)
    if not callable(handler):
        raise ResultError(f"`handler` must be a function, not {type(handler).__name__}")
    result = await asyncio.to_thread(handler, ctx)
    return await result if inspect.isawaitable(result) else result


class WorkerApp:
    """Serves one project; one instance per worker process."""

    def __init__(
        self, settings: WorkerSettings, on_ready: Callable[[], None] | None = None
    ) -> None:
        self.settings = settings
        self.routes = discover(settings.project)
        self.runs = ActiveRuns()
        self.env: Mapping[str, str] = MappingProxyType(dict(os.environ))
        self.on_ready = on_ready
        self._store: makers_store.ContextStore | None = None
        self._sync_store: makers_store.SyncContextStore | None = None

    # --- lifecycle ---------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._store = makers_store.open_store(self.settings.store_url)
        self._sync_store = makers_store.open_sync_store(self.settings.store_url)
        if self.on_ready is not None:
            self.on_ready()
        try:
            yield
        finally:
            await self._store.close()
            await asyncio.to_thread(self._sync_store.close)

    def asgi(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self)], lifespan=self.lifespan)

    @property
    def store(self) -> makers_store.ContextStore:
        if self._store is None:
            raise RuntimeError("the worker's store is not open")
        return self._store

    @property
    def sync_store(self) -> makers_store.SyncContextStore:
        if self._sync_store is None:
            raise RuntimeError("the worker's store is not open")
        return self._sync_store

    # --- dispatch ----------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.url.path.startswith(INTERNAL_PREFIX):
            response = await self._internal(request)
        else:
            response = await self._public(request)
        await response(scope, receive, send)

    async def _public(self, request: Request) -> Response:
        cid = _conversation_id(request) or new_conversation_id()
        run_id = new_run_id()
        identity = {CONVERSATION_HEADER: cid.encode("utf-8"), RUN_HEADER: run_id.encode()}
        try:
            response = await self._route(request, cid, run_id)
        except ResultError as exc:
            logger.error("run %s: %s %s: %s", run_id, request.method, request.url.path, exc)
            response = error_response(500, str(exc), run_id=run_id)
        except Exception as exc:  # the server keeps serving whatever a handler does
            logger.exception("run %s: %s %s failed", run_id, request.method, request.url.path)
            response = error_response(500, f"{type(exc).__name__}: {exc}", run_id=run_id)
        names = {name.encode() for name in identity}
        response.raw_headers = [
            (k, v) for k, v in response.raw_headers if k not in names
        ] + [(name.encode(), value) for name, value in identity.items()]
        return response

    async def _route(self, request: Request, cid: str, run_id: str) -> Response:
        path = request.url.path
        agent = self.routes.agent_for(path)
        if agent is not None and request.method == "POST":
            return await self._agent(agent, request, cid, run_id)
        found = self.routes.function_for(path)
        if found is not None:
            route, params = found
            return await self._function(route, params, request, cid, run_id)
        if agent is not None:
            response = error_response(405, f"{request.method} is not allowed: agents take POST")
            response.headers["allow"] = "POST"
            return response
        return error_response(404, "not found", method=request.method, path=path)

    def _import(self, route: ProjectRoute) -> Any:
        try:
            return load_handler(route.module)
        except LookupError as exc:
            raise ResultError(f"{route.relative} {exc}") from None
        except Exception as exc:
            logger.error("%s failed to import:\n%s", route.relative, project_traceback(exc))
            raise ResultError(
                f"{route.relative} failed to import: {type(exc).__name__}: {exc}"
            ) from None

    async def _agent(
        self, route: ProjectRoute, request: Request, cid: str, run_id: str
    ) -> Response:
        raw = await request.body()
        try:
            body = parse_body(raw)
        except ValueError as exc:
            return error_response(400, str(exc))
        try:
            store = self.store.bind(cid)
        except MemoryValidationError as exc:
            return error_response(400, f"{CONVERSATION_HEADER} header: {exc}")
        handler = self._import(route)
        run = Run(cid, run_id)
        self.runs.start(run)
        watcher = asyncio.create_task(_watch_disconnect(request.receive, run))

        def end() -> None:
            watcher.cancel()
            self.runs.finish(run)

        ctx = AgentContext(
            request=AgentRequest(
                method=request.method,
                path=request.url.path,
                url=str(request.url),
                headers={
                    k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]
                },
                query=dict(request.query_params),
                body=body,
                raw_body=raw,
                signal=run.signal,
            ),
            env=self.env,
            conversation_id=cid,
            run_id=run_id,
            store=store,
            utils=Utils(run_id, self._abort_everywhere),
            tracer=Tracer(run_id),
        )
        try:
            result = await call_handler(handler, ctx)
            response = to_response(result, run, end)
        except ResultError as exc:
            end()
            logger.error("run %s: %s: %s", run_id, route.relative, exc)
            return error_response(500, str(exc), run_id=run_id)
        except Exception as exc:
            end()
            logger.exception("run %s: %s raised", run_id, route.relative)
            return error_response(500, f"{type(exc).__name__}: {exc}", run_id=run_id)
        if not isinstance(response, SSEResponse):
            end()
        return response

    async def _function(
        self,
        route: ProjectRoute,
        params: dict[str, str],
        request: Request,
        cid: str,
        run_id: str,
    ) -> Response:
        raw = await request.body()
        try:
            store = self.sync_store.bind(cid)
        except MemoryValidationError as exc:
            return error_response(400, f"{CONVERSATION_HEADER} header: {exc}")
        handler = self._import(route)
        context = FunctionContext(AgentHandle(store), cid, run_id, self.env, params)
        return await run_cloud_function(handler, route.relative, request, raw, context)

    # --- abort -------------------------------------------------------------

    async def _abort_everywhere(self, conversation_id: str, except_run: str | None) -> int:
        port = self.settings.control_port
        if port:
            try:
                status, data = await request_json(
                    "127.0.0.1",
                    port,
                    "POST",
                    INTERNAL_PREFIX + "abort",
                    headers=[(TOKEN_HEADER.encode(), self.settings.token.encode())],
                    payload={"conversation_id": conversation_id, "except_run": except_run},
                )
                if status == 200 and isinstance(data, dict):
                    return int(data.get("aborted", 0))
                logger.warning("abort fan-out answered %s; aborting on this instance only", status)
            except UpstreamError as exc:
                logger.warning("abort fan-out failed (%s); aborting on this instance only", exc)
        return self.runs.abort(conversation_id, except_run=except_run)

    # --- internal endpoints (front <-> worker) ------------------------------

    async def _internal(self, request: Request) -> Response:
        token = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(token.encode(), self.settings.token.encode()):
            return error_response(404, "not found", method=request.method, path=request.url.path)
        name = request.url.path[len(INTERNAL_PREFIX) :]
        if name == "abort" and request.method == "POST":
            try:
                data = parse_body(await request.body())
                cid = data["conversation_id"]
                except_run = data.get("except_run")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                return error_response(400, f"bad abort request: {exc}")
            return json_response({"aborted": self.runs.abort(cid, except_run=except_run)})
        return error_response(404, "not found", method=request.method, path=request.url.path)
