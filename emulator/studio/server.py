"""``makers-store studio``: the Studio on a port of its own.

The port is bound before anything is printed (a port in use is a clear
error, ``--port 0`` picks a free one); the URL printed carries nothing
secret: the write token lives only in the pages served.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import webbrowser
from collections.abc import Callable

from makers_store import open_store
from makers_store.errors import BackendError

from . import require_extra, security, studio_app

#: Seconds open event streams get to end when the Studio stops.
GRACEFUL_S = 1


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]") or "0.0.0.0", port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BackendError(
                f"cannot listen on {host}:{port}: port {port} is already in use; "
                "choose another with --port, or --port 0 for a free one"
            ) from exc
        raise BackendError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def url_of(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0", "*") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def bind_warning(host: str) -> str | None:
    """Why binding ``host`` lets others in (None for loopback)."""
    if security.is_loopback(host):
        return None
    return (
        f"--host {host or '*'} is reachable from other machines: anyone who can reach it "
        "can read every conversation in the store (writes still need the page's token)"
    )


def run_studio(
    store_url: str | None,
    host: str,
    port: int,
    *,
    open_browser: bool = False,
    on_ready: Callable[[str, str], None] | None = None,
) -> None:
    """Serve the Studio until Ctrl-C; ``on_ready(url, store_label)`` once listening."""
    require_extra()
    sock = bind(host, port)
    try:
        asyncio.run(_serve(store_url, host, sock, open_browser, on_ready))
    finally:
        sock.close()


async def _serve(
    store_url: str | None,
    host: str,
    sock: socket.socket,
    open_browser: bool,
    on_ready: Callable[[str, str], None] | None,
) -> None:
    from ..runtime.uvicorn_server import Server, on_stop_signals, quiet_config, stopper
    from .app import StudioConfig

    store = open_store(store_url, create=False)
    try:
        label = store.location.url if store.location else ""
        config = StudioConfig(
            store=store,
            token=security.new_token(),
            hosts=security.allowed_hosts(host),
            store_label=label,
        )
        # serve's uvicorn setup: Ctrl-C / SIGTERM stop it gracefully, exit code 0
        server = Server(quiet_config(studio_app(config), graceful_s=GRACEFUL_S))
        on_stop_signals(stopper(server))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():  # noqa: ASYNC110 - uvicorn sets a flag, no event
            await asyncio.sleep(0.02)
        if server.started:  # listening: the URL answers now
            url = url_of(host, sock.getsockname()[1])
            if on_ready is not None:
                on_ready(url, label)
            if open_browser:
                webbrowser.open(url)
        await serving
    finally:
        await store.close()
