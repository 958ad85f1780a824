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

from makers_store.api.location import StoreLocation, resolve
from makers_store.errors import MemoryValidationError
from makers_store.factory import split_url

from . import listening
from .errors import ServeError
from .front.supervisor import WorkerPool, WorkerSpec
from .log import LINE_FORMAT, TIME_FORMAT, SafeFormatter
from .middleware.host import HostCommand, MiddlewareHost
from .node.setup import NodeRuntime, prepare_middleware_node, prepare_node, project_warnings
from .project.data_dir import ensure_data_dir
from .project.edgeone import AgentsConfig, read_agents_config
from .project.envfile import ENV_FILES, project_env
from .project.frontend import DevCommand, Frontend, StaticSite, find_frontend, missing_tool
from .project.middleware_file import find_middleware, is_middleware_file, uses_nextjs
from .project.routes import AGENTS_DIR, FUNCTIONS_DIR, RouteTable, discover

if TYPE_CHECKING:
    from ..studio.under_serve import ServedStudio
    from .front.app import FrontApp
    from .front.frontend import FrontendApp
    from .front.limits import FrontLimits

logger = logging.getLogger("makers_store.serve")

MAX_INSTANCES = 64
#: Seconds requests still running get to finish once Ctrl+C is pressed (the
#: workers are asked to stop at the same moment, with as long); then they are
#: cut. A developer pressing Ctrl+C wants the port back, not a drain.
FRONT_GRACEFUL_S = 1


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
    #: False under --no-frontend: the project's frontend is neither started nor served.
    frontend: bool = True


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
    #: The frontend served on the port (None: none, turned off, or it cannot start).
    frontend: Frontend | None = None
    #: How to start the project's middleware (None: it has none, or leaves it to Next.js).
    middleware: HostCommand | None = None


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


#: What anyone who reaches a serve port can do (the reason for the bind warning).
SERVE_EXPOSES = (
    "anyone who can reach this machine can call your agents and, through them, "
    "read and write the store"
)


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
    warning = listening.bind_warning(options.host, SERVE_EXPOSES)
    if warning:
        warnings.append(warning)
    from .front.limits import FrontLimits  # imports uvicorn: only once serve runs

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
    ensure_data_dir(project)  # before anything runs: a frontend scans the project as it starts
    frontend = find_frontend(project) if options.frontend else None
    if isinstance(frontend, DevCommand):
        problem = missing_tool(project, frontend)
        if problem is not None:
            warnings.append(f"{problem} (the agents are served meanwhile)")
            frontend = None
    elif isinstance(frontend, StaticSite) and not frontend.directory.is_dir():
        warnings.append(
            f"edgeone.json outputDirectory {frontend.configured!r} does not exist yet: build "
            "the site (for example `npm run build`); until then its paths answer 404"
        )
    middleware = middleware_command(project, warnings)  # ServeError when it cannot run
    return PreparedServe(
        options,
        project,
        store,
        routes,
        [*warnings, *agents.warnings, *routes.warnings],
        agents,
        limits,
        node,
        frontend,
        middleware,
    )


def middleware_command(
    project: Path, warnings: list[str], notify: Callable[[str], None] | None = None
) -> HostCommand | None:
    """How to start ``project``'s middleware (None: none to run); NodeSetupError without Node."""
    file = find_middleware(project)
    if file is None:
        return None
    relative = file.relative_to(project)
    if uses_nextjs(project):  # the platform's CLI says so once, and leaves it to Next.js
        warnings.append(f"{relative}: a Next.js project's middleware is Next.js's own; serve "
                        "does not run it as the platform's middleware (nor does the platform)")
        return None
    node, loader = prepare_middleware_node(str(relative), notify)
    return HostCommand(node, loader, file, project, project_env(project, os.environ))


