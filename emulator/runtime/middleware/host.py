"""The middleware host: one Node process per serve, owned by the front.

It runs ``node/middleware_host.mjs`` (through tsx, so ``.ts`` and ESM ``.js``
files load alike) with the project's environment, relays its output prefixed
``[middleware]`` through the safe printer, and reads its ready line: the port
and the matcher list. :meth:`MiddlewareHost.ask` sends one request's head
and returns the open answer (:mod:`.step` reads it).

A middleware that cannot be loaded stops serve from starting (the platform's
build fails on it; skipping it would turn an auth guard off). If the host
dies later it is reported and started again; requests meanwhile wait for it
and, if it does not come back, are answered 502 rather than let through.
:meth:`MiddlewareHost.reload` starts a new host for a changed file and
swaps it in only once it is ready; when the new file fails to load, the
previous middleware keeps running, as the platform's dev server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import ServeError, UpstreamError
from ..http_client import Connection, ResponseHead
from ..log import relayed_line
from ..platform_choices import MIDDLEWARE_ERROR_GOES_ON
from ..wire import (
    MIDDLEWARE_LOAD_FAILED,
    MIDDLEWARE_READY_MARKER,
    MIDDLEWARE_RUN_PATH,
    MIDDLEWARE_SETTINGS_ENV,
    TOKEN_HEADER,
)
from .matching import Matchers

logger = logging.getLogger("makers_store.serve")

#: The host itself, beside the other Node files (package data).
HOST_SCRIPT = Path(__file__).parents[1] / "node" / "middleware_host.mjs"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 2.0
#: How long a request waits for a host that is being started again.
AVAILABLE_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 5.0
_PREFIX = b"[middleware] "
#: The longest line of the host's output read whole (its ready line carries the matchers).
_LINE_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class HostCommand:
    """How to start the host: Node, tsx's loader, the file, the environment."""

    node: str
    tsx_loader: str
    file: Path
    project: Path
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def relative(self) -> str:
        try:
            return str(self.file.relative_to(self.project))
        except ValueError:
            return str(self.file)


@dataclass
class _Process:
    process: asyncio.subprocess.Process
    port: int
    matchers: Matchers
    token: str
    tasks: list[asyncio.Task[None]]
    closing: bool = False


