"""Running Node scripts against a store RPC server on a real store.

The npm dependencies of the test projects (``project/``: LangGraph.js and
OpenAI Agents JS; ``claude-project/``: the Claude Agent SDK, without its
optional CLI binary) are installed with ``npm ci`` from their committed
lock files on first use, and again only when a lock file changes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from makers_store import ContextStore
from makers_store.emulator.runtime.store_rpc import start_store_rpc

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "project"
CLAUDE_PROJECT = HERE / "claude-project"
#: npm ci flags per project (none for others): the Claude SDK's 200 MB CLI
#: binary is optional and nothing here runs it
NPM_FLAGS = {CLAUDE_PROJECT: ("--omit=optional",)}


def npm_ci(project: Path) -> None:
    """Install ``project``'s locked npm dependencies unless they are current (any
    project with a lock file: tests/serve's Vite project uses it too)."""
    installed = project / "node_modules" / ".package-lock.json"
    lock = project / "package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed for the Node tests (Node 20 and npm)"
    command = [npm, "ci", "--no-audit", "--no-fund", *NPM_FLAGS.get(project, ())]
    subprocess.run(command, cwd=project, check=True, capture_output=True, timeout=900)


@asynccontextmanager
async def serving(store: ContextStore) -> AsyncIterator[str]:
    """A store RPC server on ``store``; yields its socket path (short, as
    Unix socket paths must be)."""
    folder = tempfile.mkdtemp(prefix="msrpc")
    path = os.path.join(folder, "store.sock")
    server = await start_store_rpc(store, path)
    try:
        yield path
    finally:
        await server.close()
        shutil.rmtree(folder, ignore_errors=True)


async def run_node(script: Path, socket: str, *args: str, stdin: bytes | None = None) -> Any:
    """Run ``script`` with MAKERS_STORE_RPC set; its stdout, parsed as JSON."""
    env = {**os.environ, "MAKERS_STORE_RPC": socket, "MAKERS_TEST_PROJECT": str(script.parent)}
    process = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        *args,
        cwd=script.parent,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout=120)
    assert process.returncode == 0, f"{script.name} failed:\n{err.decode()}"
    return json.loads(out)


def snake_keys(value: Any) -> Any:
    """A Node result with Python's names (``messageId`` -> ``message_id``), for comparing."""
    from makers_store.emulator.runtime.store_rpc.values import snake

    if isinstance(value, dict):
        return {snake(key): item for key, item in value.items()}
    if isinstance(value, list):
        return [snake_keys(item) for item in value]
    return value
