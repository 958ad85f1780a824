"""uvicorn, with our own signal handling and logging.

uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, which would
kill the front before it stops its workers. This server leaves signals to us:
the first SIGINT/SIGTERM asks for a graceful stop, a second forces it.
:attr:`Server.stopping` is set as the stop begins, so responses that never
end by themselves (the Studio's event streams) end then, instead of holding
the stop for the whole graceful period. uvicorn's own lines go through
:mod:`.log`, like serve's.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import uvicorn

from .log import uvicorn_log_config

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, *, stopping: asyncio.Event | None = None) -> None:
        super().__init__(config)
        #: Set when the graceful stop begins (``stopping``: an event made
        #: earlier, for an app built before the server).
        self.stopping = stopping or asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.stopping.set()
        await super().shutdown(sockets)


def quiet_config(
    app: Any,
    *,
    graceful_s: int,
    date_header: bool = True,
    http: type[asyncio.Protocol] | str = "h11",
    timestamps: bool = True,
    lifespan: bool = True,
) -> uvicorn.Config:
    """uvicorn without its access log and signal handling (``http``: the
    front's guarded protocol); its warnings and errors as serve's log lines
    (:func:`.log.uvicorn_log_config`). ``lifespan`` False for an app with
    nothing to start or stop: a second Ctrl+C skips the app's shutdown, and
    Starlette then reports its cancelled lifespan with a traceback."""
    return uvicorn.Config(
        app,
        http=http,
        ws="none",
        lifespan="on" if lifespan else "off",
        log_config=uvicorn_log_config(timestamps=timestamps),
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=date_header,
        proxy_headers=False,
        timeout_graceful_shutdown=graceful_s,
        timeout_keep_alive=5,
    )


def on_stop_signals(callback: Callable[[int], None]) -> None:
    """Call ``callback(signum)`` (in the main thread) on SIGINT and SIGTERM."""

    def handle(signum: int, frame: FrameType | None) -> None:
        callback(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handle)


def stopper(server: uvicorn.Server) -> Callable[[int], None]:
    """A signal callback: first signal stops ``server`` gracefully, the second at once."""

    def stop(signum: int) -> None:
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True

    return stop
