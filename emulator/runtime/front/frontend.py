"""The frontend on serve's port: what no agent or cloud function answers.

As on the platform's dev server, a request goes to the frontend when no
route takes it (:meth:`FrontendApp.takes`): an agent takes ``POST`` only,
a cloud function every method; hot-reload requests (:func:`is_hmr`) and
Next.js RSC requests (``_rsc=`` in the query) go to a dev server whatever
the routes say. The frontend is either

- a dev server (:mod:`.devserver`): HTTP relayed both ways as it comes,
  never held whole (:mod:`..http_client`), WebSocket upgrades spliced as
  raw bytes (:mod:`.upgrade`); or
- a built ``outputDirectory``, served as files with the platform's 404
  rules (:meth:`FrontendApp._static`).

Requests to a dev server are sent as to its own origin: ``Host``, and an
``Origin`` / ``Referer`` of the page's own origin, name ``localhost:<its
port>``, so a dev server that only trusts its own origin (Next.js's
``allowedDevOrigins``: the page would never hydrate) serves the app at any
address serve is opened by; a ``Location`` naming its origin is turned back
into the client's. Frontend answers carry no ``makers-*`` headers.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
import os
from pathlib import Path

from starlette.types import Receive, Scope, Send

from makers_store.text import printable_line

from ..errors import BodyRefused, ClientGone, UpstreamError
from ..http_client import Connection, Headers, ResponseHead
from ..platform_choices import FRONTEND_START_WAIT_S
from ..project.frontend import StaticSite
from ..project.routes import RouteTable
from ..wire import INTERNAL_HEADER_PREFIX
from .body import body_pieces, declared_length, unless_client_leaves
from .devserver import DevServer
from .headers import CLOSE, HOP_BY_HOP, header, send_json
from .limits import FrontLimits
from .upgrade import Pipe, Splices

logger = logging.getLogger("makers_store.serve")

#: Paths the platform's dev server always sends to the frontend (hot reload).
HMR_PREFIXES = (
    "/_next/webpack-hmr", "/__webpack_hmr", "/_vite/ws", "/__vite_hmr", "/sockjs-node",
    "/socket.io", "/_nuxt/", "/__nuxt_hmr",
)
#: The platform's answer when its frontend dev server cannot be reached.
BAD_GATEWAY = {"error": "Bad Gateway", "message": "Frontend dev server is temporarily unavailable"}
#: Seconds to wait for the dev server's answer to begin (a first compile is slow).
RESPONSE_TIMEOUT_S = 600.0
#: From the dev server: framing and hop-by-hop ones (uvicorn frames and dates its answer).
_FROM_DEV_DROPPED = {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server"}
_FILE_PIECE = 64 * 1024
#: The page for a path that is no file, when the site has neither 404.html nor index.html.
NOT_FOUND_PAGE = (
    b"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>404 Not Found</title></head>"
    b"<body><h1>404 Not Found</h1><p>No file of the built site answers this path.</p>"
    b"</body></html>\n"
)


def is_hmr(target: str, websocket: bool) -> bool:
    """Whether the platform's dev server takes ``target`` (path and query) as
    hot reload, which goes to the frontend before any route is looked at."""
    if target.startswith(HMR_PREFIXES):
        return True
    if websocket:
        return "hmr" in target
    return "hmr" in target and "_rsc=" not in target


def is_rsc(query: str) -> bool:
    """A Next.js React Server Components request (``?_rsc=``), the frontend's."""
    return query.startswith("_rsc=") or "&_rsc=" in query


def _target(scope: Scope) -> bytes:
    target: bytes = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    return target


def _is_websocket(scope: Scope) -> bool:
    upgrade = header(scope["headers"], b"upgrade") or b""
    return upgrade.lower() == b"websocket"


