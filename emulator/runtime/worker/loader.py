"""Import a project's ``agents/`` and ``cloud-functions/`` code.

Each folder becomes a private top-level package (``_makers_agents``,
``_makers_cloud_functions``) so relative imports work everywhere inside it
(``from ._memory import load``, ``from .._model import complete``) and file
names such as ``[id].py`` are importable. Modules are always compiled from
source: no ``__pycache__`` is read or written inside the project, so a
restart after an edit never runs stale bytecode.

The platform loads each cloud function as a top-level module with no package
around it (platform-runtime.md §1.4), which is why the templates put their own
folder on ``sys.path`` and import siblings by bare name (``from _logger import
create_logger``); that works here too, because ``__file__`` is the real path.
Relative imports work here but fail there, so a handler-class or framework
cloud function that uses one gets a warning (once per module and process)
when it is loaded. Context handlers (``async def handler(context)``) are
exempt: the official template that writes them imports its helpers
relatively (``from .._logger import ...``), so the platform loads those as
package members (:data:`..platform_choices.CONTEXT_HANDLER_ENTRY`). Helper
modules are exempt too: one is reached inside the package only through a
route's relative or package-qualified import, which is where the warning (if
any) belongs.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from ..project.entry_patterns import entry_in_tree
from ..project.routes import AGENTS_DIR, AGENTS_PACKAGE, FUNCTIONS_DIR, FUNCTIONS_PACKAGE

logger = logging.getLogger("makers_store.serve")
#: The entry kinds the platform loads as top-level modules (where relative imports fail).
_TOP_LEVEL_ENTRIES = frozenset({"handler", "app", "application"})


def _first_relative_import(tree: ast.Module) -> ast.ImportFrom | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            return node
    return None


def _warn_relative_import(path: str, tree: ast.Module) -> None:
    found = _first_relative_import(tree)
    if found is not None:
        shown = "." * found.level + (found.module or "")
        logger.warning(
            "%s:%d: `from %s import ...` is a relative import; the platform loads each "
            "cloud function as a top-level module, where it fails. Put the folder on "
            "sys.path and import the sibling by name instead",
            path, found.lineno, shown,
        )


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        tree = ast.parse(self.get_data(path), path)
        if fullname.startswith(FUNCTIONS_PACKAGE + "."):
            entry = entry_in_tree(tree)
            if entry is not None and entry.kind in _TOP_LEVEL_ENTRIES:
                _warn_relative_import(path, tree)
        return compile(tree, path, "exec", dont_inherit=True)


class ProjectFinder(importlib.abc.MetaPathFinder):
    """Finds ``_makers_agents.*`` and ``_makers_cloud_functions.*`` in a project."""

    def __init__(self, project: Path) -> None:
        self.roots = {
            AGENTS_PACKAGE: project / AGENTS_DIR,
            FUNCTIONS_PACKAGE: project / FUNCTIONS_DIR,
        }

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        top, _, rest = fullname.partition(".")
        root = self.roots.get(top)
        if root is None:
            return None
        location = root.joinpath(*rest.split(".")) if rest else root
        if location.is_dir():
            init = location / "__init__.py"
            if init.is_file():
                return importlib.util.spec_from_file_location(
                    fullname,
                    init,
                    loader=_SourceOnlyLoader(fullname, str(init)),
                    submodule_search_locations=[str(location)],
                )
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [str(location)]
            return spec
        source = location.with_name(location.name + ".py")
        if source.is_file():
            return importlib.util.spec_from_file_location(
                fullname, source, loader=_SourceOnlyLoader(fullname, str(source))
            )
        return None


def install(project: Path) -> None:
    """Make the project's code importable in this process (once)."""
    if not any(isinstance(finder, ProjectFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, ProjectFinder(project.resolve()))


def load_handler(module_name: str, attribute: str = "handler") -> Any:
    """The ``attribute`` of ``module_name`` (its entry), importing it once per process.

    Raises whatever the import raises, or :class:`LookupError` when the module
    defines no ``attribute``.
    """
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    handler = getattr(module, attribute, None)
    if handler is None:
        raise LookupError(f"defines no `{attribute}`")
    return handler
