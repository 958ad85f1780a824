"""Run the CLI against a real SQLite store in tmp_path and read it back
through the library."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

import makers_store
from makers_store.cli.main import app

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


class Cli:
    """``cli("conv", "list")`` runs ``makers-store --store URL conv list`` in-process."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.runner = CliRunner(env={"COLUMNS": "200", "MAKERS_STORE_DEBUG": None})

    def __call__(self, *args: str, input: str | None = None, store: bool = True) -> Run:
        argv = ["--store", self.url, *args] if store else list(args)
        result = self.runner.invoke(app, argv, input=input)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Run(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, input: str | None = None) -> str:
        run = self(*args, input=input)
        assert run.exit_code == 0, (run.exit_code, run.stdout, run.stderr)
        return run.stdout


def make_store(url: str) -> str:
    """Create an empty store at ``url`` (read commands refuse a missing one)."""
    with makers_store.open_sync_store(url) as store:
        store.list_conversations()
    return url


@pytest.fixture
def url(tmp_path: Path) -> str:
    """An existing, empty SQLite store in tmp_path."""
    return make_store(f"sqlite:///{tmp_path}/s.db")


@pytest.fixture
def cli(url: str) -> Cli:
    return Cli(url)


@pytest.fixture
def lib(url: str) -> Iterator[makers_store.SyncContextStore]:
    """The library's view of the store the CLI writes."""
    with makers_store.open_sync_store(url) as store:
        yield store


def read_state(url: str, conversation_id: str) -> dict[str, Any]:
    """A conversation's state, read with the async API in a store of its own."""

    async def items() -> dict[str, Any]:
        async with makers_store.open_store(url) as store:
            return await store.bind(conversation_id).state.items()

    return asyncio.run(items())


def with_blobs(url: str, action: Callable[[makers_store.BlobStore], Awaitable[T]]) -> T:
    """Run ``action`` on the store's blob layer (to inspect or damage raw data)."""

    async def run() -> T:
        async with makers_store.open_store(url) as store:
            return await action(store.blobs)

    return asyncio.run(run())


def snapshot(url: str) -> dict[str, bytes]:
    """Every blob of the store, to compare before and after a command."""

    async def read(blobs: makers_store.BlobStore) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        after: str | None = None
        while True:
            batch = await blobs.list("", start_after=after, limit=500)
            for info in batch:
                blob = await blobs.get(info.key)
                assert blob is not None
                found[info.key] = blob.data
            if len(batch) < 500:
                return found
            after = batch[-1].key

    return with_blobs(url, read)


def console_script() -> list[str]:
    """The installed ``makers-store`` next to the interpreter, or ``python -m``."""
    script = Path(sys.executable).with_name("makers-store")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "makers_store.cli.main"]


def run_process(
    *args: str, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    environment.pop("MAKERS_STORE_DEBUG", None)
    return subprocess.run(
        [*console_script(), *args],
        capture_output=True,
        text=True,
        env=environment,
        input=input,
        timeout=timeout,
        check=False,
    )


def default_sigint() -> None:
    """``preexec_fn`` for a child the test interrupts: SIGINT back to its default.
    A suite started in the background (``nohup``, ``cmd &`` in a script) runs
    with SIGINT ignored, which children inherit; Python then installs no
    KeyboardInterrupt handler and a Ctrl-C test would wait for nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class TerminalRun:
    returncode: int
    stdout: str
    terminal: str  # what the command wrote on the terminal (stderr), with the echoed answer


def run_on_terminal(
    *args: str,
    answer: str | None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    stdout_on_terminal: bool = False,
    columns: int = 200,
) -> TerminalRun:
    """The CLI with stdin and stderr on a pseudo-terminal ``columns`` wide (a
    person at the keyboard) and stdout on a pipe, or on the terminal too
    (``stdout_on_terminal``: then everything is in ``.terminal`` and rich
    decides colours from the terminal alone, whatever the caller's
    environment forces). When it asks ``[y/N]``, ``answer`` is typed (None:
    Ctrl-D, no answer)."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    environment = {**os.environ, "COLUMNS": str(columns), **(env or {})}
    environment.pop("MAKERS_STORE_DEBUG", None)
    if stdout_on_terminal:
        for told_otherwise in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
            environment.pop(told_otherwise, None)
    process = subprocess.Popen(
        [*console_script(), *args], stdin=slave, stderr=slave,
        stdout=slave if stdout_on_terminal else subprocess.PIPE, env=environment,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"[y/N]: " in seen:
                os.write(master, b"\x04" if answer is None else answer.encode())
                answered = True
            if not ready and process.poll() is not None:
                break
        out = process.communicate(timeout=max(deadline - time.monotonic(), 1))[0] or b""
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()
    text = seen.decode("utf-8", "replace").replace("\r\n", "\n")
    return TerminalRun(process.returncode, out.decode("utf-8", "replace"), text)
