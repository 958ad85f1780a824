"""One worker process: ``python -m makers_store.emulator.runtime.worker``.

Started by the front (:mod:`..front.supervisor`), never by hand. Its settings come
in the ``MAKERS_SERVE_WORKER`` environment variable (JSON), removed before
any project code runs so the internal token never reaches ``ctx.env``. It
listens on 127.0.0.1 on a port of its own choosing and announces it on
stdout with :data:`..wire.READY_MARKER` once its store is open. It exits when the
front asks (SIGTERM) or when the front is gone (its parent changed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

from ..uvicorn_server import Server, on_stop_signals, quiet_config, stopper
from ..wire import READY_MARKER, SETTINGS_ENV, WorkerSettings
from . import loader
from .app import WorkerApp

#: Seconds in-flight requests get when the front stops the worker (Ctrl+C):
#: the front gives its own the same second, at the same time.
GRACEFUL_S = 1
#: Holds the ``_platform`` package (``from _platform.context import sse``); package data
#: at the runtime's top, not a module of any room.
SHIM_DIR = Path(__file__).parents[1] / "shim"


def _settings() -> WorkerSettings:
    raw = os.environ.pop(SETTINGS_ENV, None)
    if raw is None:
        raise SystemExit(f"{SETTINGS_ENV} is not set: workers are started by `makers-store serve`")
    return WorkerSettings.decode(raw)


def _watch_parent(server: Server, parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    server.should_exit = True  # the front is gone: do not outlive it
    time.sleep(GRACEFUL_S + 3)
    os._exit(1)


def main() -> None:
    settings = _settings()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    os.chdir(settings.project)
    if str(settings.project) not in sys.path:
        sys.path.insert(0, str(settings.project))
    sys.path.append(str(SHIM_DIR))  # after the project's own code, which may ship its own
    loader.install(settings.project)
    # IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (see server._bind)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2048)
    port = listener.getsockname()[1]

    def ready() -> None:
        print(f"{READY_MARKER} {port}", flush=True)

    app = WorkerApp(settings, on_ready=ready)
    app.check_imports()
    server = Server(
        quiet_config(app.asgi(), graceful_s=GRACEFUL_S, date_header=False, timestamps=False)
    )
    on_stop_signals(stopper(server))
    threading.Thread(
        target=_watch_parent, args=(server, os.getppid()), name="parent-watch", daemon=True
    ).start()
    try:
        asyncio.run(server.serve(sockets=[listener]))
    finally:
        listener.close()


if __name__ == "__main__":
    main()
