"""One voice across every command (issue 23, item 12): exit codes, "not found"
wording, counts with thousands separators and plurals, --json shapes and help
metavars, checked by walking the whole command tree; real processes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer.main

import makers_store
from makers_store.cli.main import _choices, app
from tests.cli.conftest import make_store, run_process
from tests.cli.test_docs_and_completions import command_paths

LEAVES = {
    path: command
    for path, command in command_paths(typer.main.get_command(app))
    if not hasattr(command, "commands")
}

#: For every command: the words after ``makers-store --store URL`` that name a
#: conversation (and message, key) that does not exist, and the error they get.
#: None: the command has no "not found" (it creates, or names no data).
NOT_FOUND: dict[str, tuple[tuple[str, ...], str] | None] = {
    "info": None,
    "export": (("export", "-c", "nope"), "conversation 'nope' not found"),
    "import": None,
    "copy": None,
    "serve": None,
    "init": None,
    "studio": None,
    "chat": None,
    "conv list": None,
    "conv show": (("conv", "show", "nope"), "conversation 'nope' not found"),
    "conv update": (("conv", "update", "nope", "--set", "a=1"), "conversation 'nope' not found"),
    "conv delete": (("conv", "delete", "nope", "--yes"), "conversation 'nope' not found"),
    "conv clear": (("conv", "clear", "nope", "--yes"), "conversation 'nope' not found"),
    "conv window": (("conv", "window", "nope"), "conversation 'nope' not found"),
    "conv fork": (("conv", "fork", "nope", "n2"), "conversation 'nope' not found"),
    "doctor": (("doctor", "nope"), "conversation 'nope' not found"),
    "prune": None,
    "conv summarize": (
        ("conv", "summarize", "c1", "--until", "m9", "--summary", "s"),
        "message 'm9' not found in conversation 'c1'",
    ),
    "vacuum": None,
    "msg append": None,
    "msg list": (("msg", "list", "nope"), "conversation 'nope' not found"),
    "msg search": (("msg", "search", "x", "-c", "nope"), "conversation 'nope' not found"),
    "msg show": (("msg", "show", "c1", "m9"), "message 'm9' not found in conversation 'c1'"),
    "msg update": (
        ("msg", "update", "c1", "m9", "--content", "x"),
        "message 'm9' not found in conversation 'c1'",
    ),
    "msg delete": (
        ("msg", "delete", "c1", "m9", "--yes"),
        "message 'm9' not found in conversation 'c1'",
    ),
    "msg tail": (("msg", "tail", "nope"), "conversation 'nope' not found"),
    "state get": (("state", "get", "c1", "k9"), "state key 'k9' not found in conversation 'c1'"),
    "state set": None,
    "state delete": (
        ("state", "delete", "nope", "k"),
        "conversation 'nope' not found",
    ),
    "state list": (("state", "list", "nope"), "conversation 'nope' not found"),
    "index ls": None,
    "index check": None,
    "index rebuild": None,
    "blob ls": None,
    "blob get": (("blob", "get", "c/nope/meta"), "blob 'c/nope/meta' not found"),
    "snapshot save": None,
    "snapshot list": None,
    "snapshot restore": (("snapshot", "restore", "nope", "--yes"), "snapshot 'nope' not found"),
    "snapshot delete": (("snapshot", "delete", "nope", "--yes"), "snapshot 'nope' not found"),
    "reset": (("reset", "--to", "nope", "--yes"), "snapshot 'nope' not found"),
    "seed": (("seed", "nope.jsonl"), "seed file or folder 'nope.jsonl' not found"),
}


@pytest.fixture
def one(tmp_path: Path) -> str:
    """A store with conversation c1: one message, one state entry."""
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    with makers_store.open_sync_store(url) as store:
        store.append_message(conversation_id="c1", role="user", content="hello")
        store.bind("c1").state.set("k", 1)
    return url


def test_the_table_names_every_command() -> None:
    assert set(NOT_FOUND) == set(LEAVES), set(NOT_FOUND) ^ set(LEAVES)


def test_not_found_is_exit_3_in_one_wording(one: str) -> None:
    for path, case in NOT_FOUND.items():
        if case is None:
            continue
        words, message = case
        run = run_process("--store", one, *words)
        assert (run.returncode, run.stderr) == (3, f"error: {message}\n"), path
        assert run.stdout == "", path


def test_every_command_refuses_an_unknown_option_with_exit_2() -> None:
    for path in LEAVES:
        run = run_process(*path.split(), "--bogus")
        assert run.returncode == 2, (path, run.stderr)
        assert run.stderr.startswith("error: No such option: --bogus"), (path, run.stderr)


def test_help_shows_values_one_way() -> None:
    for path, command in LEAVES.items():
        run = run_process(*path.split(), "--help")
        assert run.returncode == 0, path
        for odd in re.findall(r"<[^>]*>|\{[A-Za-z_]+\}|\[\[|x>=|<=x", run.stdout):
            raise AssertionError(f"{path}: {odd!r} in its help")
        for param in command.params:
            if param.param_type_name == "argument":
                assert param.metavar and param.metavar == param.metavar.upper(), (path, param)
            elif not getattr(param, "is_flag", False):
                metavar = param.metavar or ""
                if metavar.islower():  # a choice: the choices themselves (a lone one too)
                    assert metavar.split("|") == list(_choices(param) or ()), (path, metavar)
                    continue
                assert re.fullmatch(r"[A-Z_]+(=[A-Z_]+)?", metavar), (path, param.opts, metavar)


def test_counts_have_separators_and_plurals_agree(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/big.db")
    with makers_store.open_sync_store(url) as store:
        for first in (0, 1000):
            store.append_messages(
                conversation_id="c1",
                messages=[{"role": "user", "content": f"m{n}"} for n in range(first, 1234)][:1000],
            )
        store.bind("c1").state.set("only", True)
    backup = tmp_path / "b.jsonl"
    outputs = {
        "info": run_process("--store", url, "info").stdout,
        "conv list": run_process("--store", url, "conv", "list").stdout,
        "conv show": run_process("--store", url, "conv", "show", "c1").stdout,
        "export": run_process("--store", url, "export", "-o", str(backup)).stderr,
        "import": run_process("--store", f"{tmp_path}/other.db", "import", str(backup)).stderr,
        "copy": run_process("copy", url, f"{tmp_path}/third.db").stderr,
        "index check": run_process("--store", url, "index", "check").stdout,
        "index rebuild": run_process("--store", url, "index", "rebuild").stdout,
        "conv clear": run_process("--store", url, "conv", "clear", "c1", "--yes").stderr,
    }
    for name, text in outputs.items():
        if name not in ("copy", "index check", "index rebuild"):  # these count no messages
            assert "1,234" in text, (name, text)
        assert not re.search(r"(?<![\d,.:-])\d{4,}(?![\d:-])", text.replace("1,234", "")), (
            name,
            text,
        )
        assert not re.search(r"(?<![\d,])1 (conversations|messages|entries|blobs)\b", text), (
            name,
            text,
        )
    assert "exported 1 conversation, 1,234 messages, 1 state entry" in outputs["export"]
    assert "checked 1 entry and 1 conversation: no drift" in outputs["index check"]


def test_json_outputs_name_their_conversation(one: str) -> None:
    mid = json.loads(run_process("--store", one, "msg", "append", "c1", "-r", "assistant",
                                 "--content", "yo", "--json").stdout)  # fmt: skip
    assert mid["conversation_id"] == "c1" and mid["message_id"].startswith("msg_")
    shown = json.loads(run_process("--store", one, "msg", "show", "c1", mid["message_id"],
                                   "--json").stdout)  # fmt: skip
    updated = json.loads(run_process("--store", one, "msg", "update", "c1", mid["message_id"],
                                     "--content", "yo!", "--json").stdout)  # fmt: skip
    (listed,) = json.loads(run_process("--store", one, "msg", "list", "c1", "--json", "--order",
                                       "desc", "-n", "1").stdout)["items"]  # fmt: skip
    tailed = json.loads(run_process("--store", one, "msg", "tail", "c1", "-n", "1",
                                    "--json").stdout)  # fmt: skip
    assert shown["conversation_id"] == updated["conversation_id"] == "c1"
    assert list(listed) == list(tailed) == list(updated)  # the edited message, everywhere
    assert list(updated) == [*list(shown), "updated_at"]


def test_every_json_option_prints_json(one: str) -> None:
    needs = {
        "conv show": ("c1",),
        "conv update": ("c1", "--set", "t=1"),
        "conv window": ("c1",),
        "conv summarize": None,
        "conv fork": ("c1", "c1-fork"),
        "prune": ("--idle-for", "30d", "--dry-run"),
        "msg list": ("c1",),
        "msg search": ("hello",),
        "msg show": None,
        "msg update": None,
        "msg tail": ("c1",),
        "msg append": ("c1", "-r", "user", "--content", "x"),
        "state get": ("c1", "k"),
        "state list": ("c1",),
        "blob get": ("c/",),
        "import": None,
        "copy": None,
        "snapshot save": ("s1",),
        "snapshot restore": None,  # tests/cli/test_snapshot.py
        "reset": None,
        "seed": None,
    }
    for path, command in LEAVES.items():
        if "--json" not in {name for param in command.params for name in param.opts}:
            continue
        if path in needs and needs[path] is None:
            continue  # covered above or in their own tests
        words = (*path.split(), *needs.get(path, ()), "--json")
        run = run_process("--store", one, *words)
        if path == "blob get":
            assert run.returncode == 3  # no blob is named c/
            continue
        assert run.returncode == 0, (path, run.stderr)
        lines = run.stdout.splitlines()
        try:
            json.loads(run.stdout)
        except ValueError:  # a stream: one document per line
            for line in lines:
                json.loads(line)


def test_memory_stores_are_refused_by_every_command_that_opens_one() -> None:
    for words in (("conv", "list"), ("msg", "append", "c", "-r", "user", "--content", "x"),
                  ("info",),
                  ("studio",)):  # fmt: skip
        run = run_process("--store", "memory://", *words)
        assert run.returncode == 2, (words, run.stderr)
        assert "keeps data only inside one process" in run.stderr
    run = run_process("copy", "memory://", "sqlite:///x.db")
    assert run.returncode == 2 and "memory://" in run.stderr
