"""What each command imports (issue 32, item 9): a command imports only what
it needs, so the CLI starts fast. Pinned as module sets, not timings: each
case runs the real entry point in a subprocess and reports ``sys.modules``
after the command ran. The figures are in the issue's report and in
docs/cli.md ("Startup")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, make_store, run_on_terminal

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
#: rich (output to a pipe or a file is written without it; a terminal's is laid
#: out by it: test_a_terminal_still_gets_rich_s_layout), the runtime and the
#: other commands' modules.
NOT_FOR_READING = ("pydantic", "sqlite_utils", "makers_store.maintenance.admin",
                   "makers_store.maintenance.copying", "makers_store.maintenance.importing",
                   "makers_store.maintenance.doctor", "rich",
                   "makers_store.emulator.runtime", "starlette", "uvicorn", "httpx",
                   "makers_store.cli.serve", "makers_store.cli.chat", "makers_store.cli.studio",
                   "makers_store.cli.blob", "makers_store.cli.transfer",
                   "makers_store.cli.doctor", "makers_store.cli.window")  # fmt: skip


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
    heavy = (
        "rich",
        "pydantic",
        "asyncio",
        "sqlite3",
        "makers_store.emulator",
        "makers_store.context_store",
    )
    assert loaded(modules, heavy) == []


#: Imported by the library only on the paths that need them, not to read a
#: page: the search index's walk (a whole-store ``msg search``), the adapters'
#: entries (an adapter asked for) and key shapes (a retry error's words),
#: hashlib (an id over the key budget, a watch), random (a retry's wait), the
#: SQLite backend's snapshot, vacuum and watch modules (those commands only).
NOT_FOR_A_PAGE = ("makers_store.maintenance.search_index", "makers_store._core.adapter_keys",
                  "makers_store.adapters", "hashlib", "random",
                  "makers_store.emulator.sqlite.snapshot", "makers_store.emulator.sqlite.vacuum",
                  "makers_store.emulator.sqlite.watch")  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["conv", "list"], ["msg", "list", "c1"], ["state", "list", "c1"]],
    ids=["conv-list", "msg-list", "state-list"],
)
def test_reading_a_local_store_imports_only_that_command(tmp_path: Path, args: list[str]) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
        store.bind("c1").state.set("k", 1)
    code, modules = imported("--store", url, *args)
    assert code == 0
    assert loaded(modules, NOT_FOR_READING) == []
    assert loaded(modules, NOT_FOR_A_PAGE) == []
    if args[0] == "conv":  # a title is read beside the meta (models.title), not by search
        assert "makers_store.maintenance.search" not in modules
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


#: Reports, besides the modules, the functions whose signature typer read to
#: build a command (each costs about 2 ms: inspect, annotations evaluated).
BUILT_PROBE = """
import json, sys
import typer.main
read = []
typer_own = typer.main.get_params_from_function
def get_params_from_function(func):
    read.append(func.__module__ + "." + func.__name__)
    return typer_own(func)
typer.main.get_params_from_function = get_params_from_function
sys.argv = ["makers-store", *json.loads(sys.argv[1])]
from makers_store.cli.main import main
try:
    main()
finally:
    sys.__stderr__.write("\\nBUILT " + json.dumps(read) + "\\n")
"""


def built(*args: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", BUILT_PROBE, json.dumps(list(args))],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    line = next(x for x in run.stderr.splitlines() if x.startswith("BUILT "))
    return [name for name in json.loads(line.removeprefix("BUILT ")) if ".cli." in name]


def test_a_noun_builds_only_the_command_that_runs(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    ran = {name for name in built("--store", url, "conv", "list") if name.endswith("_command")}
    assert ran == {"makers_store.cli.conv.list_command"}  # not show, fork... window
    ran = {name for name in built("--store", url, "conv", "window", "c1") if "_command" in name}
    assert ran == {"makers_store.cli.window.window_command"}  # a command kept in window.py
    # the help of the noun still lists (so builds) every command, window's too
    listed = built("conv", "--help")
    assert "makers_store.cli.conv.show_command" in listed
    assert "makers_store.cli.window.summarize_command" in listed


def on_terminal(*args: str) -> str:
    """The CLI's output with stdout and stderr on a terminal 100 columns wide."""
    run = run_on_terminal(*args, answer=None, stdout_on_terminal=True, columns=100, timeout=30)
    assert run.returncode == 0, run.terminal
    return run.terminal


def without_escapes(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_a_terminal_still_gets_rich_s_layout(tmp_path: Path) -> None:
    """The split the imports above rely on: with stdout on a terminal rich
    lays the table out (bold header, a long title cut at 40 cells with an
    ellipsis, rows within the terminal's width) and colours JSON; in a pipe
    the same command writes every character, without escape codes."""
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    long_title = "A title much longer than forty cells, so rich cuts it short"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", {"weather": "sunny \x1b[31m"})
        store.update_conversation("c1", metadata={"title": long_title})

    table = on_terminal("--store", url, "conv", "list")
    assert "\x1b[1mconversation" in table  # the header, bold
    assert long_title[:30] in table and long_title not in table and "…" in table
    assert all(len(line) <= 100 for line in without_escapes(table).splitlines())
    transcript = on_terminal("--store", url, "msg", "list", "c1")
    assert transcript != without_escapes(transcript)  # coloured
    assert '"sunny \\u001b[31m"' in without_escapes(transcript)  # user data still escaped

    piped = subprocess.run(
        [*console_script(), "--store", url, "conv", "list"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "\x1b" not in piped and long_title in piped