class MiddlewareHost:
    def __init__(self, command: HostCommand) -> None:
        self.command = command
        self._current: _Process | None = None
        self._available = asyncio.Event()
        self._stopping = False
        self._restarting: asyncio.Task[None] | None = None

    @property
    def matchers(self) -> Matchers:
        assert self._current is not None
        return self._current.matchers

    async def start(self) -> None:
        """Start the host; ServeError (its output already shown) when the file cannot load."""
        self._install(await self._spawn(self.command))
        self._announce("middleware")

    def _announce(self, what: str) -> None:
        assert self._current is not None
        logger.info("%s: %s (pid %d; matcher %s)", what, self.command.relative,
                    self._current.process.pid, ", ".join(self.matchers.sources))

    def _install(self, started: _Process) -> None:
        self._current = started
        self._available.set()
        started.tasks.append(asyncio.create_task(self._watch(started)))

    async def _spawn(self, command: HostCommand, *, warn: bool = True) -> _Process:
        """A host for ``command``; ``warn``: it prints its edge-runtime warning (once per
        file loaded: not again when the same file is started again after a crash)."""
        token = secrets.token_urlsafe(24)
        settings = {"file": str(command.file), "relative": command.relative, "token": token,
                    "errorGoesOn": MIDDLEWARE_ERROR_GOES_ON, "warn": warn}
        process = await asyncio.create_subprocess_exec(
            command.node, "--enable-source-maps", "--import", Path(command.tsx_loader).as_uri(),
            str(HOST_SCRIPT),
            cwd=command.project,
            env={**command.env, MIDDLEWARE_SETTINGS_ENV: json.dumps(settings)},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=_LINE_LIMIT,
        )
        assert process.stdout is not None and process.stderr is not None
        errors = asyncio.create_task(_relay(process.stderr, sys.stderr.buffer))
        try:
            port, listed = await asyncio.wait_for(_ready(process.stdout), START_TIMEOUT_S)
        except (TimeoutError, ServeError) as exc:
            await _end(process, exiting=isinstance(exc, ServeError))
            await errors
            code = process.returncode
            if isinstance(exc, TimeoutError):
                reason = f"did not start within {START_TIMEOUT_S:.0f} s"
            elif code == MIDDLEWARE_LOAD_FAILED:
                reason = "cannot be loaded (the error is above)"
            else:
                reason = f"stopped with code {code} while loading (its output is above)"
            raise ServeError(f"the middleware {command.relative} {reason}") from None
        output = asyncio.create_task(_relay(process.stdout, sys.stdout.buffer))
        return _Process(process, port, Matchers(listed), token, [errors, output])

    async def _watch(self, host: _Process) -> None:
        code = await host.process.wait()
        if host.closing or self._stopping:
            return
        self._available.clear()
        logger.error("the middleware host (pid %d) exited with code %s; starting it again "
                     "(requests the middleware covers wait for it)", host.process.pid, code)
        self._restarting = asyncio.create_task(self._restart())

    async def _restart(self) -> None:
        delay = 0.2
        while not self._stopping:
            await asyncio.sleep(delay)
            try:
                self._install(await self._spawn(self.command, warn=False))
            except ServeError as exc:
                logger.error("%s; trying again in %.0f s", exc, min(delay * 2, 5.0))
                delay = min(delay * 2, 5.0)
                continue
            self._announce("middleware running again")
            return

    async def reload(self, command: HostCommand) -> None:
        """Run ``command``'s middleware from now on; on failure keep the one running."""
        try:
            fresh = await self._spawn(command)
        except ServeError as exc:
            logger.error("%s; the previous middleware keeps running", exc)
            return
        previous = self._current
        self.command = command
        if self._restarting is not None:
            self._restarting.cancel()
        self._install(fresh)
        self._announce("middleware reloaded")
        if previous is not None:
            await _close(previous)

    async def stop(self) -> None:
        self._stopping = True
        self._available.clear()
        if self._restarting is not None:
            self._restarting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._restarting
        if self._current is not None:
            await _close(self._current)

    async def _live(self) -> _Process:
        """The running host, waiting for one being started again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + AVAILABLE_TIMEOUT_S
        while True:
            try:
                await asyncio.wait_for(self._available.wait(), deadline - loop.time())
            except TimeoutError:
                raise UpstreamError("the middleware host is not running (see the log above); "
                                    "the request is refused rather than let through") from None
            host = self._current
            if host is not None and host.process.returncode is None:
                return host
            await asyncio.sleep(0.05)  # its exit is seen, its watcher not yet run

    async def ask(self, head: dict[str, object]) -> tuple[Connection, ResponseHead]:
        """Send one request's head; the connection (to close) and the answer's head."""
        host = await self._live()
        try:
            connection = await Connection.open(
                "127.0.0.1", host.port, within_s=CONNECT_TIMEOUT_S
            )
        except UpstreamError:  # it has just died: once its exit is seen, wait for the next one
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(host.process.wait(), STOP_TIMEOUT_S)
            host = await self._live()
            connection = await Connection.open(
                "127.0.0.1", host.port, within_s=CONNECT_TIMEOUT_S
            )
        try:
            body = json.dumps(head).encode("utf-8")
            headers = [
                (b"host", f"127.0.0.1:{host.port}".encode()),
                (b"content-type", b"application/json"),
                (TOKEN_HEADER.encode(), host.token.encode()),
            ]
            await connection.send_request("POST", MIDDLEWARE_RUN_PATH.encode(), headers, body)
            return connection, await connection.read_head()
        except BaseException:
            await connection.close()
            raise


async def _ready(stdout: asyncio.StreamReader) -> tuple[int, Sequence[object]]:
    while True:
        line = await stdout.readline()
        if not line:
            raise ServeError("the middleware host exited while starting")
        if line.startswith(MIDDLEWARE_READY_MARKER):
            _, port, listed = line.decode("utf-8").split(" ", 2)
            return int(port), json.loads(listed)
        sys.stdout.buffer.write(relayed_line(_PREFIX, line.rstrip(b"\n")))
        sys.stdout.flush()


async def _relay(stream: asyncio.StreamReader, out: BinaryIO) -> None:
    while line := await stream.readline():
        out.write(relayed_line(_PREFIX, line.rstrip(b"\n")))
        out.flush()


async def _end(process: asyncio.subprocess.Process, *, exiting: bool = False) -> None:
    """Stop ``process``; ``exiting``: it is probably ending on its own, so it gets a moment
    first (signalling it polls the process, which can reap it before asyncio's watcher
    sees its exit code)."""
    if exiting:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def _close(host: _Process) -> None:
    """Stop a host: SIGTERM lets the requests it is answering end (for a second at most)."""
    host.closing = True
    if host.process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            host.process.terminate()
    await _end(host.process, exiting=True)
    if host.process.stdin is not None:
        host.process.stdin.close()
    for task in host.tasks:
        if task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, STOP_TIMEOUT_S)
