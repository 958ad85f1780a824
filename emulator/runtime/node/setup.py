"""What the Node worker runtime needs before serve starts: Node itself and tsx.

Checked once by the front (:func:`prepare_node`), never by the workers:

- ``node`` on ``PATH`` (or ``$MAKERS_STORE_NODE``), version 20 or later, the
  platform's runtime;
- the TypeScript loader when a ``.ts`` / ``.mts`` file is in ``agents/`` or
  ``cloud-functions/``: tsx (esbuild-based, https://tsx.is), installed with
  ``npm`` on first use into the user cache directory
  (``platformdirs.user_cache_dir("makers-store")/node/tsx-<version>``), with a
  message saying so. Plain ``.js`` / ``.mjs`` projects need no loader;
- for the project's middleware (``middleware.js`` / ``.ts``), Node and tsx
  whatever the routes' languages (:func:`prepare_middleware_node`);
- the project's own ``node_modules``: serve never runs ``npm install`` in a
  project (it would rewrite the lockfile and run install scripts); it warns
  when ``package.json`` lists dependencies and ``node_modules`` is missing.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..errors import NodeSetupError
from ..project.node_entry import TYPESCRIPT_SUFFIXES
from ..project.routes import AGENTS_DIR, FUNCTIONS_DIR, RouteTable

#: The tsx release serve installs (4.x: ``node --import tsx`` on Node 20).
TSX_VERSION = "4.23.15"
#: The oldest Node serve runs (the platform's runtime is Node 20).
MIN_NODE_MAJOR = 20
NODE_ENV = "MAKERS_STORE_NODE"
#: Overrides the cache folder tsx is installed into (tests, read-only homes).
CACHE_ENV = "MAKERS_STORE_NODE_CACHE"
_INSTALL_TIMEOUT_S = 300


@dataclass(frozen=True)
class NodeRuntime:
    """How every worker starts its Node worker."""

    node: str
    #: tsx's ESM loader (``node --import <this>``); None when no TypeScript is served.
    tsx_loader: str | None

    def to_json(self) -> dict[str, str | None]:
        return {"node": self.node, "tsx_loader": self.tsx_loader}

    @classmethod
    def from_json(cls, data: dict[str, str | None]) -> NodeRuntime:
        node = data["node"]
        assert node is not None
        return cls(node, data.get("tsx_loader"))


def _find_node(needed_for: str = "to serve .ts/.js agents and functions") -> str:
    given = os.environ.get(NODE_ENV)
    found = given or shutil.which("node")
    if not found:
        raise NodeSetupError(
            f"Node.js is needed {needed_for}, but `node` is not on "
            f"PATH; install Node.js {MIN_NODE_MAJOR} or later (or set ${NODE_ENV})"
        )
    try:
        version = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise NodeSetupError(f"{found} --version failed: {exc}") from None
    match = re.match(r"v(\d+)\.", version)
    if match is None or int(match.group(1)) < MIN_NODE_MAJOR:
        raise NodeSetupError(
            f"{found} is Node.js {version or '(unknown version)'}; the platform runs Node "
            f"{MIN_NODE_MAJOR}, and serve needs {MIN_NODE_MAJOR} or later"
        )
    return found


def _needs_typescript(project: Path) -> bool:
    for folder in (AGENTS_DIR, FUNCTIONS_DIR):
        for _root, dirs, files in os.walk(project / folder):
            dirs[:] = [d for d in dirs if d != "node_modules" and not d.startswith(".")]
            if any(name.endswith(TYPESCRIPT_SUFFIXES) for name in files):
                return True
    return False


def cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    return Path(given) if given else Path(platformdirs.user_cache_dir("makers-store")) / "node"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_tsx(node: str, notify: Callable[[str], None] = _say) -> str:
    """The path of tsx's loader, installing tsx into the cache on first use."""
    target = cache_dir() / f"tsx-{TSX_VERSION}"
    loader = target / "node_modules" / "tsx" / "dist" / "loader.mjs"
    if loader.is_file():
        return str(loader)
    npm = shutil.which("npm", path=f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if npm is None:
        raise NodeSetupError("TypeScript needs tsx, which serve installs with npm, but `npm` "
                             "is not on PATH; install npm (it comes with Node.js)")
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:  # two serve sessions starting at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if loader.is_file():
            return str(loader)
        notify(f"installing the TypeScript loader tsx {TSX_VERSION} into {target} with npm "
               "(first use only)")
        (target / "package.json").write_text(json.dumps({"private": True}), encoding="utf-8")
        command = [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix",
                   str(target), f"tsx@{TSX_VERSION}"]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=_INSTALL_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise NodeSetupError(f"installing tsx failed: {exc}") from None
        if done.returncode != 0 or not loader.is_file():
            raise NodeSetupError(
                f"installing tsx failed ({' '.join(command)} exited with {done.returncode}):\n"
                + (done.stderr or done.stdout).strip()[-2000:]
            )
    return str(loader)


def project_warnings(project: Path) -> list[str]:
    """A warning when the project's npm dependencies are not installed."""
    manifest = project / "package.json"
    if not manifest.is_file() or (project / "node_modules").is_dir():
        return []
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [f"{manifest} is not valid JSON; Node agents may not find their packages"]
    if not isinstance(data, dict) or not data.get("dependencies"):
        return []
    return [f"package.json lists dependencies but there is no node_modules/: run `npm install` "
            f"in {project} (serve does not install a project's packages)"]


def prepare_node(
    project: Path, routes: RouteTable, notify: Callable[[str], None] = _say
) -> NodeRuntime | None:
    """The Node runtime for ``routes`` (None: no Node route); NodeSetupError if unusable."""
    if not any(route.language == "node" for route in routes.all):
        return None
    node = _find_node()
    loader = ensure_tsx(node, notify) if _needs_typescript(project) else None
    return NodeRuntime(node, loader)


def prepare_middleware_node(
    middleware: str, notify: Callable[[str], None] | None = None
) -> tuple[str, str]:
    """Node and tsx's loader for the project's middleware (``middleware``: its file, shown).

    A middleware always runs through tsx, which loads ``.ts`` and ESM ``.js``
    alike (the platform bundles either). NodeSetupError when Node is missing:
    serve does not start without the middleware, which may be an auth guard.
    """
    node = _find_node(f"to run {middleware} (serve does not skip a middleware: it may guard "
                      "the app)")
    return node, ensure_tsx(node, notify or _say)
