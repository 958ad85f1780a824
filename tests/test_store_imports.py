"""The modules of ``store/`` import one another without a loop.

The graph is read from the source with ``ast``: the imports a module runs
when it is imported (at module level, in class bodies and in ``if``/``try``
blocks there), not those inside functions (they run on use) and not those
under ``if TYPE_CHECKING:`` (they never run). That graph has no cycle.

With the ``TYPE_CHECKING`` imports added, a cycle remains only through the
type-only edges listed in :data:`TYPE_ONLY`, each with the reason it stays:
public signatures that name each other. Any other loop, at run time or in
the types, fails here with its path.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import makers_store

ROOT = Path(makers_store.__file__).parent
PACKAGE = "makers_store"

#: Type-only imports that close a loop, and why each stays. Every one is an
#: annotation naming the class on the other side of a public API that names
#: both: at run time the importer never imports what it names.
TYPE_ONLY: dict[tuple[str, str], str] = {
    ("admin", "api"): (
        "StoreAdmin.copy_to(destination: ContextStore), while ContextStore.admin returns a "
        "StoreAdmin (imported on use: the import and copy machinery); the sync facade's "
        "generator maps the annotation ContextStore to SyncContextStore by name"
    ),
    ("framework_api", "api"): (
        "FrameworkMethods is a base of ContextStore and of nothing else: it hands its one "
        "subclass to the adapters it builds"
    ),
    ("adapters", "api"): "the adapter factories take the ContextStore that hands them out",
    ("adapters.claude_sessions", "api"): "ClaudeSessionStore(store: ContextStore)",
    ("adapters.langgraph_checkpoints", "api"): "MakersCheckpointSaver(store: ContextStore)",
    ("adapters.langgraph_store", "api"): "MakersLangGraphStore(store: ContextStore)",
    ("adapters.openai_sessions", "api"): "OpenAISession(store: ContextStore)",
}

Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def short(name: str) -> str:
    return name.removeprefix(f"{PACKAGE}.")


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_at_import(body: list[ast.stmt], *, type_checking: bool) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported (and,
    with ``type_checking``, those only type checkers read)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # runs on use
        yield node
        if isinstance(node, ast.If):
            if type_checking or not is_type_checking(node):
                yield from run_at_import(node.body, type_checking=type_checking)
            yield from run_at_import(node.orelse, type_checking=type_checking)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from run_at_import(block, type_checking=type_checking)
            for handler in node.handlers:
                yield from run_at_import(handler.body, type_checking=type_checking)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from run_at_import(node.body, type_checking=type_checking)


def known(name: str) -> str | None:
    """The module of ``store/`` that importing ``name`` runs, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, *, type_checking: bool) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in run_at_import(tree.body, type_checking=type_checking):
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
        found.update(target for name_ in targets if (target := known(name_)))
    found.discard(name)
    return found


def graph(*, type_checking: bool) -> Graph:
    return {name: imports_of(name, type_checking=type_checking) for name in MODULES}


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
    assert f"{PACKAGE}.runner" in runtime[f"{PACKAGE}.api"]  # from .runner import UnitRunner
    assert f"{PACKAGE}.layout" in runtime[f"{PACKAGE}.runner"]
    assert f"{PACKAGE}.admin" not in runtime[f"{PACKAGE}.api"]  # imported inside a property
    assert f"{PACKAGE}.api" in typed[f"{PACKAGE}.admin"]  # if TYPE_CHECKING: ...
    assert f"{PACKAGE}.api" not in runtime[f"{PACKAGE}.admin"]


def test_no_import_cycle_at_run_time() -> None:
    assert cycles(graph(type_checking=False)) == []


def test_type_only_cycles_are_the_listed_ones() -> None:
    typed, runtime = graph(type_checking=True), graph(type_checking=False)
    for (importer, imported), reason in TYPE_ONLY.items():
        source, target = f"{PACKAGE}.{importer}", f"{PACKAGE}.{imported}"
        assert target in typed[source], f"{importer} -> {imported} is gone: drop it ({reason})"
        assert target not in runtime[source], f"{importer} -> {imported} runs at import"
        typed[source].discard(target)
    assert cycles(typed) == []