def _configure_logging() -> None:
    log = logging.getLogger("makers_store.serve")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        # a request's path and headers are the client's: shown, never obeyed
        handler.setFormatter(SafeFormatter(LINE_FORMAT, TIME_FORMAT))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


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
    hint = " (another `makers-store serve`?)"
    public = listening.bind(prepared.options.host, prepared.options.port, in_use_hint=hint)
    try:
        return Listeners(public, listening.bind("127.0.0.1", 0))
    except ServeError:
        public.close()
        raise


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
    from .front import limits as front_limits
    from .front import reload as reloading
    from .front.app import FrontApp
    from .uvicorn_server import Server, on_stop_signals, quiet_config, stopper

    options = prepared.options
    token = secrets.token_urlsafe(32)
    control_port = control.getsockname()[1]

    node = prepared.node
    spec = worker_spec(prepared, token, control_port, prepared.agents, node)
    pool = WorkerPool(spec, options.instances, options.recycle_every, sticky=options.sticky)
    limits = prepared.limits or front_limits.FrontLimits()
    front = FrontApp(pool, token, control_port, limits)
    front.frontend = _frontend(prepared, limits, public.getsockname()[1])
    dev = None if front.frontend is None else front.frontend.dev
    guarded = front_limits.GuardedH11Protocol.with_limits(
        limits, None if dev is None else front.frontend
    )
    middleware = None if prepared.middleware is None else MiddlewareHost(prepared.middleware)
    server = Server(quiet_config(front, graceful_s=FRONT_GRACEFUL_S, http=guarded))
    studio = _mount_studio(front, prepared, server.stopping)
    stop = stopper(server)
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()

    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        if signals > 1:  # a second Ctrl+C: the front stops at once, and so do its workers
            loop.call_soon_threadsafe(pool.kill)
            if dev is not None:
                loop.call_soon_threadsafe(dev.kill)
        loop.call_soon_threadsafe(stop_requested.set)
        stop(signum)

    # The workers stop as soon as a stop is asked, alongside the front's own
    # graceful period rather than after it: in-flight runs get the same
    # second in both, and Ctrl+C takes about that long at most. Not before the
    # start has ended (or been cancelled): a worker it is still spawning would
    # be missed.
    started = asyncio.Event()
    stopping_workers = asyncio.create_task(_stop_when(stop_requested, started, pool))

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
            if front.frontend is not None:
                front.frontend.routes = latest
            if on_routes is not None:
                on_routes(latest)
        await _reload_middleware(prepared.project, files, front)
        await pool.restart_all("the project's source changed")

    watcher: asyncio.Task[None] | None = None
    try:
        if middleware is not None:  # first: a middleware that cannot load stops serve
            await middleware.start()
            front.middleware = middleware
        if dev is not None:  # it warms up while the instances start
            await dev.start()
        ready = await _start_unless_stopped(pool, stop_requested)
        started.set()
        if not ready:
            return
        if options.reload:
            watcher = asyncio.create_task(reloading.watch(prepared.project, reloaded))
        address = _announce(prepared, public.getsockname()[1], studio is not None)
        if on_ready is not None:
            on_ready(address)
        await server.serve(sockets=[public, control])
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        started.set()  # a start that failed has ended too
        stop_requested.set()  # and its workers are stopped
        if front.frontend is not None:
            front.frontend.splices.close_all()
        if dev is not None:
            await dev.stop()
        await stopping_workers
        if front.middleware is not None:
            await front.middleware.stop()
        if studio is not None:
            await studio.store.close()
        logger.info("stopped")


def _frontend(prepared: PreparedServe, limits: FrontLimits, public_port: int) -> FrontendApp | None:
    """The frontend the front serves (its dev server not started yet), or None."""
    from .front.devserver import DevServer
    from .front.frontend import FrontendApp

    found = prepared.frontend
    if isinstance(found, DevCommand):
        dev = DevServer(prepared.project, found, public_port)
        return FrontendApp(prepared.routes, limits, dev=dev)
    if isinstance(found, StaticSite):
        return FrontendApp(prepared.routes, limits, site=found)
    return None


