"""What each command imports (issue 32, item 9): a command imports only what
it needs, so the CLI starts fast. Pinned as module sets, not timings: each
case runs the real entry point in a subprocess and reports ``sys.modules``
after the command ran. The figures are in the issue's report and in
docs/cli.md ("Startup")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import make_store

PROBE = """
import json, sys
sys.argv = ["makers-store", *json.loads(sys.argv[1])]
from makers_store.cli.main import main
try:
    main()
finally:
    sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""

#: Never needed to print the version: everything but the standard library.
NOT_FOR_VERSION = ("typer", "rich", "makers_store.cli.app", "makers_store.api", "asyncio",
                   "sqlite3", "pydantic")  # fmt: skip
#: Never needed by commands that read a local store: pydantic (typer's value
#: checks), sqlite-utils (migrations of an old file only), the maintenance API,
#: progress bars, the runtime and the other commands' modules.
NOT_FOR_READING = ("pydantic", "sqlite_utils", "makers_store.maintenance.admin",
                   "makers_store.maintenance.copying", "makers_store.maintenance.importing",
                   "makers_store.maintenance.doctor", "rich.progress", "rich.live",
                   "makers_store.emulator.runtime", "starlette", "uvicorn", "httpx",
                   "makers_store.cli.serve", "makers_store.cli.chat", "makers_store.cli.studio",
                   "makers_store.cli.blob", "makers_store.cli.transfer",
                   "makers_store.cli.doctor")  # fmt: skip


def imported(*args: str) -> tuple[int, set[str]]:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    line = next(x for x in run.stderr.splitlines() if x.startswith("MODULES "))
    return run.returncode, set(json.loads(line.removeprefix("MODULES ")))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_version_imports_only_the_standard_library() -> None:
    code, modules = imported("--version")
    assert code == 0
    assert loaded(modules, NOT_FOR_VERSION) == []


def test_help_imports_no_library_backend_or_rich() -> None:
    code, modules = imported("--help")
    assert code == 0
    heavy = ("rich", "pydantic", "asyncio", "sqlite3", "makers_store.emulator",
             "makers_store.context_store")
    assert loaded(modules, heavy) == []


@pytest.mark.parametrize(
    "args",
    [["conv", "list"], ["msg", "list", "c1"], ["state", "list", "c1"]],
    ids=["conv-list", "msg-list", "state-list"],
)
def test_reading_a_local_store_imports_only_that_command(tmp_path: Path, args: list[str]) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    import makers_store

    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
        store.bind("c1").state.set("k", 1)
    code, modules = imported("--store", url, *args)
    assert code == 0
    assert loaded(modules, NOT_FOR_READING) == []
    others = tuple(
        f"makers_store.cli.{noun}" for noun in ("msg", "conv", "state") if noun != args[0]
    )
    assert loaded(modules, others) == []  # one noun built, not the tree


#: What ``conv list`` on an empty store does not need: it asks ``store.admin``
#: whether any conversation holds only state (the inventory's walk), and
#: nothing else of the maintenance room, of retention or of the adapters.
NOT_FOR_AN_EMPTY_LIST = ("makers_store.maintenance.copying", "makers_store.maintenance.importing",
                         "makers_store.maintenance.exporting", "makers_store.maintenance.doctor",
                         "makers_store.maintenance.index_repair", "makers_store.maintenance.search",
                         "makers_store.lifecycle.retention", "makers_store.lifecycle.fork",
                         "makers_store.adapters.claude", "makers_store.adapters.openai",
                         "makers_store.adapters.langgraph", *NOT_FOR_READING[:2],
                         *NOT_FOR_READING[6:])  # fmt: skip


def test_listing_an_empty_store_imports_only_the_inventory_of_the_admin(tmp_path: Path) -> None:
    code, modules = imported("--store", make_store(f"sqlite:///{tmp_path}/s.db"), "conv", "list")
    assert code == 0
    assert "makers_store.maintenance.inventory" in modules  # the state-only check ran
    assert loaded(modules, NOT_FOR_AN_EMPTY_LIST) == []


def test_the_version_printed_is_the_installed_one() -> None:
    from importlib.metadata import version

    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["--version"])],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.stdout == f"makers-store {version('makers-store')}\n"