class FrontendApp:
    """The frontend of a served project: a dev server or a built site."""

    def __init__(
        self,
        routes: RouteTable,
        limits: FrontLimits,
        dev: DevServer | None = None,
        site: StaticSite | None = None,
    ) -> None:
        #: The routes the agents and cloud functions answer (replaced on --reload).
        self.routes = routes
        self.limits = limits
        self.dev = dev
        self.site = site
        self.splices = Splices()

    def takes(self, scope: Scope) -> bool:
        """Whether the request goes to the frontend rather than to a worker."""
        path: str = scope["path"]
        if self.dev is not None:
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + ("?" + query if query else "")
            if is_hmr(target, _is_websocket(scope)) or is_rsc(query):
                return True
        if scope["method"] == "POST" and self.routes.agent_for(path) is not None:
            return False
        return self.routes.function_for(path) is None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.dev is not None:
            await self._proxy(self.dev, scope, receive, send)
        elif self.site is not None:
            await self._static(self.site, scope, send)

    # --- requests to the dev server -------------------------------------------

    def _headers(self, scope: Scope, dev: DevServer) -> Headers:
        """The client's headers as the dev server gets them: as if sent to its own origin."""
        own = f"localhost:{dev.port}".encode()
        host = header(scope["headers"], b"host") or b""
        page = b"http://" + host  # the origin the client's page was loaded from
        headers: Headers = []
        for name, value in scope["headers"]:
            if name in HOP_BY_HOP or name.startswith(INTERNAL_HEADER_PREFIX):
                continue
            if name == b"origin" and value == page:
                value = b"http://" + own
            elif name == b"referer" and (value == page or value.startswith(page + b"/")):
                value = b"http://" + own + value[len(page):]
            headers.append((name, value))
        headers.append((b"host", own))
        client = scope.get("client")
        if client:
            headers.append((b"x-forwarded-for", str(client[0]).encode()))
        headers.append((b"x-forwarded-proto", scope.get("scheme", "http").encode()))
        return headers

    def _answer_headers(self, head: ResponseHead, scope: Scope, dev: DevServer) -> Headers:
        host = header(scope["headers"], b"host")
        origins = [f"http://{name}:{dev.port}".encode() for name in ("localhost", "127.0.0.1")]
        origins.append(f"http://[::1]:{dev.port}".encode())
        headers: Headers = []
        for name, value in head.headers:
            if name in _FROM_DEV_DROPPED:
                continue
            if name == b"location" and host:
                for origin in origins:
                    if value == origin or value.startswith(origin + b"/"):
                        value = b"http://" + host + value[len(origin):]
                        break
            headers.append((name, value))
        return headers

    async def _reach(self, dev: DevServer, scope: Scope) -> Connection | None:
        if not await dev.wait_ready(FRONTEND_START_WAIT_S):
            return None
        try:
            connection, _ = await dev.connect(within_s=10.0)
        except UpstreamError as exc:
            logger.warning("%s %s -> 502: frontend: %s", scope["method"],
                           printable_line(scope["path"]), exc)
            return None
        return connection

    async def _proxy(self, dev: DevServer, scope: Scope, receive: Receive, send: Send) -> None:
        try:  # refused before reading any of it, as for the agents
            length = declared_length(scope["headers"], self.limits)
        except BodyRefused as exc:
            await send_json(send, exc.status, {"error": exc.message}, [CLOSE])
            return
        connection = await self._reach(dev, scope)
        if connection is None:
            await send_json(send, 502, BAD_GATEWAY)
            return
        try:
            chunked = length is None and header(scope["headers"], b"transfer-encoding") is not None
            try:
                await connection.send_streamed(
                    scope["method"], _target(scope), self._headers(scope, dev),
                    body_pieces(receive, self.limits), None if chunked else (length or 0),
                )
            except ClientGone:
                return
            except BodyRefused as exc:
                await send_json(send, exc.status, {"error": exc.message}, [CLOSE])
                return
            except UpstreamError:
                await send_json(send, 502, BAD_GATEWAY)
                return
            finished = asyncio.Event()
            await unless_client_leaves(
                receive, self._relay(dev, connection, scope, send, finished), finished
            )
        finally:
            await connection.close()

    async def _relay(
        self,
        dev: DevServer,
        connection: Connection,
        scope: Scope,
        send: Send,
        finished: asyncio.Event,
    ) -> None:
        """The dev server's answer, each piece sent on as it arrives."""
        try:
            head = await asyncio.wait_for(connection.read_head(), RESPONSE_TIMEOUT_S)
        except (UpstreamError, TimeoutError) as exc:
            logger.warning("%s %s -> 502: frontend: %s", scope["method"],
                           printable_line(scope["path"]), exc)
            await send_json(send, 502, BAD_GATEWAY)
            return
        headers = self._answer_headers(head, scope, dev)
        await send({"type": "http.response.start", "status": head.status, "headers": headers})
        try:
            async for piece in connection.iter_body():
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        except UpstreamError as exc:
            # the answer is cut short: uvicorn closes the connection (the client sees it)
            logger.warning("%s %s: frontend: %s", scope["method"],
                           printable_line(scope["path"]), exc)
            return
        finished.set()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # --- WebSocket upgrades (Splicer, for limits.GuardedH11Protocol) ----------

    def takes_upgrade(self, scope: Scope) -> bool:
        """A WebSocket upgrade goes to the dev server unless a route takes it.

        The platform's dev server sends only hot-reload sockets to its frontend
        and drops other upgrades no function takes, Vite's own socket (``/?token=``)
        among them; Vite then falls back to its own port. Here every such upgrade
        goes to the dev server, so hot reload works through serve's port alone.
        """
        return self.dev is not None and self.takes(scope)

    def splice(self, scope: Scope, transport: asyncio.Transport, early: bytes) -> None:
        client = self.splices.client_side(transport)
        asyncio.get_running_loop().create_task(self._splice(scope, client, early))

    async def _splice(self, scope: Scope, client: Pipe, early: bytes) -> None:
        assert self.dev is not None
        dev = self.dev
        head = [scope["method"].encode() + b" " + _target(scope) + b" HTTP/1.1\r\n"]
        upgrade_headers = [
            (name, value) for name, value in scope["headers"] if name in (b"connection", b"upgrade")
        ]
        for name, value in [*self._headers(scope, dev), *upgrade_headers]:
            head.append(name + b": " + value + b"\r\n")
        head.append(b"\r\n")
        if await dev.wait_ready(FRONTEND_START_WAIT_S):
            hosts = [dev.host or "127.0.0.1", "::1", "127.0.0.1"]
            for host in dict.fromkeys(hosts):
                try:
                    await self.splices.join(client, host, dev.port, b"".join(head) + early)
                except OSError:
                    continue
                return
        logger.warning("upgrade %s -> 502: frontend: the dev server is not reachable",
                       printable_line(scope["path"]))
        self.splices.refuse(client, b"502 Bad Gateway")

    # --- a built site ----------------------------------------------------------

    async def _static(self, site: StaticSite, scope: Scope, send: Send) -> None:
        """The file the path names; else 404 with 404.html, else index.html, else a page."""
        status = 200
        file = _site_file(site.directory, scope["path"].lstrip("/") or "index.html")
        if file is None:
            status = 404
            file = _site_file(site.directory, "404.html") or _site_file(
                site.directory, "index.html"
            )
        if file is None:
            headers = [(b"content-type", b"text/html; charset=utf-8"),
                       (b"content-length", str(len(NOT_FOUND_PAGE)).encode())]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": NOT_FOUND_PAGE})
            return
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        size = file.stat().st_size
        headers = [(b"content-type", kind.encode()), (b"content-length", str(size).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        with file.open("rb") as stream:
            while piece := await asyncio.to_thread(stream.read, _FILE_PIECE):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _site_file(directory: Path, relative: str) -> Path | None:
    """``relative`` (a URL path, decoded) as a file inside ``directory``, or None."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts) or any(os.sep in part for part in parts):
        return None
    path = directory.joinpath(*parts) if parts else directory
    try:
        resolved = path.resolve()
    except OSError:
        return None
    if not resolved.is_relative_to(directory) or not resolved.is_file():
        return None
    return resolved
