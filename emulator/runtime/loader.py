"""Import a project's ``agents/`` and ``cloud-functions/`` code.

Each folder becomes a private top-level package (``_makers_agents``,
``_makers_cloud_functions``) so relative imports work everywhere inside it
(``from ._memory import load``, ``from .._model import complete``) and file
names such as ``[id].py`` are importable. Modules are always compiled from
source: no ``__pycache__`` is read or written inside the project, so a
restart after an edit never runs stale bytecode.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from .routes import AGENTS_DIR, AGENTS_PACKAGE, FUNCTIONS_DIR, FUNCTIONS_PACKAGE


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True)


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


def load_handler(module_name: str) -> Any:
    """The ``handler`` attribute of ``module_name``, importing it once per process.

    Raises whatever the import raises, or :class:`LookupError` when the module
    defines no ``handler``.
    """
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    handler = getattr(module, "handler", None)
    if handler is None:
        raise LookupError("defines no `handler`")
    return handler
