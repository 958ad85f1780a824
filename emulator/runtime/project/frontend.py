"""The project's frontend, found as the platform's dev server finds it.

The platform's CLI (``edgeone makers dev``) serves the whole app on one port:
every request that no agent or cloud function answers goes to the frontend,
which is, in this order:

1. a *dev command*: ``edgeone.json`` ``devCommand``, else ``npx`` with
   ``package.json`` ``scripts.dev``, else ``scripts.start``; the command is
   split on spaces and started with ``--port <port>`` appended;
2. else the built ``outputDirectory`` of ``edgeone.json``, served as static
   files (:mod:`..front.frontend` has its 404 rules);
3. else none: the project is served as before (a ``makers-store init`` one).

:func:`find_frontend` reads the files and says which; :func:`missing_tool`
says, without running anything, why a dev command cannot start (no
``node_modules``, no such program), as one line naming the command to run.
Nothing is run here.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ServeError
from .edgeone import FILE_NAME as EDGEONE_JSON

PACKAGE_JSON = "package.json"


@dataclass(frozen=True)
class DevCommand:
    """A dev server to start: ``argv`` (without the ``--port`` the runtime appends)."""

    argv: tuple[str, ...]
    #: Where it came from, for the banner: "edgeone.json devCommand", "package.json scripts.dev".
    source: str

    @property
    def shown(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class StaticSite:
    """A built site: ``outputDirectory`` served as files."""

    directory: Path
    #: The value as edgeone.json spells it (for messages).
    configured: str


Frontend = DevCommand | StaticSite


def describe(frontend: Frontend) -> str:
    """What the banner says the frontend is: ``npx vite (package.json scripts.dev)``."""
    if isinstance(frontend, DevCommand):
        return f"{frontend.shown} ({frontend.source})"
    return f"the files of {frontend.configured} (edgeone.json outputDirectory)"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ServeError(f"{path}: cannot read it as JSON: {exc}") from None


def _object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = _read_json(path)
    return data if isinstance(data, dict) else {}


def find_frontend(project: Path) -> Frontend | None:
    """The frontend of ``project`` (None: it has none). ServeError on a broken JSON file."""
    edgeone = _object(project / EDGEONE_JSON)
    package = _object(project / PACKAGE_JSON)
    command = edgeone.get("devCommand")
    source = f"{EDGEONE_JSON} devCommand"
    if not (isinstance(command, str) and command):
        command, source = None, ""
        scripts = package.get("scripts")
        if isinstance(scripts, dict) and scripts:
            for name in ("dev", "start"):
                script = scripts.get(name)
                if isinstance(script, str) and script:
                    command, source = f"npx {script}", f"{PACKAGE_JSON} scripts.{name}"
                    break
    # the platform splits on single spaces and drops nothing but empty words
    if command is not None and "undefined" not in command:
        argv = tuple(word for word in command.split(" ") if word)
        if argv:
            return DevCommand(argv, source)
    output = edgeone.get("outputDirectory")
    if isinstance(output, str) and output:
        return StaticSite((project / output).resolve(), output)
    return None


def missing_tool(project: Path, command: DevCommand) -> str | None:
    """Why ``command`` cannot start (one line naming what to run), or None."""
    program = command.argv[0]
    words = [word for word in command.argv if word != "npx"]
    if words[:1] in (["edgeone"], ["makers-store"]) and any(
        word in ("dev", "serve") for word in words[1:3]
    ):  # the platform's skill docs say never to: it would start itself
        return (
            f"the dev command `{command.shown}` ({command.source}) starts a dev server of "
            "agents, not a frontend; not started (name the frontend's own, e.g. `vite`, in "
            "edgeone.json devCommand)"
        )
    if shutil.which(program) is None:
        hint = "install Node.js (20 or newer)" if program in ("npx", "npm", "node") else (
            f"install {program}"
        )
        return f"the frontend's dev command needs `{program}`, which is not on PATH: {hint}"
    if program != "npx" or len(command.argv) < 2:
        return None
    tool = command.argv[1]
    package = _object(project / PACKAGE_JSON)
    declared = any(
        isinstance(package.get(key), dict) and package[key]
        for key in ("dependencies", "devDependencies")
    )
    modules = project / "node_modules"
    if declared and not modules.is_dir():
        return (
            f"the frontend ({command.shown}) needs its npm packages and node_modules/ is "
            f"missing: run `npm install` in {project}, then restart serve"
        )
    local = modules / ".bin" / tool
    if os.sep in tool or "/" in tool or local.exists() or shutil.which(tool) is not None:
        return None
    # npx would download a package of that name from the registry: not what a dev server does
    return (
        f"the frontend's dev command `{command.shown}` needs `{tool}`, which is neither in "
        f"node_modules/.bin nor on PATH: run `npm install` in {project}, then restart serve"
    )
