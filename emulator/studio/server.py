"""``makers-store studio``: the Studio on a port of its own.

The port is bound before anything is printed (a port in use is a clear
error, ``--port 0`` picks a free one); the URL printed carries nothing
secret: the write token lives only in the pages served.
"""

from __future__ import annotations

import asyncio
import socket
import webbrowser
from collections.abc import Callable

from makers_store import open_store

from ..runtime import listening
from . import require_extra, security, studio_app

#: Seconds a request still running gets when the Studio stops (its event
#: streams end at once: they never end by themselves).
GRACEFUL_S = 1


#: What anyone who reaches the Studio's port can do (the reason for the bind warning).
STUDIO_EXPOSES = (
    "anyone who can reach it can read every conversation in the store "
    "(writes still need the page's token)"
)


def bind_warning(host: str) -> str | None:
    """Why binding ``host`` lets others in (None for loopback)."""
    return listening.bind_warning(host, STUDIO_EXPOSES)


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
    sock = listening.bind(host, port)
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
    from .config import StudioConfig

    store = open_store(store_url, create=False)
    try:
        label = store.location.url if store.location else ""
        config = StudioConfig(
            store=store,
            token=security.new_token(),
            hosts=security.allowed_hosts(host),
            store_label=label,
        )
        # serve's uvicorn setup: Ctrl-C / SIGTERM stop it gracefully, exit code 0;
        # the page's event streams end as the stop begins (config.stopping)
        # lifespan off: the store is opened and closed here, the app starts nothing
        app = studio_app(config)
        server = Server(
            quiet_config(app, graceful_s=GRACEFUL_S, lifespan=False), stopping=config.stopping
        )
        on_stop_signals(stopper(server))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():  # noqa: ASYNC110 - uvicorn sets a flag, no event
            await asyncio.sleep(0.02)
        if server.started:  # listening: the URL answers now
            url = listening.local_url(host, sock.getsockname()[1]) + "/"
            if on_ready is not None:
                on_ready(url, label)
            if open_browser:
                webbrowser.open(url)
        await serving
    finally:
        await store.close()