#: Folders whose JS/TS files a middleware does not import: the routes, the frontend's sources.
_NOT_MIDDLEWARE_HELPERS = (f"{AGENTS_DIR}/", f"{FUNCTIONS_DIR}/", "src/", "node_modules/")


async def _reload_middleware(project: Path, files: list[str], front: FrontApp) -> None:
    """--reload: a middleware file changed (added, edited, removed), or, while one runs,
    an env file or a JS/TS file it may import (outside the routes and ``src/``): the host
    runs the file as it is now (or starts, or stops); a file that fails to load leaves
    the running one."""
    helpers = [name for name in files if name in ENV_FILES or (
        name.endswith((".js", ".ts", ".mjs", ".mts", ".cjs", ".cts"))
        and not name.startswith(_NOT_MIDDLEWARE_HELPERS))]
    if not any(is_middleware_file(project, name) for name in files) and not (
        front.middleware is not None and helpers
    ):
        return
    warnings: list[str] = []
    try:
        command = await asyncio.to_thread(middleware_command, project, warnings, logger.info)
    except (MemoryValidationError, ServeError) as exc:
        logger.error("the middleware is not reloaded: %s", exc)
        return
    for warning in warnings:
        logger.warning("%s", warning)
    host = front.middleware
    if command is None:
        if host is not None:
            front.middleware = None
            await host.stop()
            logger.info("no middleware any more: requests go on without one")
        return
    if host is None:
        host = MiddlewareHost(command)
        try:
            await host.start()
        except ServeError as exc:
            logger.error("%s; requests go on without a middleware until it loads", exc)
            return
        front.middleware = host
        return
    await host.reload(command)


async def _stop_when(
    stop_requested: asyncio.Event, started: asyncio.Event, pool: WorkerPool
) -> None:
    await stop_requested.wait()
    await started.wait()
    await pool.stop()


def _mount_studio(
    front: FrontApp, prepared: PreparedServe, stopping: asyncio.Event
) -> ServedStudio | None:
    """Serve the Studio at /_studio/ through ``front`` (None, with the
    reason logged, where it cannot be: a store living inside the workers).
    ``stopping`` is set when serve stops: the Studio's event streams end then."""
    from ..studio.under_serve import studio_for_serve

    studio = studio_for_serve(
        prepared.store.url,
        split_url(prepared.store.url)[0],
        prepared.options.host,
        prepared.project,
        tuple(route.path for route in prepared.routes.agents),
        stopping,
    )
    if isinstance(studio, str):
        logger.warning("%s", studio)
        return None
    front.studio = studio.app
    return studio


async def _start_unless_stopped(pool: WorkerPool, stop_requested: asyncio.Event) -> bool:
    """Start the instances; False (and the start cancelled) when a stop
    signal comes first, so Ctrl+C during a slow start does not wait for it."""
    starting = asyncio.create_task(pool.start())
    stopping = asyncio.create_task(stop_requested.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        return False
    starting.result()
    return True


def _announce(prepared: PreparedServe, port: int, studio: bool) -> str:
    """Log what is served where; the address clients use."""
    from ..studio import SERVE_PREFIX

    options, agents = prepared.options, prepared.agents
    address = listening.url_of(options.host, port)
    logger.info(
        "serving %s with %d instance%s (%s); store %s (%s); framework %s (%s)%s; "
        "Ctrl+C stops",
        listening.banner_address(options.host, port),
        options.instances,
        "" if options.instances == 1 else "s",
        "sticky conversations" if options.sticky else "conversations rotate",
        prepared.store.url,
        prepared.store.reason,
        agents.framework or "generic",
        agents.framework_source,
        f"; agents.timeout {agents.timeout_s:g}s" if agents.timeout_s else "",
    )
    if studio:
        logger.info("studio %s%s/", address, SERVE_PREFIX)
    return address
