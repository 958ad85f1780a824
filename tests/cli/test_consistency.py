"""--version, examples in every help, consistent wording and exit codes, and
completion of conversation ids and --store paths (issue 12, items 17 to 19)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.main

import makers_store
from makers_store.cli.main import app
from tests.cli.conftest import Cli, console_script, run_on_terminal, run_process, snapshot
from tests.cli.test_docs_and_completions import command_paths


def test_version_flag() -> None:
    for flag in ("--version", "-V"):
        run = run_process(flag)
        assert run.returncode == 0 and run.stdout == f"makers-store {version('makers-store')}\n"


def test_every_command_help_has_runnable_examples() -> None:
    paths = dict(command_paths(typer.main.get_command(app)))
    for path, command in paths.items():
        if hasattr(command, "commands"):
            continue
        run = run_process(*path.split(), "--help")
        assert run.returncode == 0, run.stderr
        assert "Examples:" in run.stdout, path
        shown = [line.strip()[2:] for line in run.stdout.splitlines() if line.strip()[:2] == "$ "]
        assert 1 <= len(shown) <= 2, (path, shown)
        for example in shown:
            words = shlex.split(example.split("|")[-1] if "| makers" in example else example)
            words = words[words.index("makers-store") + 1 :]
            while words and words[0].startswith("--"):  # global options
                words = words[2:]
            assert " ".join(words).startswith(path), (path, example)


def test_an_unknown_message_is_worded_alike_by_every_command(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x")
    before = snapshot(url)
    mid = "msg_0000000009_aaaaaaaaaa"
    expected = f"error: message '{mid}' not found in conversation 'c1'\n"
    for args in (
        ("msg", "show", "c1", mid),
        ("msg", "update", "c1", mid, "--content", "y"),
        ("msg", "delete", "c1", mid, "--yes"),
        ("msg", "delete", "c1", mid),
    ):
        run = cli(*args)
        assert (run.exit_code, run.stderr) == (3, expected), args
    assert snapshot(url) == before


def test_cursor_errors_name_the_flag(cli: Cli) -> None:
    # A message cursor may be any id (ids can be the caller's own), so it is
    # judged against the conversation's messages: the conversation must exist.
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "x")
    for args, flag in (
        (("conv", "list", "--after", "zz"), "--after"),
        (("conv", "list", "--before", "zz"), "--before"),
        (("msg", "list", "c1", "--after", "zz"), "--after"),
        (("msg", "list", "c1", "--before", "zz"), "--before"),
    ):
        run = cli(*args)
        assert run.exit_code == 2 and run.stderr.startswith(f"error: {flag} must be "), run.stderr


def test_tail_and_list_of_an_unknown_conversation_both_exit_3(cli: Cli) -> None:
    for args in (("msg", "list", "nope"), ("msg", "tail", "nope"), ("msg", "tail", "nope", "-f")):
        run = cli(*args)
        assert (run.exit_code, run.stderr) == (3, "error: conversation 'nope' not found\n"), args


def test_bare_groups_print_help_and_exit_2_like_the_bare_command(cli: Cli) -> None:
    for args in ((), ("conv",), ("msg",), ("state",), ("index",), ("blob",)):
        run = cli(*args, store=False)
        assert run.exit_code == 2, args
        shown = run.stdout + run.stderr
        assert "Usage:" in shown and "commands:" in shown.lower()  # the root's: in sections


def test_destructive_commands_all_ask_and_declining_writes_nothing_to_stdout(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    mid = lib.append_message(conversation_id="c1", role="user", content="x")
    before = snapshot(url)
    for args in (("conv", "delete", "c1"), ("conv", "clear", "c1"), ("msg", "delete", "c1", mid)):
        for answer in ("n\n", None, "maybe\n"):
            run = run_on_terminal("--store", url, *args, answer=answer)
            assert run.returncode == 1, (args, run.terminal)
            assert run.stdout == ""
            assert "? This cannot be undone [y/N]: " in run.terminal
            assert "(--yes skips the question)" in run.terminal
        piped = run_process("--store", url, *args, input="y\n")  # no terminal: no question
        assert piped.returncode == 1 and piped.stdout == ""
        assert "no terminal to ask on (--yes goes ahead" in piped.stderr
    assert snapshot(url) == before
    run = run_on_terminal("--store", url, "msg", "delete", "c1", mid, answer="y\n")
    assert run.returncode == 0 and run.stdout == ""
    assert lib.get_messages(conversation_id="c1") == []


def test_export_into_a_closed_pipe_exits_141_quietly(
    lib: makers_store.SyncContextStore, url: str
) -> None:
    for n in range(300):  # far more than a pipe buffers
        lib.append_message(conversation_id=f"c{n}", role="user", content="x" * 2000)
    script = " ".join(shlex.quote(word) for word in console_script())
    for args in ("export", "msg list c1"):
        done = subprocess.run(
            ["bash", "-c", f"{script} --store {shlex.quote(url)} {args} | head -c 10 >/dev/null;"
             ' echo "${PIPESTATUS[0]}" >&2'],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        lines = done.stderr.splitlines()
        if args == "msg list c1":  # short enough to be written before head stops
            assert lines == ["0"], done.stderr
        else:
            assert lines == ["141"], done.stderr


def test_json_outputs_carry_user_ids_and_conversation_ids(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x", user_id="u_1")
    lib.append_message(conversation_id="c1", role="user", content="y", user_id="u_2")
    shown = json.loads(cli.ok("conv", "show", "c1", "--json"))
    assert shown["user_ids"] == ["u_1", "u_2"]
    assert "u_1, u_2" in cli.ok("conv", "show", "c1")
    listed = json.loads(cli.ok("msg", "list", "c1", "--json"))["items"]
    assert [item["conversation_id"] for item in listed] == ["c1", "c1"]
    tailed = [json.loads(line) for line in cli.ok("msg", "tail", "c1", "--json").splitlines()]
    assert [item.keys() for item in tailed] == [listed[0].keys(), listed[1].keys()]


def typer_complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """What the shell gets from typer's completion (``--install-completion``)."""
    done = subprocess.run(
        console_script(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            **(env or {}),
            "_MAKERS_STORE_COMPLETE": "complete_bash",
            "COMP_WORDS": f"makers-store {words}",
            "COMP_CWORD": str(len(words.split(" "))),
        },
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_completion_offers_conversation_ids_and_store_paths(
    lib: makers_store.SyncContextStore, url: str, tmp_path: Path
) -> None:
    for cid in ("alpha", "alpine", "beta"):
        lib.append_message(conversation_id=cid, role="user", content="x")
    assert sorted(typer_complete(f"--store {url} msg list al")) == ["alpha", "alpine"]
    assert sorted(typer_complete("conv show ", env={"MAKERS_STORE_URL": url})) == [
        "alpha",
        "alpine",
        "beta",
    ]
    missing = tmp_path / "missing.db"
    assert typer_complete(f"--store {missing} conv show ") == []  # fails silently
    assert not missing.exists()  # and creates nothing
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / "one.db").write_bytes(b"")
    assert typer_complete(f"--store {tmp_path}/sto") == [f"{tmp_path}/stores/"]
    assert typer_complete(f"--store {tmp_path}/stores/") == [f"{tmp_path}/stores/one.db"]


