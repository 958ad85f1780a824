"""``--reload``: notice edits to a project's Python and Node code, ``.env`` files and edgeone.json.

Polls file modification times (no extra dependency; fine for a project's
size). Hidden folders (``.git``, ``.venv``, ``.makers-store``),
``__pycache__``, ``node_modules`` and any virtual environment (a folder
holding ``pyvenv.cfg``) are skipped.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..project.envfile import ENV_FILES

POLL_INTERVAL_S = 0.5
_SKIPPED = {"__pycache__", "node_modules"}
_WATCHED_NAMES = {*ENV_FILES, "edgeone.json", "package.json"}
#: Python sources and what the Node worker loads (node_entry.NODE_SUFFIXES).
_WATCHED_SUFFIXES = (".py", ".ts", ".mts", ".js", ".mjs")

Snapshot = dict[str, tuple[int, int]]


def snapshot(project: Path) -> Snapshot:
    """(mtime_ns, size) of every watched file under ``project``."""
    found: Snapshot = {}
    for root, dirs, files in os.walk(project):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED
            and not os.path.exists(os.path.join(root, d, "pyvenv.cfg"))
        ]
        for name in files:
            if name.endswith(_WATCHED_SUFFIXES) or name in _WATCHED_NAMES:
                path = os.path.join(root, name)
                try:
                    stat = os.stat(path)
                except OSError:
                    continue
                found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def changed_files(before: Snapshot, after: Snapshot, project: Path) -> list[str]:
    names = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    return sorted(os.path.relpath(p, project) for p in names)


async def watch(
    project: Path,
    on_change: Callable[[list[str]], Awaitable[None]],
    interval: float = POLL_INTERVAL_S,
) -> None:
    """Call ``on_change(files)`` after each batch of edits, until cancelled."""
    current = await asyncio.to_thread(snapshot, project)
    while True:
        await asyncio.sleep(interval)
        latest = await asyncio.to_thread(snapshot, project)
        if latest == current:
            continue
        await asyncio.sleep(0.2)  # let an editor finish writing a batch of files
        latest = await asyncio.to_thread(snapshot, project)
        files = changed_files(current, latest, project)
        current = latest
        if files:
            await on_change(files)
