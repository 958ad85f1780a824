"""The ASGI app one worker process runs: a project's agents and cloud functions.

Every request has a run id (given by the front in an internal header, so the
front knows it at dispatch; made here when there is no front) and maybe a
conversation id (the ``makers-conversation-id`` header; "" when absent, as
on the platform), echoed on the response. Agents run through
:mod:`.agent_run`; cloud functions through the ``functions/`` room (handler
classes, framework apps, context handlers); Node routes through this
instance's :class:`~..node.instance.NodeInstance`. This module is where the
worker takes in those rooms; they build on the worker's ``ctx``, responses
and runs, never on this app. Errors never escape: a handler that raises gives
a 500 with a JSON body and a logged traceback, a body that is not JSON a 400,
an unknown route a 404 that names nothing but the request. ``/health`` and
``/agent-metrics`` are answered here unless a project route claims them.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib
import inspect
import logging
import os
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

import makers_store
from makers_store import Portal
from makers_store.errors import MemoryValidationError

from ..errors import ResultError
from ..functions.context_handlers import run_context_handler
from ..functions.framework_apps import run_function_app
from ..functions.handler_classes import run_cloud_function
from ..functions.limits import FunctionLimits, read_body
from ..functions.store import CloudFunctionStore
from ..node.instance import NodeInstance
from ..platform_choices import HEALTH_PATH, METRICS_PATH
from ..project.routes import Route as ProjectRoute
from ..project.routes import discover
from ..wire import (
    ABORT_PATH,
    CONVERSATION_HEADER,
    INTERNAL_PREFIX,
    RUN_HEADER,
    RUN_ID_INTERNAL_HEADER,
    TOKEN_HEADER,
    WorkerSettings,
    is_run_id,
    new_run_id,
)
from . import trace_log
from .aborts import InstanceAborts
from .agent_run import AgentRunner
from .context import AgentHandle, FunctionContext, ToolsSetup
from .kv import KVSpaces
from .loader import load_handler
from .request_body import parse_body
from .responses import error_response, json_response
from .runs import ActiveRuns

logger = logging.getLogger("makers_store.serve")

#: Frames of the whole runtime (every room) are left out of a project's import traceback.
_RUNTIME_DIR = str(Path(__file__).parents[1])
_IMPORTLIB_DIR = str(Path(importlib.__file__).parent)
#: Newest records /agent-metrics lists by default, and at most.
METRICS_DEFAULT_LIMIT = 50
METRICS_MAX_LIMIT = 1000


def _header(request: Request, name: str) -> bytes | None:
    wanted = name.encode()
    for key, value in request.scope["headers"]:
        if key == wanted:
            return bytes(value)
    return None


def conversation_id_of(request: Request) -> str:
    """The ``makers-conversation-id`` header ("" when absent); ValueError unless UTF-8."""
    value = _header(request, CONVERSATION_HEADER)
    if value is None:
        return ""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"the {CONVERSATION_HEADER} header is not UTF-8") from None


def _run_id_of(request: Request) -> str:
    given = (_header(request, RUN_ID_INTERNAL_HEADER) or b"").decode("ascii", "replace")
    return given if is_run_id(given) else new_run_id()


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


def _failure(exc: BaseException) -> str:
    """``ModuleNotFoundError: No module named 'x'``: an import failure in one line."""
    return f"{type(exc).__name__}: {exc}"


class WorkerApp:
    """Serves one project; one instance per worker process."""

    def __init__(
        self, settings: WorkerSettings, on_ready: Callable[[], None] | None = None
    ) -> None:
        self.settings = settings
        self.routes = discover(settings.project)
        self.runs = ActiveRuns()
        self.aborts = InstanceAborts(
            self.runs, settings.instance, settings.control_port, ABORT_PATH,
            {TOKEN_HEADER: settings.token},
        )
        self.env: dict[str, str] = dict(os.environ)
        self.on_ready = on_ready
        #: module -> its import failure (``Type: message``), reported already
        #: (with its traceback, here or by the instance that shows them): a
        #: request to the route then says it in one line
        self._import_failures: dict[str, str] = {}
        self._store: makers_store.ContextStore | None = None
        self._sync_store: makers_store.SyncContextStore | None = None
        #: This instance's Node worker (started with the store when there are Node routes).
        self.node: NodeInstance | None = None
        self.agents = AgentRunner(
            store=lambda: self.store,
            load=self._import,
            runs=self.runs,
            kv=KVSpaces(),
            env=self.env,
            tools=ToolsSetup(settings.project, settings.framework, settings.tools_enabled),
            abort=self.aborts.everywhere,
            instance=settings.instance,
            timeout_s=settings.agent_timeout_s,
        )

    # --- lifecycle ---------------------------------------------------------

    def check_imports(self) -> None:
        """Import every route module now, so a broken one is reported at start, not on use.

        The traceback is shown once per failing route: by the instance the
        front asks to (``settings.report_imports``: the first of a start or a
        reload), the others and replacements saying it in one line.
        """
        for route in self.routes.all:
            if route.language == "node":
                continue  # the Node worker imports these (and reports failures) as it starts
            try:
                module = importlib.import_module(route.module)
            except Exception as exc:
                failure = _failure(exc)
                self._import_failures[route.module] = failure
                if self.settings.report_imports:
                    logger.error(
                        "ERROR %s failed to import; requests to %s will answer 500:\n%s",
                        route.relative,
                        route.path,
                        project_traceback(exc),
                    )
                else:
                    logger.error(
                        "ERROR %s failed to import (%s); requests to %s will answer 500",
                        route.relative,
                        failure,
                        route.path,
                    )
                continue
            handler = getattr(module, "handler", None)
            if route.runtime != "agent":
                continue
            if handler is None:
                logger.error("ERROR %s defines no `handler`", route.relative)
            elif not (inspect.iscoroutinefunction(handler) or inspect.isasyncgenfunction(handler)):
                logger.warning(
                    "%s: `handler` is not `async def`; the platform requires "
                    "`async def handler(ctx)` (it runs here in a thread)",
                    route.relative,
                )

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # One store per worker: agents use it async, cloud functions (sync code,
        # in threads) through the sync facade on a portal thread of its own;
        # every backend takes calls from any event loop (docs/backends.md).
        self._store = makers_store.open_store(self.settings.store_url)
        portal = Portal()
        self._sync_store = makers_store.SyncContextStore(self._store, portal)
        await self._start_node()
        if self.on_ready is not None:
            self.on_ready()
        try:
            yield
        finally:
            if self.node is not None:
                await self.node.close()
            await self._store.close()  # releases what the portal's loop holds too
            await asyncio.to_thread(portal.stop)

    async def _start_node(self) -> None:
        """Start this instance's Node worker when the project has Node routes."""
        if self.settings.node is None or not any(r.language == "node" for r in self.routes.all):
            return
        self.node = NodeInstance(self.settings.node, self.settings.project, self.routes.all)
        await self.node.start(self.store, self.aborts.everywhere_async)

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
        run_id = _run_id_of(request)
        try:
            cid = conversation_id_of(request)
        except ValueError as exc:
            cid, response = "", error_response(400, str(exc))
        else:
            response = await self._guarded(request, cid, run_id)
        identity = {RUN_HEADER: run_id.encode()}
        if cid:  # no conversation, no header (as on the platform)
            identity[CONVERSATION_HEADER] = cid.encode("utf-8")
        names = {CONVERSATION_HEADER.encode(), RUN_HEADER.encode()}
        response.raw_headers = [
            (k, v) for k, v in response.raw_headers if k not in names
        ] + [(name.encode(), value) for name, value in identity.items()]
        return response

    async def _guarded(self, request: Request, cid: str, run_id: str) -> Response:
        try:
            return await self._route(request, cid, run_id)
        except ResultError as exc:
            logger.error("run %s: %s %s: %s", run_id, request.method, request.url.path, exc)
            return error_response(500, str(exc), run_id=run_id)
        except ClientDisconnect:  # the front gave up on the body (timeout, cap) or the client left
            logger.info("run %s: %s %s: the request body was cut off", run_id, request.method,
                        request.url.path)
            return error_response(400, "the request body was cut off", run_id=run_id)
        except Exception as exc:  # the server keeps serving whatever a handler does
            logger.exception("run %s: %s %s failed", run_id, request.method, request.url.path)
            return error_response(500, f"{type(exc).__name__}: {exc}", run_id=run_id)

    async def _route(self, request: Request, cid: str, run_id: str) -> Response:
        path = request.url.path
        agent = self.routes.agent_for(path)
        # a Node agent also takes CORS preflights (onRequestOptions, or onRequest checking
        # context.request.method, as the AI-Assistant template does)
        if agent is not None and (
            request.method == "POST" or (agent.language == "node" and request.method == "OPTIONS")
        ):
            return await self.agents.run(agent, request, cid, run_id)
        found = self.routes.function_for(path)
        if found is not None:
            route, params = found
            return await self._function(route, params, request, cid, run_id)
        if agent is not None:
            response = error_response(405, f"{request.method} is not allowed: agents take POST")
            response.headers["allow"] = "POST"
            return response
        builtin = self._builtin(request)
        if builtin is not None:
            return builtin
        return error_response(404, "not found", method=request.method, path=path)

    def _builtin(self, request: Request) -> Response | None:
        """The runtime's own routes, reached only when no project route matched."""
        path = request.url.path.rstrip("/") or "/"
        if path == HEALTH_PATH:
            return json_response({"status": "ok", "route_count": len(self.routes.all)})
        if path == METRICS_PATH and request.method in ("GET", "HEAD"):
            try:
                limit = int(request.query_params.get("limit", METRICS_DEFAULT_LIMIT))
            except ValueError:
                return error_response(400, "limit must be an integer")
            limit = max(1, min(limit, METRICS_MAX_LIMIT))
            path_ = trace_log.trace_path(self.settings.project)
            runs = trace_log.recent_records(path_, limit)
            return json_response({"trace_file": str(path_), "runs": runs})
        return None

    def _import(self, route: ProjectRoute) -> Any:
        if route.language == "node":
            return self._node_agent(route)
        try:
            return load_handler(route.module, route.entry_attribute)
        except LookupError as exc:
            raise ResultError(f"{route.relative} {exc}") from None
        except Exception as exc:
            failure = _failure(exc)
            # shown at start already: the request's own error line says it again,
            # in one line; a different failure (the module changed since, or
            # fails only sometimes) gets its traceback
            if self._import_failures.get(route.module) != failure:
                self._import_failures[route.module] = failure
                logger.error("%s failed to import:\n%s", route.relative, project_traceback(exc))
            raise ResultError(f"{route.relative} failed to import: {failure}") from None

    def _node_agent(self, route: ProjectRoute) -> Any:
        if self.node is None:
            raise ResultError(f"{route.relative}: this instance has no Node worker")
        return self.node.agent_handler(route)

    async def _function(
        self,
        route: ProjectRoute,
        params: dict[str, str],
        request: Request,
        cid: str,
        run_id: str,
    ) -> Response:
        limits = FunctionLimits.for_serve(self.settings.function_limits)
        raw = await read_body(request, limits)
        if isinstance(raw, Response):
            return raw  # 413
        if route.language == "node":
            if self.node is None:
                raise ResultError(f"{route.relative}: this instance has no Node worker")
            return await self.node.function(route, params, request, raw, cid, run_id, limits)
        try:
            # no header: a store bound to no conversation; always bound to the run
            store = self.sync_store.bind(cid or None, run_id=run_id)
        except MemoryValidationError as exc:
            return error_response(400, f"{CONVERSATION_HEADER} header: {exc}")
        entry = self._import(route)
        if route.entry == "context_handler":  # async def handler(context): the async store
            async_store = self.store.bind(cid or None, run_id=run_id)  # cid checked above
            handle = AgentHandle(cid, CloudFunctionStore(async_store))
            return await run_context_handler(
                entry, route, request, raw, handle, run_id, self.env, params, limits
            )
        agent = AgentHandle(cid, CloudFunctionStore(store))
        context = FunctionContext(agent, cid, run_id, self.env, params)
        if route.owns_subtree:
            return await run_function_app(entry, route, request, raw, context, limits)
        return await run_cloud_function(entry, route.relative, request, raw, context, limits)

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
                dispatched = {str(k): float(v) for k, v in data.get("dispatched", {}).items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                return error_response(400, f"bad abort request: {exc}")
            aborted = self.runs.abort(cid, except_run=except_run, dispatched=dispatched)
            return json_response({"aborted": [asdict(run) for run in aborted]})
        return error_response(404, "not found", method=request.method, path=request.url.path)
