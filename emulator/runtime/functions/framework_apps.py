"""Cloud functions in framework mode: a Flask / Django (WSGI) or FastAPI (ASGI) app.

A file whose entry is ``app = Flask(...)``, ``app = FastAPI(...)`` or
``application = get_wsgi_application()`` owns its route and every path below
it, with the route prefix stripped (platform-runtime.md §1.4, §5):
``cloud-functions/api/index.py`` answers ``/api/users`` and the app sees
``/users``. The request goes in the ASGI way a mount does: ``scope["path"]``
keeps the full path and ``scope["root_path"]`` is the prefix, so Starlette /
FastAPI route on what follows it, and WSGI apps (via ``a2wsgi``) get
``SCRIPT_NAME="/api"`` and ``PATH_INFO="/users"``. A request for the prefix
itself (``/api``) reaches the app as ``/``. Whether an object is ASGI or WSGI
is read from the object (an ``async`` ``__call__`` is ASGI), not from its
framework's name.

How an app reaches ``context`` is UNKNOWN on the platform. Here it is
:data:`..platform_choices.FUNCTION_CONTEXT_KEY` in the ASGI scope
(``request.scope["makers.context"]`` in FastAPI) and in the WSGI environ
(``flask.request.environ["makers.context"]``).

Cloud functions do not stream, so the app's whole response is collected,
then sent; that is also what lets a slow app still get its 504 at the time
limit. ASGI apps are cancelled at the limit; a WSGI app's thread cannot be,
and runs on until it returns (its answer is dropped).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope

from makers_store.errors import missing_extra

from ..platform_choices import FUNCTION_CONTEXT_KEY
from ..project.routes import Route
from ..worker.context import FunctionContext
from ..worker.responses import error_response
from .limits import FunctionLimits, timed_out

logger = logging.getLogger("makers_store.serve")

#: Threads per WSGI app (a2wsgi's pool): requests one app may run at once.
WSGI_THREADS = 10
_mounted: dict[str, ASGIApp] = {}

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _is_asgi(app: Any) -> bool:
    if inspect.isfunction(app):
        return inspect.iscoroutinefunction(app)
    return inspect.iscoroutinefunction(type(app).__call__)


def _wsgi_with_context(app: WSGIApp) -> WSGIApp:
    def with_context(
        environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        environ[FUNCTION_CONTEXT_KEY] = environ["asgi.scope"][FUNCTION_CONTEXT_KEY]
        return app(environ, start_response)

    return with_context


def _as_asgi(route: Route, app: Any) -> ASGIApp:
    """The route's app as an ASGI callable, built once per worker process."""
    known = _mounted.get(route.module)
    if known is not None:
        return known
    mounted: ASGIApp
    if _is_asgi(app):
        mounted = app
    elif callable(app):
        try:
            from a2wsgi import WSGIMiddleware
        except ImportError:
            raise missing_extra("a2wsgi", "serve") from None
        wsgi: Any = _wsgi_with_context(app)
        mounted = cast(ASGIApp, WSGIMiddleware(wsgi, workers=WSGI_THREADS))
    else:
        raise TypeError(f"`{route.entry_attribute}` is a {type(app).__name__}, not a web app")
    _mounted[route.module] = mounted
    return mounted


def route_prefix(path: str, segments: int) -> str:
    """The first ``segments`` non-empty segments of ``path`` ("/api" of "/api/users")."""
    if segments == 0:
        return ""
    parts = path.split("/")
    seen = 0
    for index, part in enumerate(parts):
        if part:
            seen += 1
            if seen == segments:
                return "/".join(parts[: index + 1])
    return path


def _app_scope(request: Request, route: Route, context: FunctionContext) -> Scope:
    scope = dict(request.scope)
    path: str = scope["path"]
    prefix = route_prefix(path, len(route.segments))
    if path == prefix:
        scope["path"] = path + "/"
        scope["raw_path"] = (scope.get("raw_path") or path.encode("utf-8")) + b"/"
    scope["root_path"] = scope.get("root_path", "") + prefix
    scope[FUNCTION_CONTEXT_KEY] = context
    scope.pop("router", None)
    scope.pop("endpoint", None)
    scope.pop("path_params", None)
    return scope


class _Collected:
    """The app's response, gathered from its ``send`` calls."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            self.body.append(bytes(message.get("body", b"")))
            self.complete = not message.get("more_body", False)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The already-read body once, then the client's own messages (its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def run_function_app(
    app: Any,
    route: Route,
    request: Request,
    body: bytes,
    context: FunctionContext,
    limits: FunctionLimits,
) -> Response:
    """Answer ``request`` with the framework app of ``route`` (the module's entry)."""
    try:
        asgi = _as_asgi(route, app)
    except TypeError as exc:
        return error_response(500, f"{route.relative}: {exc}")
    collected = _Collected()
    call = asgi(_app_scope(request, route, context), _replay(body, request.receive), collected.send)
    try:
        await asyncio.wait_for(call, limits.wall_clock_s)
    except TimeoutError:
        logger.error("%s: still running at the cloud-function wall-clock limit; answered 504",
                     route.relative)
        return timed_out(route.relative, limits)
    except Exception:
        if not collected.complete:
            raise  # the worker answers 500 and logs the traceback
        # Starlette re-raises after its own error page: send the page
        logger.exception("%s raised after sending its response", route.relative)
    if not collected.status:
        return error_response(500, f"{route.relative}: the app sent no response")
    if not collected.complete:
        logger.warning("%s: the app returned before finishing its response body", route.relative)
    headers = [(k, v) for k, v in collected.headers if k != b"content-length"]
    data = b"".join(collected.body)
    if request.method != "HEAD" and collected.status >= 200 and collected.status not in (204, 304):
        headers.append((b"content-length", str(len(data)).encode()))
    response = Response(status_code=collected.status)
    response.raw_headers = headers
    response.body = data if request.method != "HEAD" else b""
    return response
