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
import errno
import ipaddress
import logging
import os
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from makers_store.errors import MemoryValidationError
from makers_store.factory import split_url
from makers_store.location import StoreLocation, resolve

from .edgeone import AgentsConfig, read_agents_config
from .envfile import project_env
from .node_setup import NodeRuntime, prepare_node, project_warnings
from .routes import AGENTS_DIR, FUNCTIONS_DIR, RouteTable, discover
from .supervisor import ServeError, WorkerPool, WorkerSpec

if TYPE_CHECKING:
    from .front_limits import FrontLimits

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
    #: One conversation stays on one instance (the platform's usual case).
    sticky: bool = False
    #: False under --no-tools: ctx.tools / ctx.sandbox run nothing.
    tools_enabled: bool = True
    #: False under --no-function-limits: no 6 MB / 120 s cloud-function limits.
    function_limits: bool = True


@dataclass(frozen=True)
class PreparedServe:
    options: ServeOptions
    project: Path
    store: StoreLocation
    routes: RouteTable
    warnings: list[str] = field(default_factory=list)
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    #: The front's timeouts and caps (None: the defaults).
    limits: FrontLimits | None = None
    #: Node and tsx for .ts/.js routes (None: the project has none).
    node: NodeRuntime | None = None


def worker_spec(
    prepared: PreparedServe,
    token: str,
    control_port: int,
    agents: AgentsConfig,
    node: NodeRuntime | None = None,
) -> WorkerSpec:
    """What every worker is started with (the environment read afresh)."""
    options = prepared.options
    return WorkerSpec(
        prepared.project,
        prepared.store.url,
        token,
        control_port,
        project_env(prepared.project, os.environ),
        framework=agents.framework,
        tools_enabled=options.tools_enabled,
        agent_timeout_s=agents.timeout_s,
        function_limits=options.function_limits,
        node=None if node is None else node.to_json(),
    )


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
    from .front_limits import FrontLimits  # imports uvicorn: only once serve runs

    try:
        limits = FrontLimits.from_env()
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None
    project_env(project, os.environ)  # fail now on a malformed .env file
    agents = read_agents_config(project)  # and on a broken edgeone.json
    routes = discover(project)
    node = prepare_node(project, routes)  # ServeError when Node routes cannot run
    if node is not None:
        warnings += project_warnings(project)
    return PreparedServe(
        options,
        project,
        store,
        routes,
        [*warnings, *agents.warnings, *routes.warnings],
        agents,
        limits,
        node,
    )


def _configure_logging() -> None:
    log = logging.getLogger("makers_store.serve")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "*")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets
    # whose proto says TCP, and accepted ones inherit it. With proto 0 every
    # kept-alive response waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]") or "0.0.0.0", port))  # uvicorn listens once all is ready
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"cannot listen on {host}:{port}: port {port} is already in use "
                "(another `makers-store serve`?); choose another with --port, "
                "or --port 0 for a free one"
            ) from exc
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(False)
    return sock


@dataclass
class Listeners:
    """The bound (not yet listening) sockets: the public port and the control port."""

    public: socket.socket
    control: socket.socket

    def close(self) -> None:
        self.public.close()
        self.control.close()


def listen(prepared: PreparedServe) -> Listeners:
    """Bind the ports now, so a port in use fails before anything is printed; ServeError."""
    public = _bind(prepared.options.host, prepared.options.port)
    try:
        return Listeners(public, _bind("127.0.0.1", 0))
    except ServeError:
        public.close()
        raise


def url_of(host: str, port: int) -> str:
    """The address serve listens on, as given (``0.0.0.0`` stays ``0.0.0.0``)."""
    shown = host or "0.0.0.0"
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def banner_address(host: str, port: int) -> str:
    """The start banner's address: the real one, plus how to reach it from this machine."""
    if host in _WILDCARD_HOSTS:
        local = "[::1]" if ":" in host else "127.0.0.1"
        return f"{url_of(host, port)} (every interface; from this machine http://{local}:{port})"
    return url_of(host, port)


def run(
    prepared: PreparedServe,
    listeners: Listeners | None = None,
    *,
    on_routes: Callable[[RouteTable], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM; every worker is stopped before this returns."""
    _configure_logging()
    bound = listeners or listen(prepared)
    try:
        asyncio.run(_serve(prepared, bound.public, bound.control, on_routes, on_ready))
    finally:
        bound.close()


async def _serve(
    prepared: PreparedServe,
    public: socket.socket,
    control: socket.socket,
    on_routes: Callable[[RouteTable], None] | None,
    on_ready: Callable[[str], None] | None,
) -> None:
    from ..studio import SERVE_PREFIX
    from ..studio.under_serve import studio_for_serve
    from . import front_limits
    from . import reload as reloading
    from .front import FrontApp
    from .uvicorn_server import Server, on_stop_signals, quiet_config, stopper

    options = prepared.options
    token = secrets.token_urlsafe(32)
    control_port = control.getsockname()[1]

    node = prepared.node
    spec = worker_spec(prepared, token, control_port, prepared.agents, node)
    pool = WorkerPool(spec, options.instances, options.recycle_every, sticky=options.sticky)
    limits = prepared.limits or front_limits.FrontLimits()
    front = FrontApp(pool, token, control_port, limits)
    studio = studio_for_serve(
        prepared.store.url,
        split_url(prepared.store.url)[0],
        options.host,
        prepared.project,
        tuple(route.path for route in prepared.routes.agents),
    )
    if isinstance(studio, str):
        logger.warning("%s", studio)
    else:
        front.studio = studio.app
    guarded = front_limits.GuardedH11Protocol.with_limits(limits)
    server = Server(quiet_config(front, graceful_s=FRONT_GRACEFUL_S, http=guarded))
    stop = stopper(server)
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        loop.call_soon_threadsafe(stop_requested.set)
        stop(signum)

    on_stop_signals(on_signal)
    routes = prepared.routes

    async def reloaded(files: list[str]) -> None:
        nonlocal routes, node
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        logger.info("changed: %s; restarting the instances", shown)
        latest = discover(prepared.project)
        try:
            agents = read_agents_config(prepared.project)
            node = await asyncio.to_thread(prepare_node, prepared.project, latest, logger.info)
            pool.spec = worker_spec(prepared, token, control_port, agents, node)
        except (MemoryValidationError, ServeError) as exc:
            logger.error("not reloading: %s", exc)
            return
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
        port = public.getsockname()[1]
        address = url_of(options.host, port)
        agents = prepared.agents
        logger.info(
            "serving %s with %d instance%s (%s); store %s (%s); framework %s (%s)%s; "
            "Ctrl+C stops",
            banner_address(options.host, port),
            options.instances,
            "" if options.instances == 1 else "s",
            "sticky conversations" if options.sticky else "conversations rotate",
            prepared.store.url,
            prepared.store.reason,
            agents.framework or "generic",
            agents.framework_source,
            f"; agents.timeout {agents.timeout_s:g}s" if agents.timeout_s else "",
        )
        if not isinstance(studio, str):
            logger.info("studio %s%s/", address, SERVE_PREFIX)
        if on_ready is not None:
            on_ready(address)
        await server.serve(sockets=[public, control])
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await pool.stop()
        if not isinstance(studio, str):
            await studio.store.close()
        logger.info("stopped")
