"""``makers_store.__all__`` is pinned, complete, and costs nothing to import.

As httpx does (tests/test_exported_members.py there): adding or removing a
public name is a deliberate change to the list below. The package resolves its
names lazily (store/__init__.py, PEP 562), so the checks here also hold the
lazy table, the names mypy sees (the ``TYPE_CHECKING`` imports) and ``__all__``
to one another.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path

import makers_store
from makers_store import errors

INIT = Path(makers_store.__file__)

EXPORTED = [
    "BackendError",
    "Blob",
    "BlobInfo",
    "BlobStore",
    "CheckpointName",
    "CheckpointPruneReport",
    "Clock",
    "ContextStore",
    "ContextWindow",
    "ConversationMeta",
    "CopyReport",
    "HistoryFinding",
    "HistoryRepair",
    "IdSource",
    "IndexCheck",
    "IndexDrift",
    "IndexEntry",
    "InvalidHistoryError",
    "ListConversationsResult",
    "MemoryConflictError",
    "MemoryCorruptError",
    "MemoryNotFoundError",
    "MemoryQuotaExceededError",
    "MemoryValidationError",
    "Message",
    "MessageHit",
    "MissingExtraError",
    "Portal",
    "PreconditionFailedError",
    "PruneReport",
    "RebuildSummary",
    "SnapshotInfo",
    "StateOnlyConversation",
    "StateStore",
    "StoreAdmin",
    "StoreChange",
    "StoreCounts",
    "StoreError",
    "StoreLocation",
    "StoreWatch",
    "SyncCallInEventLoopError",
    "SyncContextStore",
    "SyncStateStore",
    "SyncStoreAdmin",
    "SyncStoreWatch",
    "TransferCounts",
    "UnitRunner",
    "VacuumReport",
    "open_blob_store",
    "open_store",
    "open_sync_store",
    "to_anthropic_messages",
    "to_anthropic_request",
    "to_openai_input",
]


def test_all_is_the_pinned_sorted_list() -> None:
    assert makers_store.__all__ == EXPORTED
    assert sorted(EXPORTED) == EXPORTED


def test_every_exported_name_resolves() -> None:
    for name in makers_store.__all__:
        assert getattr(makers_store, name) is not None, name
    assert set(makers_store.__all__) <= set(dir(makers_store))


def test_every_public_name_the_package_defines_is_exported() -> None:
    """What ``import makers_store`` gives, once every lazy name is resolved,
    and that makers_store itself defines, is in ``__all__`` (imports of the
    ``__init__`` module such as ``importlib`` and the submodules are not)."""
    for name in makers_store.__all__:
        getattr(makers_store, name)
    defined = {
        name
        for name, value in vars(makers_store).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith("makers_store")
    }
    assert defined <= set(makers_store.__all__), sorted(defined - set(makers_store.__all__))


def test_every_store_error_is_exported() -> None:
    """docs/library.md: errors are "all importable from makers_store"."""
    tree = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.StoreError)
    }
    assert tree <= set(makers_store.__all__), sorted(tree - set(makers_store.__all__))


def _type_checking_imports() -> set[str]:
    module = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(
        node
        for node in module.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_lazy_table_what_mypy_sees_and_all_agree() -> None:
    lazy = set(makers_store._MODULE_OF)
    defined_here = {"open_sync_store"}
    assert lazy | defined_here == set(makers_store.__all__)
    assert _type_checking_imports() == lazy


def test_a_star_import_needs_no_optional_extra() -> None:
    probe = (
        "import sys\n"
        "from makers_store import *\n"
        "names = set(dir())\n"
        "import makers_store\n"
        "missing = set(makers_store.__all__) - names\n"
        "assert not missing, missing\n"
        "heavy = ['starlette', 'uvicorn', 'httpx', 'psycopg', 'aiobotocore', 'langgraph',\n"
        "         'claude_agent_sdk', 'agents']\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
