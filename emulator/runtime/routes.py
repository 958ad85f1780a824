"""Route discovery: which files of a Makers project answer which URLs.

``agents/`` (spec section 5): ``agents/<name>.py`` and
``agents/<name>/index.py`` answer ``POST /<name>``; every other file in an
agent folder is a sub-route (``agents/chat/stop.py`` -> ``POST /chat/stop``).

``cloud-functions/``: the file path is the URL path (``api/hello.py`` ->
``/api/hello``, ``index.py`` -> its folder), ``[id]`` (file or folder) matches
one path segment, ``[[default]].py`` matches everything below its folder
(zero or more segments). Static segments beat ``[id]``, which beats the
catch-all.

In both folders a file or folder whose name starts with ``_`` is a private
module: importable by relative imports, never routed. Only the file system
is read here; nothing is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

AGENTS_DIR = "agents"
FUNCTIONS_DIR = "cloud-functions"
#: Module names of the two folders when imported (see loader.py).
AGENTS_PACKAGE = "_makers_agents"
FUNCTIONS_PACKAGE = "_makers_cloud_functions"

_PARAM = re.compile(r"^\[([A-Za-z_][A-Za-z0-9_]*)\]$")
_CATCH_ALL = re.compile(r"^\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]$")
_SKIPPED_DIRS = {"__pycache__", "node_modules"}

SegmentKind = Literal["static", "param", "catch_all"]
_RANK: dict[SegmentKind, int] = {"static": 0, "param": 1, "catch_all": 2}


@dataclass(frozen=True, slots=True)
class Segment:
    kind: SegmentKind
    value: str  # the literal text, or the parameter's name


@dataclass(frozen=True, slots=True)
class Route:
    """One routed file."""

    runtime: Literal["agent", "function"]
    path: str  # "/chat/stop", "/api/users/[id]"
    file: Path  # absolute
    relative: str  # "agents/chat/stop.py" (what logs and errors show)
    module: str  # "_makers_agents.chat.stop"
    segments: tuple[Segment, ...]

    @property
    def methods(self) -> str:
        return "POST" if self.runtime == "agent" else "any (do_GET, do_POST, ...)"

    def sort_key(self) -> tuple[tuple[int, str], ...]:
        return tuple((_RANK[s.kind], s.value) for s in self.segments)

    def match(self, parts: list[str]) -> dict[str, str] | None:
        """Path parameters if ``parts`` (the URL's segments) match this route."""
        params: dict[str, str] = {}
        for index, segment in enumerate(self.segments):
            if segment.kind == "catch_all":
                params[segment.value] = "/".join(parts[index:])
                return params
            if index >= len(parts):
                return None
            if segment.kind == "static":
                if parts[index] != segment.value:
                    return None
            else:
                params[segment.value] = parts[index]
        return params if len(parts) == len(self.segments) else None


@dataclass(frozen=True, slots=True)
class RouteTable:
    project: Path
    agents: tuple[Route, ...] = ()
    functions: tuple[Route, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def all(self) -> tuple[Route, ...]:
        return self.agents + self.functions

    def agent_for(self, path: str) -> Route | None:
        parts = split_path(path)
        for route in self.agents:
            if route.match(parts) is not None:
                return route
        return None

    def function_for(self, path: str) -> tuple[Route, dict[str, str]] | None:
        parts = split_path(path)
        for route in self.functions:
            params = route.match(parts)
            if params is not None:
                return route, params
        return None


def split_path(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def _segment(name: str, *, allow_dynamic: bool) -> Segment:
    if allow_dynamic:
        found = _CATCH_ALL.match(name)
        if found:
            return Segment("catch_all", found.group(1))
        found = _PARAM.match(name)
        if found:
            return Segment("param", found.group(1))
    return Segment("static", name)


def _candidates(root: Path) -> list[Path]:
    files: list[Path] = []
    for file in sorted(root.rglob("*.py")):
        relative = file.relative_to(root)
        if any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative.parts):
            continue
        files.append(file)
    return files


def _discover(
    project: Path, folder: str, package: str, runtime: Literal["agent", "function"]
) -> tuple[list[Route], list[str]]:
    root = project / folder
    routes: dict[str, Route] = {}
    warnings: list[str] = []
    if not root.is_dir():
        return [], []
    for file in _candidates(root):
        relative = file.relative_to(root)
        names = [*relative.parts[:-1], relative.stem]
        shown = f"{folder}/{relative.as_posix()}"
        if any(name.startswith("_") for name in names):
            continue  # a private module (or __init__.py): importable, never routed
        if any("." in name for name in names):
            warnings.append(f"{shown}: not routed (a module name cannot contain '.')")
            continue
        module = ".".join([package, *names])
        routed = names[:-1] if names[-1] == "index" else names
        segments = tuple(_segment(n, allow_dynamic=runtime == "function") for n in routed)
        if any(s.kind == "catch_all" for s in segments[:-1]):
            warnings.append(f"{shown}: not routed (a [[catch-all]] must be the last segment)")
            continue
        path = "/" + "/".join(routed)
        route = Route(runtime, path, file.resolve(), shown, module, segments)
        if path in routes:
            warnings.append(f"{shown}: not routed ({routes[path].relative} already answers {path})")
            continue
        routes[path] = route
    ordered = sorted(routes.values(), key=lambda r: r.sort_key())
    return ordered, warnings


def discover(project: Path) -> RouteTable:
    """Scan ``project`` (a directory) for agent and cloud-function routes."""
    project = project.resolve()
    agents, agent_warnings = _discover(project, AGENTS_DIR, AGENTS_PACKAGE, "agent")
    functions, function_warnings = _discover(project, FUNCTIONS_DIR, FUNCTIONS_PACKAGE, "function")
    warnings = agent_warnings + function_warnings
    function_paths = {route.path: route for route in functions}
    for route in agents:
        other = function_paths.get(route.path)
        if other is not None:
            warnings.append(
                f"{route.path}: POST goes to {route.relative}; other methods to {other.relative}"
            )
    return RouteTable(project, tuple(agents), tuple(functions), tuple(warnings))
