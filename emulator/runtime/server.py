"""``makers-store serve``: check the options, then run the front and its workers.

:func:`prepare` validates everything that can be checked before binding a
port (project folder, store, instance count) and resolves the store to an
absolute URL every worker opens. :func:`run` binds the port, starts the
instances, serves until SIGINT/SIGTERM, and always stops every worker
before returning.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from makers_store.errors import MemoryValidationError
from makers_store.factory import split_url
from makers_store.location import StoreLocation, resolve

from .envfile import project_env
from .routes import AGENTS_DIR, FUNCTIONS_DIR, RouteTable, discover
from .supervisor import ServeError, WorkerPool, WorkerSpec

logger = logging.getLogger("makers_store.serve")

MAX_INSTANCES = 64
FRONT_GRACEFUL_S = 3


@dataclass(frozen=True)
class ServeOptions:
    project_dir: Path
    host: str = "127.0.0.1"
    port: int = 8088
    store_url: str | None = None
    instances: int = 1
    recycle_every: int | None = None
    reload: bool = False


@dataclass(frozen=True)
class PreparedServe:
    options: ServeOptions
    project: Path
    store: StoreLocation
    routes: RouteTable
    warnings: list[str] = field(default_factory=list)


def bind_warning(host: str) -> str | None:
    """A warning when ``host`` makes the server reachable from other machines."""
    if host in ("", "0.0.0.0", "::", "*"):
        return (
            f"--host {host or '*'} listens on every network interface: anyone who can reach "
            "this machine can call your agents and, through them, read and write the store"
        )
    if host == "localhost":
        return None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"--host {host} may be reachable from other machines"
    if not address.is_loopback:
        return f"--host {host} is reachable from other machines on that network"
    return None


def absolute_store_url(location: StoreLocation) -> StoreLocation:
    """The same store with a SQLite path made absolute (workers run in the project dir)."""
    scheme, path, options = split_url(location.url)
    if scheme != "sqlite":
        return location
    query = urlencode(options)
    url = f"sqlite:///{Path(path).resolve()}" + (f"?{query}" if query else "")
    return StoreLocation(url, location.reason)


def prepare(options: ServeOptions) -> PreparedServe:
    """Validate ``options``; raises MemoryValidationError naming the bad one."""
    project = options.project_dir.expanduser()
    if not project.is_dir():
        raise MemoryValidationError(f"PROJECT_DIR {str(project)!r} is not a directory")
    project = project.resolve()
    if not (project / AGENTS_DIR).is_dir() and not (project / FUNCTIONS_DIR).is_dir():
        raise MemoryValidationError(
            f"PROJECT_DIR {str(project)!r} has neither {AGENTS_DIR}/ nor {FUNCTIONS_DIR}/; "
            "create one with `makers-store init DIR`"
        )
    if not 1 <= options.instances <= MAX_INSTANCES:
        raise MemoryValidationError(f"--instances must be from 1 to {MAX_INSTANCES}")
    if options.recycle_every is not None and options.recycle_every < 1:
        raise MemoryValidationError("--recycle-every must be at least 1")
    if not 0 <= options.port <= 65535:
        raise MemoryValidationError("--port must be from 0 to 65535")
    store = absolute_store_url(resolve(options.store_url, cwd=project))
    scheme = split_url(store.url)[0]
    warnings: list[str] = []
    if scheme == "memory":
        if options.instances > 1:
            raise MemoryValidationError(
                f"--instances {options.instances} needs a store every instance can open, but "
                f"{store.url} lives inside one process; use a sqlite:/// store "
                "(the default) or --instances 1"
            )
        if options.recycle_every or options.reload:
            warnings.append(
                "the memory:// store is lost whenever the instance is replaced "
                "(--recycle-every, --reload)"
            )
    warning = bind_warning(options.host)
    if warning:
        warnings.append(warning)
    project_env(project, os.environ)  # fail now on a malformed .env file
    routes = discover(project)
    return PreparedServe(options, project, store, routes, [*warnings, *routes.warnings])


def _configure_logging() -> None:
    log = logging.getLogger("makers_store.serve")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]") or "0.0.0.0", port))  # uvicorn listens once all is ready
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(False)
    return sock


def url_of(host: str, port: int) -> str:
    shown = host if host not in ("", "0.0.0.0", "::", "*") else "127.0.0.1"
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def run(
    prepared: PreparedServe,
    *,
    on_routes: Callable[[RouteTable], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM; every worker is stopped before this returns."""
    _configure_logging()
    options = prepared.options
    public = _bind(options.host, options.port)
    control = _bind("127.0.0.1", 0)
    try:
        asyncio.run(_serve(prepared, public, control, on_routes, on_ready))
    finally:
        public.close()
        control.close()


async def _serve(
    prepared: PreparedServe,
    public: socket.socket,
    control: socket.socket,
    on_routes: Callable[[RouteTable], None] | None,
    on_ready: Callable[[str], None] | None,
) -> None:
    from . import reload as reloading
    from .front import FrontApp
    from .uvicorn_server import Server, on_stop_signals, quiet_config, stopper

    options = prepared.options
    token = secrets.token_urlsafe(32)
    control_port = control.getsockname()[1]

    def worker_env() -> dict[str, str]:
        return project_env(prepared.project, os.environ)

    spec = WorkerSpec(prepared.project, prepared.store.url, token, control_port, worker_env())
    pool = WorkerPool(spec, options.instances, options.recycle_every)
    server = Server(quiet_config(FrontApp(pool, token, control_port), graceful_s=FRONT_GRACEFUL_S))
    stop = stopper(server)
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        loop.call_soon_threadsafe(stop_requested.set)
        stop(signum)

    on_stop_signals(on_signal)
    routes = prepared.routes

    async def reloaded(files: list[str]) -> None:
        nonlocal routes
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        logger.info("changed: %s; restarting the instances", shown)
        try:
            pool.spec = WorkerSpec(
                prepared.project, prepared.store.url, token, control_port, worker_env()
            )
        except MemoryValidationError as exc:
            logger.error("not reloading: %s", exc)
            return
        latest = discover(prepared.project)
        if latest != routes:
            routes = latest
            if on_routes is not None:
                on_routes(latest)
        await pool.restart_all("the project's source changed")

    watcher: asyncio.Task[None] | None = None
    try:
        starting = asyncio.create_task(pool.start())
        stopping = asyncio.create_task(stop_requested.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            return
        starting.result()
        if options.reload:
            watcher = asyncio.create_task(reloading.watch(prepared.project, reloaded))
        address = url_of(options.host, public.getsockname()[1])
        logger.info(
            "serving %s with %d instance%s; store %s (%s); Ctrl+C stops",
            address,
            options.instances,
            "" if options.instances == 1 else "s",
            prepared.store.url,
            prepared.store.reason,
        )
        if on_ready is not None:
            on_ready(address)
        await server.serve(sockets=[public, control])
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await pool.stop()
        logger.info("stopped")
