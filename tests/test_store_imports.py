"""The modules of the project import one another without a loop.

The project is one package, ``makers_store``, laid out in three folders
(``store/``, ``emulator/``, ``cli/``; ``pyproject.toml`` maps them), and the
graph covers all three. (The file is named for where it started, ``store/``.)

The graph is read from the source with ``ast``: the imports a module runs
when it is imported (at module level, in class bodies and in ``if``/``try``
blocks there), not those inside functions (they run on use) and not those
under ``if TYPE_CHECKING:`` (they never run). Importing ``a.b.c`` runs
``a/__init__`` and ``a/b/__init__`` first, so an import also reaches the
packages above its target (but those above the importer, already run). That
graph has no cycle.

Two more graphs, each allowed only the listed edges that close a loop, each
with the reason it stays; any other loop fails here with its path:

- on use, with the imports inside functions added: :data:`ON_USE`;
- in the types, with the ``TYPE_CHECKING`` imports added: :data:`TYPE_ONLY`
  (public signatures that name each other).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "makers_store"
#: package -> its folder (``[tool.setuptools] package-dir``)
FOLDERS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
    "tool"
]["setuptools"]["package-dir"]

#: Type-only imports that close a loop, and why each stays: none. (The
#: adapters and the maintenance room name the ``ConversationStore`` they are
#: handed, and only the facade above them names ``ContextStore``.)
TYPE_ONLY: dict[tuple[str, str], str] = {}

#: Imports inside functions that close a loop, and why each stays.
ON_USE: dict[tuple[str, str], str] = {}

Graph = dict[str, set[str]]


def module_name(package: str, folder: Path, path: Path) -> str:
    parts = [*package.split("."), *path.relative_to(folder).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(package, REPO / folder, path): path
    for package, folder in FOLDERS.items()
    for path in sorted((REPO / folder).rglob("*.py"))
    if "__pycache__" not in path.parts
}


def short(name: str) -> str:
    return name.removeprefix(f"{PACKAGE}.")


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_at_import(
    body: list[ast.stmt], *, type_checking: bool, on_use: bool = False
) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported (and,
    with ``type_checking``, those only type checkers read; with ``on_use``, the
    imports in its functions, which run when they are called)."""
    flags = {"type_checking": type_checking, "on_use": on_use}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if on_use:
                yield from (n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
            continue
        yield node
        if isinstance(node, ast.If):
            if type_checking or not is_type_checking(node):
                yield from run_at_import(node.body, **flags)
            yield from run_at_import(node.orelse, **flags)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from run_at_import(block, **flags)
            for handler in node.handlers:
                yield from run_at_import(handler.body, **flags)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from run_at_import(node.body, **flags)


def known(name: str) -> str | None:
    """The module of the project that importing ``name`` runs, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def packages_above(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))} & MODULES.keys()


def imports_of(name: str, *, type_checking: bool, on_use: bool = False) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in run_at_import(tree.body, type_checking=type_checking, on_use=on_use):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # ``from x import y``: the submodule x.y when there is one, else x
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                for alias in node.names
            ]
        else:
            continue
        for target in filter(None, map(known, targets)):
            # a.b.c runs a/__init__ and a/b/__init__ too, unless they have run already
            found |= {target} | (packages_above(target) - packages_above(name))
    found.discard(name)
    return found


def graph(*, type_checking: bool, on_use: bool = False) -> Graph:
    return {
        name: imports_of(name, type_checking=type_checking, on_use=on_use) for name in MODULES
    }


def cycles(edges: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(short(name) for name in component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_graph_reads_the_imports() -> None:
    """The reader finds what it should, so an empty answer below means something."""
    runtime, typed = graph(type_checking=False), graph(type_checking=True)
    on_use = graph(type_checking=False, on_use=True)
    api, admin = f"{PACKAGE}.context_store", f"{PACKAGE}.maintenance.admin"
    base = f"{PACKAGE}.api.conversation_store"
    assert f"{PACKAGE}._core.runner" in runtime[base]  # from .._core.runner import UnitRunner
    assert f"{PACKAGE}._core.layout" in runtime[f"{PACKAGE}._core.runner"]
    assert admin not in runtime[api]  # imported inside a property
    assert admin in on_use[api]
    assert base in typed[admin]  # if TYPE_CHECKING: ...
    assert base not in runtime[admin]
    serve = f"{PACKAGE}.emulator.runtime"
    assert f"{serve}.wire" in runtime[f"{serve}.front.app"]  # from ..wire import ...
    # from ..worker.context import AgentContext: the worker package's __init__ runs first
    assert {f"{serve}.worker.context", f"{serve}.worker"} <= runtime[f"{serve}.node.proxy"]
    assert f"{serve}.node" not in runtime[f"{serve}.node.proxy"]  # its own, already run
    context = f"{serve}.worker.context"
    assert f"{serve}.tools" in on_use[context] - runtime[context]  # ctx.tools, built on use
    assert f"{PACKAGE}.emulator.studio.pages" in runtime[f"{PACKAGE}.emulator.studio.app"]
    assert f"{PACKAGE}.cli.options" in runtime[f"{PACKAGE}.cli.serve"]


def allowed(edges: Graph, listed: dict[tuple[str, str], str], without: Graph) -> Graph:
    """``edges`` less the ``listed`` ones, each checked to be there and not in ``without``."""
    edges = {name: set(targets) for name, targets in edges.items()}
    for (importer, imported), reason in listed.items():
        source, target = f"{PACKAGE}.{importer}", f"{PACKAGE}.{imported}"
        assert target in edges[source], f"{importer} -> {imported} is gone: drop it ({reason})"
        assert target not in without[source], f"{importer} -> {imported} runs at import"
        edges[source].discard(target)
    return edges


def test_no_import_cycle_at_run_time() -> None:
    assert cycles(graph(type_checking=False)) == []


def test_imports_on_use_close_only_the_listed_cycles() -> None:
    runtime = graph(type_checking=False)
    assert cycles(allowed(graph(type_checking=False, on_use=True), ON_USE, runtime)) == []


def test_type_only_cycles_are_the_listed_ones() -> None:
    runtime = graph(type_checking=False)
    assert cycles(allowed(graph(type_checking=True), TYPE_ONLY, runtime)) == []


def test_no_import_cycle_at_all() -> None:
    """Every import counted at once: at import time, on use and for type
    checkers. No loop, not even through a ``TYPE_CHECKING`` import."""
    assert cycles(graph(type_checking=True, on_use=True)) == []


#: The rooms of the runtime whose modules run in a worker process.
WORKER_ROOMS = ("worker", "functions", "node", "store_rpc", "tools")


#: The rooms of the runtime that run in the front process besides ``front/`` itself.
FRONT_ROOMS = ("middleware",)


def test_the_front_rooms_import_no_other_room() -> None:
    """``front/`` may use ``middleware/`` (the project's middleware, run in the
    front's process); ``middleware/`` imports no room but the shared modules and
    ``project/`` (see ``emulator/runtime/__init__.py``)."""
    serve = f"{PACKAGE}.emulator.runtime"
    rooms = ("front", "worker", "functions", "node", "store_rpc", "tools", "shim")
    edges = graph(type_checking=True, on_use=True)
    for room in FRONT_ROOMS:
        for name in (module for module in MODULES if module.startswith(f"{serve}.{room}.")):
            reached = {target for target in edges[name]
                       if target.startswith(tuple(f"{serve}.{other}" for other in rooms))}
            assert not reached, f"{short(name)} imports {sorted(map(short, reached))}"
    app = f"{serve}.front.app"
    assert f"{serve}.middleware.step" in edges[app]  # the rule above is not vacuous


def test_the_front_imports_no_room_of_a_worker() -> None:
    """The front reaches workers over HTTP only (``runtime/wire.py``), so it never
    imports a module that runs in a worker (see ``emulator/runtime/__init__.py``)."""
    serve = f"{PACKAGE}.emulator.runtime"
    rooms = tuple(f"{serve}.{room}" for room in WORKER_ROOMS)
    edges = graph(type_checking=True, on_use=True)
    for name in (module for module in MODULES if module.startswith(f"{serve}.front")):
        reached = {target for target in edges[name] if target.startswith(rooms)}
        assert not reached, f"{short(name)} imports {sorted(map(short, reached))}"
