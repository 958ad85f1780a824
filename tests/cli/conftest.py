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
