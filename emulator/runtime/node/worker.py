"""The Node worker of one instance: started, watched and stopped by its Python worker.

An instance of ``makers-store serve`` is one Python worker process; when the
project has Node routes it starts one Node process of its own
(``node/worker.mjs``, through tsx when there is TypeScript) and serves the
store to it over a Unix socket (:func:`..store_rpc.server.start_store_rpc`, the
handlers of :mod:`.handlers` added). The Python worker stays the
instance: the front rotates, recycles, reloads and aborts it as before, and
it hands each Node route's request to its Node worker (:mod:`.proxy`).
So a module-level variable in a ``.ts`` agent lives as long as the instance,
exactly like one in a ``.py`` agent.

The Node worker exits when its stdin closes, so it never outlives its Python
worker, even one killed with SIGKILL. If it dies, the Python worker stops too
and the front starts a fresh instance in its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from makers_store import ContextStore

from ..platform_choices import NODE_METHOD_NOT_ALLOWED_STATUS, NODE_STREAMED_TYPES
from ..project.routes import Route
from ..store_rpc import Handler, StoreRpcServer, start_store_rpc
from ..wire import NODE_READY_MARKER, NODE_RPC_ENV, NODE_SETTINGS_ENV
from .setup import NodeRuntime

logger = logging.getLogger("makers_store.serve")

WORKER_SCRIPT = Path(__file__).parent / "worker.mjs"  # the Node worker itself, beside this file
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 3.0


class NodeWorker:
    """This instance's Node process and the store socket it uses."""

    def __init__(self, runtime: NodeRuntime, project: Path, routes: tuple[Route, ...]) -> None:
        self.runtime = runtime
        self.project = project
        self.routes = [r for r in routes if r.language == "node"]
        self.token = secrets.token_urlsafe(24)
        self.port = 0
        self._folder: str | None = None
        self._rpc: StoreRpcServer | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False

    def _command(self) -> list[str]:
        command = [self.runtime.node, "--enable-source-maps"]
        if self.runtime.tsx_loader is not None:
            command += ["--import", Path(self.runtime.tsx_loader).as_uri()]
        return [*command, str(WORKER_SCRIPT)]

    def _settings(self) -> str:
        routes = [
            {"file": str(r.file), "relative": r.relative, "path": r.path} for r in self.routes
        ]
        return json.dumps({
            "token": self.token,
            "routes": routes,
            "streamedTypes": NODE_STREAMED_TYPES,
            "methodNotAllowedStatus": NODE_METHOD_NOT_ALLOWED_STATUS,
        })

    async def start(self, store: ContextStore, handlers: Mapping[str, Handler]) -> None:
        """Serve the store, start the Node process, wait until it has imported every route."""
        self._folder = tempfile.mkdtemp(prefix="makers-node-")
        socket_path = os.path.join(self._folder, "store.sock")
        self._rpc = await start_store_rpc(store, socket_path, extra=handlers)
        env = {**os.environ, NODE_SETTINGS_ENV: self._settings(), NODE_RPC_ENV: socket_path}
        self._process = process = await asyncio.create_subprocess_exec(
            *self._command(),
            cwd=self.project,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,  # the Python worker's own, which the front prefixes [instance N]
        )
        assert process.stdout is not None
        try:
            self.port = await asyncio.wait_for(self._ready(process.stdout), START_TIMEOUT_S)
        except TimeoutError:
            raise RuntimeError(
                f"the Node worker did not start within {START_TIMEOUT_S:.0f} s"
            ) from None
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._relay(process.stdout)),
            loop.create_task(self._watch(process)),
        ]
        logger.info("node worker ready (pid %d, %d route%s)", process.pid, len(self.routes),
                    "" if len(self.routes) == 1 else "s")

    async def _ready(self, stdout: asyncio.StreamReader) -> int:
        while True:
            line = await stdout.readline()
            if not line:
                code = await self._process.wait() if self._process else None
                raise RuntimeError(f"the Node worker exited with code {code} while starting; "
                                   "its output is above")
            if line.startswith(NODE_READY_MARKER):
                return int(line.split()[1])
            sys.stdout.buffer.write(line)
            sys.stdout.flush()

    async def _relay(self, stdout: asyncio.StreamReader) -> None:
        while line := await stdout.readline():
            sys.stdout.buffer.write(line)
            sys.stdout.flush()

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if self._closing:
            return
        logger.error("the Node worker (pid %d) exited with code %s; this instance stops and "
                     "the front starts a fresh one", process.pid, code)
        os.kill(os.getpid(), signal.SIGTERM)

    async def close(self) -> None:
        self._closing = True
        process = self._process
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._rpc is not None:
            await self._rpc.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
