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
module: importable by relative imports, never routed. A cloud-function file
is routed only if it has one of the platform's entry patterns
(:mod:`.entry_patterns`, the context handler included); every other file there
is a helper module. Only the file system is read here; nothing is imported.

Node files (``.ts``, ``.mts``, ``.js``, ``.mjs``) are routed by the same rules
next to Python ones, with ``language="node"`` (:mod:`.node_entry` says which
cloud-function files are entries); a Python and a Node file answering the same
path is a conflict, the first one found wins and the other is reported.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .entry_patterns import EntryKind, find_entry
from .node_entry import function_entry_label, is_node_file

AGENTS_DIR = "agents"
FUNCTIONS_DIR = "cloud-functions"
#: Module names of the two folders when imported (see worker/loader.py).
AGENTS_PACKAGE = "_makers_agents"
FUNCTIONS_PACKAGE = "_makers_cloud_functions"

_PARAM = re.compile(r"^\[([A-Za-z_][A-Za-z0-9_]*)\]$")
_CATCH_ALL = re.compile(r"^\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]$")
_SKIPPED_AGENT_DIRS = {"__pycache__", "node_modules"}
#: The folders the platform never scans for cloud functions.
_SKIPPED_FUNCTION_DIRS = {
    "__pycache__", ".git", "node_modules", "venv", ".venv", "scripts", "tests", ".pytest_cache",
}

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
    #: How the module is entered: an agent's ``handler``, a cloud function's
    #: ``class handler``, its framework ``app`` / Django ``application``, or its
    #: ``handler`` function (a context handler).
    entry: EntryKind = "agent"
    #: What the route table shows about the entry ("agent", "Flask app", ...).
    entry_label: str = "agent"
    #: Which runtime runs it: the Python worker itself, or its Node worker.
    language: Literal["python", "node"] = "python"

    @property
    def methods(self) -> str:
        """The methods it answers, as the route table shows them."""
        if self.runtime == "agent":
            return "POST"
        if self.language == "node":
            return "ANY"
        return "do_*" if self.entry == "handler" else "ANY"  # a class answers its do_* only

    @property
    def shown_path(self) -> str:
        """The path as the route table shows it: ``/api/**`` for an app owning ``/api``."""
        if not self.owns_subtree:
            return self.path
        return self.path.rstrip("/") + "/**"

    @property
    def entry_attribute(self) -> str:
        """The module attribute the runtime calls."""
        return "handler" if self.entry in ("agent", "handler", "context_handler") else self.entry

    @property
    def owns_subtree(self) -> bool:
        """Framework apps answer their prefix and everything below it."""
        return self.entry in ("app", "application")

    def sort_key(self) -> tuple[tuple[int, str], ...]:
        key = tuple((_RANK[s.kind], s.value) for s in self.segments)
        # a framework app ranks like a catch-all below its prefix
        return (*key, (_RANK["catch_all"], "")) if self.owns_subtree else key

    def match(self, parts: list[str]) -> dict[str, str] | None:
        """Path parameters if ``parts`` (the URL's segments) match this route."""
        params: dict[str, str] = {}
        if self.owns_subtree and len(parts) > len(self.segments):
            parts = parts[: len(self.segments)]
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
    #: Cloud-function files without an entry pattern ("cloud-functions/api/_db.py"):
    #: importable helper modules, never routed.
    helpers: tuple[str, ...] = field(default=())

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


def _candidates(root: Path, skipped: set[str]) -> list[Path]:
    """The Python and Node files below ``root``, skipped and hidden folders pruned."""
    files: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skipped and not d.startswith(".")]
        for name in names:
            file = Path(folder, name)
            if not name.startswith(".") and (name.endswith(".py") or is_node_file(file)):
                files.append(file)
    return sorted(files)


@dataclass
class _Found:
    routes: dict[str, Route] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)


def _discover(
    project: Path, folder: str, package: str, runtime: Literal["agent", "function"]
) -> _Found:
    root = project / folder
    found = _Found()
    routes, warnings = found.routes, found.warnings
    if not root.is_dir():
        return found
    skipped = _SKIPPED_AGENT_DIRS if runtime == "agent" else _SKIPPED_FUNCTION_DIRS
    for file in _candidates(root, skipped):
        relative = file.relative_to(root)
        names = [*relative.parts[:-1], relative.stem]
        shown = f"{folder}/{relative.as_posix()}"
        if any(name.startswith("_") for name in names):
            continue  # a private module (or __init__.py): importable, never routed
        entry: EntryKind = "agent"
        label = "agent"
        language: Literal["python", "node"] = "node" if is_node_file(file) else "python"
        if runtime == "function" and language == "node":
            node_label = function_entry_label(file)
            if node_label is None:
                found.helpers.append(shown)
                continue
            entry, label = "node", node_label
        elif runtime == "function":
            function_entry = find_entry(file)
            if function_entry is None:
                found.helpers.append(shown)  # the platform copies it but does not route it
                continue
            entry, label = function_entry.kind, function_entry.label
        if language == "python" and any("." in name for name in names):
            warnings.append(f"{shown}: not routed (a module name cannot contain '.')")
            continue
        module = ".".join([package, *names]) if language == "python" else ""
        routed = names[:-1] if names[-1] == "index" else names
        segments = tuple(_segment(n, allow_dynamic=runtime == "function") for n in routed)
        if any(s.kind == "catch_all" for s in segments[:-1]):
            warnings.append(f"{shown}: not routed (a [[catch-all]] must be the last segment)")
            continue
        path = "/" + "/".join(routed)
        route = Route(
            runtime, path, file.resolve(), shown, module, segments, entry, label, language
        )
        if path in routes:
            warnings.append(f"{shown}: not routed ({routes[path].relative} already answers {path})")
            continue
        routes[path] = route
    return found


def discover(project: Path) -> RouteTable:
    """Scan ``project`` (a directory) for agent and cloud-function routes."""
    project = project.resolve()
    found_agents = _discover(project, AGENTS_DIR, AGENTS_PACKAGE, "agent")
    found_functions = _discover(project, FUNCTIONS_DIR, FUNCTIONS_PACKAGE, "function")
    agents = sorted(found_agents.routes.values(), key=lambda r: r.sort_key())
    functions = sorted(found_functions.routes.values(), key=lambda r: r.sort_key())
    warnings = found_agents.warnings + found_functions.warnings
    function_paths = {route.path: route for route in functions}
    for route in agents:
        other = function_paths.get(route.path)
        if other is not None:
            warnings.append(
                f"{route.path}: POST goes to {route.relative}; other methods to {other.relative}"
            )
    return RouteTable(
        project, tuple(agents), tuple(functions), tuple(warnings), tuple(found_functions.helpers)
    )
