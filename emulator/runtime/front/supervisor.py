"""The pool of worker processes behind the front.

``--instances N`` gives N slots, each holding one worker process. Requests of
one conversation are spread on purpose: each goes to the slot after the one
that served the conversation's previous request, so consecutive turns land
on different instances, as they may on the platform. With ``--sticky`` a
conversation stays on its instance while that one lives (the platform's
usual case). Requests without a conversation go round-robin. A worker that exits
unexpectedly is replaced (after a growing pause if it keeps crashing); with
``--recycle-every K`` a worker is retired after K requests: it takes no new
request, finishes its in-flight ones, then exits, and a fresh process takes
its slot. Worker output is relayed line by line, prefixed ``[instance N]``,
control characters shown escaped (:func:`..log.relayed_line`): project code
logs what clients send, and no client may drive the developer's terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import NoInstanceError, ServeError, UpstreamError
from ..http_client import request_json
from ..log import relayed_line
from ..platform_choices import ABORT_FANOUT_TIMEOUT_S
from ..wire import ABORT_PATH, READY_MARKER, SETTINGS_ENV, TOKEN_HEADER, WorkerSettings

logger = logging.getLogger("makers_store.serve")

START_TIMEOUT_S = 60.0
ACQUIRE_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 6.0
DRAIN_TIMEOUT_S = 120.0
_REMEMBERED_CONVERSATIONS = 10_000
_MAX_START_FAILURES = 3


@dataclass(frozen=True)
class WorkerSpec:
    project: Path
    store_url: str
    token: str
    control_port: int
    env: dict[str, str]
    framework: str | None = None
    tools_enabled: bool = True
    agent_timeout_s: float | None = None
    function_limits: bool = True
    #: ``NodeRuntime.to_json()`` when the project has Node routes.
    node: dict[str, str | None] | None = None


@dataclass(eq=False)
class Worker:
    serial: int
    slot: int
    process: asyncio.subprocess.Process
    started: float = field(default_factory=time.monotonic)
    port: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    retiring: bool = False
    inflight: int = 0
    served: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def usable(self) -> bool:
        return self.ready.is_set() and not self.retiring and not self.exited.is_set()


class WorkerPool:
    def __init__(
        self,
        spec: WorkerSpec,
        instances: int,
        recycle_every: int | None,
        *,
        sticky: bool = False,
    ) -> None:
        self.spec = spec
        self.sticky = sticky
        self.instances = instances
        self.recycle_every = recycle_every
        self.slots: list[Worker | None] = [None] * instances
        self.workers: set[Worker] = set()
        self._serial = 0
        self._failures = [0] * instances
        self._last_slot: OrderedDict[str, int] = OrderedDict()
        self._next_slot = 0
        self._changed = asyncio.Event()
        self._stopping = False
        self._stop_requested = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    # --- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Start every instance and wait until all are ready."""
        for slot in range(self.instances):
            await self._spawn(slot, report=slot == 0)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(w is not None and w.usable for w in self.slots):
            failed = [i for i, count in enumerate(self._failures) if count >= _MAX_START_FAILURES]
            if failed:
                raise ServeError(
                    f"instance slot {failed[0] + 1} failed to start {_MAX_START_FAILURES} times; "
                    "its output is above"
                )
            if time.monotonic() > deadline:
                raise ServeError(f"the instances were not ready after {START_TIMEOUT_S:.0f}s")
            await self._wait_change(0.5)

    async def stop(self) -> None:
        """Stop every worker (SIGTERM, then SIGKILL after a grace period)."""
        self._stopping = True
        self._stop_requested.set()
        spawning = {task for task in self._tasks if task.get_name() == "spawn"}
        if spawning:  # let a process being created register, so it is stopped too
            await asyncio.wait(spawning, timeout=STOP_TIMEOUT_S)
        workers = list(self.workers)
        for worker in workers:
            self._signal(worker, kill=False)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in workers:
            try:
                await asyncio.wait_for(worker.process.wait(), max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                logger.warning("instance %d did not stop; killing it", worker.serial)
                self._signal(worker, kill=True)
                await worker.process.wait()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2)
        for task in list(self._tasks):
            task.cancel()

    def kill(self) -> None:
        """Kill every worker now (a second Ctrl+C): :meth:`stop`, if waiting
        for them to finish their runs, returns at once."""
        self._stopping = True
        for worker in list(self.workers):
            self._signal(worker, kill=True)

    def _signal(self, worker: Worker, *, kill: bool) -> None:
        if worker.process.returncode is None:
            try:
                worker.process.kill() if kill else worker.process.terminate()
            except ProcessLookupError:
                pass

    def _task(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_change(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._changed.wait(), seconds)
        except TimeoutError:
            pass

    # --- spawning ----------------------------------------------------------

    async def _spawn(self, slot: int, delay: float = 0.0, *, report: bool = False) -> None:
        """Start a worker in ``slot``; ``report``: it shows the traceback of a
        route that fails to import (one worker per start or reload does: with
        the others and every replacement saying it in a line, a broken route's
        traceback is printed once, not once per instance)."""
        if delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_requested.wait(), delay)
        if self._stopping:
            return
        self._serial += 1
        serial = self._serial
        settings = WorkerSettings(
            project=self.spec.project,
            store_url=self.spec.store_url,
            instance=serial,
            token=self.spec.token,
            control_port=self.spec.control_port,
            framework=self.spec.framework,
            tools_enabled=self.spec.tools_enabled,
            agent_timeout_s=self.spec.agent_timeout_s,
            function_limits=self.spec.function_limits,
            node=self.spec.node,
            report_imports=report,
        )
        env = {
            **self.spec.env,
            SETTINGS_ENV: settings.encode(),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "makers_store.emulator.runtime.worker",
            cwd=self.spec.project,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        worker = Worker(serial, slot, process)
        self.slots[slot] = worker
        self.workers.add(worker)
        assert process.stdout is not None and process.stderr is not None
        self._task(self._relay(worker, process.stdout, sys.stdout.buffer, ready=True), "relay")
        self._task(self._relay(worker, process.stderr, sys.stderr.buffer, ready=False), "relay")
        self._task(self._watch(worker), "watch")

    async def _relay(
        self, worker: Worker, stream: asyncio.StreamReader, out: BinaryIO, *, ready: bool
    ) -> None:
        prefix = f"[instance {worker.serial}] ".encode()
        pending = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if ready and not worker.ready.is_set() and line.startswith(READY_MARKER.encode()):
                    worker.port = int(line.split()[1])
                    worker.ready.set()
                    logger.info("instance %d ready (pid %d)", worker.serial, worker.pid)
                    self._notify()
                    continue
                out.write(relayed_line(prefix, line))
            out.flush()
        if pending:
            out.write(relayed_line(prefix, pending))
            out.flush()

    async def _watch(self, worker: Worker) -> None:
        code = await worker.process.wait()
        worker.exited.set()
        self.workers.discard(worker)
        self._notify()
        if self._stopping or worker.retiring:
            return
        lived = time.monotonic() - worker.started
        if not worker.ready.is_set() or lived < 5:
            self._failures[worker.slot] += 1
        else:
            self._failures[worker.slot] = 0
        state = "while starting" if not worker.ready.is_set() else f"after {lived:.1f}s"
        logger.warning(
            "instance %d (pid %d) exited %s with code %s; starting a replacement",
            worker.serial,
            worker.pid,
            state,
            code,
        )
        if self.slots[worker.slot] is worker:
            delay = min(0.2 * 2 ** self._failures[worker.slot], 5.0) if self._failures[
                worker.slot
            ] else 0.0
            self._task(self._spawn(worker.slot, delay), "spawn")

    def _retire(self, worker: Worker, reason: str, *, report: bool = False) -> None:
        if worker.retiring:
            return
        worker.retiring = True
        logger.info("instance %d retires: %s", worker.serial, reason)
        if self.slots[worker.slot] is worker and not self._stopping:
            self._task(self._spawn(worker.slot, report=report), "spawn")
        if worker.inflight == 0:
            self._signal(worker, kill=False)
        else:
            asyncio.get_running_loop().call_later(
                DRAIN_TIMEOUT_S, lambda: self._signal(worker, kill=False)
            )

    async def restart_all(self, reason: str) -> None:
        """Replace every instance (used by --reload); the code changed, so the
        first replacement shows import tracebacks again."""
        for worker in [w for w in self.slots if w is not None]:
            self._retire(worker, reason, report=worker.slot == 0)

    # --- requests ----------------------------------------------------------

    def _choose(self, conversation_id: str) -> Worker | None:
        last = self._last_slot.get(conversation_id) if conversation_id else None
        if last is None:
            start = self._next_slot
            self._next_slot = (self._next_slot + 1) % self.instances
        elif self.sticky:
            start = last
        else:
            start = (last + 1) % self.instances
        for step in range(self.instances):
            slot = (start + step) % self.instances
            worker = self.slots[slot]
            if worker is not None and worker.usable:
                if not conversation_id:
                    return worker
                self._last_slot[conversation_id] = slot
                self._last_slot.move_to_end(conversation_id)
                if len(self._last_slot) > _REMEMBERED_CONVERSATIONS:
                    self._last_slot.popitem(last=False)
                return worker
        return None

    async def acquire(self, conversation_id: str) -> Worker:
        """The worker that takes the next request of ``conversation_id``."""
        deadline = time.monotonic() + ACQUIRE_TIMEOUT_S
        while True:
            worker = self._choose(conversation_id)
            if worker is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopping:
                raise NoInstanceError(f"no instance was ready within {ACQUIRE_TIMEOUT_S:.0f}s")
            await self._wait_change(remaining)
        worker.inflight += 1
        worker.served += 1
        if self.recycle_every and worker.served >= self.recycle_every:
            self._retire(worker, f"served {worker.served} requests (--recycle-every)")
        return worker

    def release(self, worker: Worker, *, counted: bool = True) -> None:
        """``worker`` finished a request (``counted=False``: it never got it)."""
        worker.inflight -= 1
        if not counted:
            worker.served -= 1
        if worker.retiring and worker.inflight == 0:
            self._signal(worker, kill=False)

    async def abort_on(
        self,
        workers: dict[Worker, dict[str, float]],
        conversation_id: str,
        except_run: str | None,
    ) -> list[dict[str, Any]]:
        """Abort the conversation's runs on ``workers``; the runs aborted.

        Each worker is also given the run ids dispatched to it (with their
        dispatch times), so one that has not started yet is aborted when it does.
        """
        targets = [w for w in workers if w.ready.is_set() and not w.exited.is_set()]
        results = await asyncio.gather(
            *(
                request_json(
                    "127.0.0.1",
                    worker.port,
                    "POST",
                    ABORT_PATH,
                    headers=[(TOKEN_HEADER.encode(), self.spec.token.encode())],
                    payload={
                        "conversation_id": conversation_id,
                        "except_run": except_run,
                        "dispatched": workers[worker],
                    },
                    within_s=ABORT_FANOUT_TIMEOUT_S,
                )
                for worker in targets
            ),
            return_exceptions=True,
        )
        aborted: list[dict[str, Any]] = []
        for worker, result in zip(targets, results, strict=True):
            if isinstance(result, UpstreamError):
                logger.warning("abort: instance %d did not answer: %s", worker.serial, result)
            elif isinstance(result, BaseException):
                raise result
            elif result[0] == 200 and isinstance(result[1], dict):
                aborted.extend(result[1].get("aborted", []))
        return aborted
