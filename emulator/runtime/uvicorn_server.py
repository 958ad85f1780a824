"""uvicorn, with our own signal handling.

uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, which would
kill the front before it stops its workers. This server leaves signals to us:
the first SIGINT/SIGTERM asks for a graceful stop, a second forces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import uvicorn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def quiet_config(
    app: Any,
    *,
    graceful_s: int,
    date_header: bool = True,
    http: type[asyncio.Protocol] | str = "h11",
) -> uvicorn.Config:
    """uvicorn without its logs and signal handling (``http``: the front's guarded protocol)."""
    return uvicorn.Config(
        app,
        http=http,
        ws="none",
        lifespan="on",
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
