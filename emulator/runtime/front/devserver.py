"""The project's frontend dev server, run beside the workers (``vite``, ``next dev``).

Started as the platform's dev server starts it (:mod:`..project.frontend`):
the dev command with ``--port <port>`` appended, the port the first free one
from :data:`FIRST_PORT` on loopback. It runs under :mod:`.guard`, so the dev
server's whole process group stops when serve stops, however serve stops
(its SIGKILL included). Its output is relayed line by line as
``[frontend] ...`` through :func:`..log.relayed_line`, the one safe printer,
with its port shown as serve's (the address to open is serve's). It is up once
its port accepts a connection, on 127.0.0.1 or ::1 (a server listening on
``localhost`` gets either); requests wait for that, up to a bound
(:meth:`DevServer.wait_ready`). Its exit is logged once, with the code;
serve goes on serving the agents.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ..errors import UpstreamError
from ..http_client import Connection
from ..log import relayed_line
from ..project.frontend import DevCommand

logger = logging.getLogger("makers_store.serve")

#: The platform's dev server gives its frontend this port, or the next free one.
FIRST_PORT = 6699
_LAST_PORT = FIRST_PORT + 1000
#: The guard, run by path (it imports nothing of the package).
GUARD = Path(__file__).with_name("guard.py")
#: Seconds serve waits for the guard to stop the group (its own grace is 2 s).
_STOP_WAIT_S = 5.0
PREFIX = b"[frontend] "
#: Colour codes (a dev server forced to colour): dropped, not shown escaped.
_COLOURS = re.compile(rb"\x1b\[[0-9;]*m")
_LOOPBACKS = ("127.0.0.1", "::1")
#: What a dev server prints when its port is taken (Node's error, Next's words).
_PORT_TAKEN = (b"EADDRINUSE", b"already in use")
#: Starts of a dev server whose port was taken before it could listen.
_STARTS = 3


def _free_on(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, port))
    except OSError as exc:
        # no IPv6 on this machine: only 127.0.0.1 counts
        return exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
    return True


def free_port(start: int = FIRST_PORT) -> int:
    """The first port from ``start`` free on 127.0.0.1 and ::1 alike (a dev
    server listening on ``localhost`` may take either)."""
    for port in range(start, _LAST_PORT):
        if all(_free_on(host, port) for host in _LOOPBACKS):
            return port
    raise UpstreamError(f"no free port for the frontend from {start} to {_LAST_PORT - 1}")


def _address(hexed: str) -> str:
    """A /proc/net/tcp{,6} local address as a host to connect to."""
    if len(hexed) == 8:
        host = ".".join(str(int(hexed[i : i + 2], 16)) for i in (6, 4, 2, 0))
        return "127.0.0.1" if host == "0.0.0.0" else host
    words = [hexed[i : i + 8] for i in range(0, 32, 8)]
    raw = b"".join(bytes.fromhex(word)[::-1] for word in words)  # each word little-endian
    if raw == bytes(16):
        return "::1"
    if raw[:12] == bytes(10) + b"\xff\xff":  # an IPv4-mapped address
        return _address(raw[12:][::-1].hex().upper())
    return socket.inet_ntop(socket.AF_INET6, raw)


def _listening_ports(guard_pid: int) -> dict[int, str] | None:
    """The TCP ports (and a host to reach each) that processes of the dev
    command's session listen on; None where ``/proc`` does not tell (not Linux)."""
    sockets: dict[str, tuple[int, str]] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path("/proc/net", table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            if table == "tcp":
                return None
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A":  # LISTEN
                address, hexed_port = fields[1].rsplit(":", 1)
                sockets[fields[9]] = (int(hexed_port, 16), _address(address))
    sessions: dict[int, int] = {}
    session = None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        sessions[int(entry)] = int(fields[3])
        if int(fields[1]) == guard_pid:  # the dev command: its session is its own pid
            session = int(entry)
    found: dict[int, str] = {}
    for pid, sid in sessions.items():
        if sid != session:
            continue
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for link in links:
            if link.startswith("socket:[") and link[8:-1] in sockets:
                listening, host = sockets[link[8:-1]]
                found.setdefault(listening, host)
    return found


class DevServer:
    """One dev server process (under its guard) and what serve knows about it."""

    def __init__(self, project: Path, command: DevCommand, public_port: int) -> None:
        self.project = project
        self.command = command
        self.public_port = public_port
        self.port = 0
        #: The loopback address its port accepted on (None: not up yet).
        self.host: str | None = None
        self.ready = asyncio.Event()
        self.exited = asyncio.Event()
        self.exit_code: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        #: Its output said its port was taken (by another program, since it was found free).
        self._port_taken = False
        self._starts = 0

    @property
    def argv(self) -> list[str]:
        return [*self.command.argv, "--port", str(self.port)]

    @property
    def pid(self) -> int | None:
        """The guard's pid (the dev server is its child)."""
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        self._starts += 1
        self._port_taken = False
        self.port = free_port(self.port + 1 if self.port else FIRST_PORT)
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-I", str(GUARD), str(self.project), *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.project,
            env=dict(os.environ),
        )
        assert self._process.stdout is not None
        logger.info("frontend: started `%s` (%s)", " ".join(self.argv), self.command.source)
        self._tasks = [
            asyncio.create_task(self._relay(self._process.stdout)),
            asyncio.create_task(self._watch(self._process)),
            asyncio.create_task(self._probe()),
        ]

    def _shown(self, line: bytes) -> bytes:
        """A line it printed, colour codes dropped, its own address (``http://localhost:6699``)
        shown with serve's port: the one to open. Other mentions of the port stay."""
        own = re.compile(rb"(://[\w.\-\[\]:]*?:)" + str(self.port).encode() + rb"(?!\d)")
        return own.sub(rb"\g<1>" + str(self.public_port).encode(), _COLOURS.sub(b"", line))

    async def _relay(self, stream: asyncio.StreamReader) -> None:
        out = sys.stderr.buffer
        pending = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not self.ready.is_set() and any(sign in line for sign in _PORT_TAKEN):
                    self._port_taken = True
                if line.strip():  # its blank spacing lines would be bare prefixes
                    out.write(relayed_line(PREFIX, self._shown(line.rstrip(b"\r"))))
            out.flush()
        if pending:
            out.write(relayed_line(PREFIX, self._shown(pending)))
            out.flush()

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        await asyncio.wait(self._tasks[:1], timeout=1.0)  # its last lines (the reason) are read
        if self._port_taken and not self._stopping and self._starts < _STARTS:
            # another program took the port between the check and the dev server's start
            logger.info("frontend: port %d was taken meanwhile; starting it again", self.port)
            self._tasks[2].cancel()  # the probe of this start
            await self.start()
            return
        self.exit_code = code
        self.exited.set()
        if not self._stopping:
            logger.warning(
                "frontend: the dev server `%s` exited with code %d; the agents are still "
                "served, the frontend is not (restart serve once it is fixed)",
                self.command.shown, code,
            )

    async def _probe(self) -> None:
        """Set :attr:`ready` once the dev server listens (or stop when it exits).

        Where ``/proc`` tells, the port is one a process of the dev server's own
        session listens on: another program may take the port between the check
        that it is free and the dev server's start (a second serve starting), and
        a dev server finding its port taken may move to the next one (Vite does).
        """
        while not self.exited.is_set():
            listening = await asyncio.to_thread(_listening_ports, self.pid or 0)
            candidates: list[tuple[str, int]] = []
            if listening is None:  # no /proc: whatever accepts on the port given
                candidates = [(host, self.port) for host in _LOOPBACKS]
            elif listening:
                port = self.port if self.port in listening else min(listening)
                candidates = [(listening[port], port)]
            for host, port in candidates:
                with contextlib.suppress(UpstreamError):
                    connection = await Connection.open(host, port, within_s=1.0)
                    await connection.close()
                    if port != self.port:
                        logger.info("frontend: the dev server listens on port %d, not %d",
                                    port, self.port)
                    self.host, self.port = host, port
                    self.ready.set()
                    logger.info("frontend: ready on port %d", self.port)
                    return
            await asyncio.sleep(0.1)

    async def wait_ready(self, within_s: float) -> bool:
        """Whether it is up, waiting up to ``within_s`` while it starts."""
        if self.ready.is_set():
            return True
        waiting = asyncio.ensure_future(self.ready.wait())
        ended = asyncio.ensure_future(self.exited.wait())
        _, pending = await asyncio.wait(
            {waiting, ended}, timeout=within_s, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
        return self.ready.is_set()

    async def connect(self, within_s: float) -> tuple[Connection, str]:
        """A connection to it and the address used; UpstreamError when it takes none."""
        hosts = [self.host or _LOOPBACKS[0]]
        hosts += [host for host in _LOOPBACKS if host not in hosts]
        failure: UpstreamError | None = None
        for host in hosts:
            try:
                connection = await Connection.open(host, self.port, within_s=within_s)
            except UpstreamError as exc:
                failure = exc
                continue
            self.host = host  # a restarted dev server may listen on the other one
            return connection, host
        assert failure is not None
        raise failure

    async def stop(self) -> None:
        """Stop the dev server's whole group (through its guard) and wait for it."""
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()  # the guard stops the group
            try:
                await asyncio.wait_for(process.wait(), _STOP_WAIT_S)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._tasks:  # its last lines are relayed before its output is let go
            await asyncio.wait(self._tasks[:1], timeout=1.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def kill(self) -> None:
        """A second Ctrl+C: the guard is told at once (it still gives the group its grace)."""
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)