def test_static_bash_script_completes_store_paths_and_asks_for_ids(
    lib: makers_store.SyncContextStore, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli.test_docs_and_completions import complete_bash

    (tmp_path / "store-one.db").write_bytes(b"")
    assert complete_bash("--store", f"{tmp_path}/store-") == [f"{tmp_path}/store-one.db"]
    for cid in ("alpha", "alpine", "beta"):
        lib.append_message(conversation_id=cid, role="user", content="x")
    # the script runs `makers-store` for the ids: the one next to this interpreter
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert sorted(complete_bash("--store", url, "msg", "list", "al")) == ["alpha", "alpine"]
    assert complete_bash("--store", url, "msg", "show", "alpha", "") == []  # a MESSAGE_ID


def test_a_short_option_means_one_thing_everywhere() -> None:
    """-c is --conversation in every command that has it (issue 32: it was
    --content in msg append and update), and so for every short option."""
    meanings: dict[str, set[str]] = {}
    for _, command in command_paths(typer.main.get_command(app)):
        for param in getattr(command, "params", []):
            longs = [name for name in param.opts if name.startswith("--")]
            for name in param.opts:
                if len(name) == 2 and longs:
                    meanings.setdefault(name, set()).add(longs[0])
    assert meanings["-c"] == {"--conversation"}
    several = {short: names for short, names in meanings.items() if len(names) > 1}
    assert several == {"-n": {"--limit", "--lines", "--last"}}  # how many, everywhere
    run = run_process("msg", "append", "c1", "-r", "user", "-c", "hi", "--store", "x.db")
    assert run.returncode == 2 and "-c" in run.stderr
