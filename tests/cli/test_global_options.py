"""Global options after the command too (issue 23, item 8): one mechanism for
every command, real processes."""

from __future__ import annotations

import json
from pathlib import Path

import typer.main

import makers_store
from makers_store.cli.main import app
from tests.cli.conftest import make_store, run_process
from tests.cli.test_docs_and_completions import command_paths


def test_every_command_takes_store_and_debug_after_its_name() -> None:
    for path, command in command_paths(typer.main.get_command(app)):
        if hasattr(command, "commands"):
            continue
        names = {name for param in command.params for name in param.opts}
        assert {"--store", "--debug"} <= names, path


def test_store_after_the_command_is_the_store_used(tmp_path: Path) -> None:
    one, two = (make_store(f"sqlite:///{tmp_path}/{name}.db") for name in ("s1", "s2"))
    with makers_store.open_sync_store(two) as store:
        store.append_message(conversation_id="only-in-two", role="user", content="x")
    listed = run_process("conv", "list", "--json", "--store", two)
    assert listed.returncode == 0, listed.stderr
    assert [i["conversation_id"] for i in json.loads(listed.stdout)["items"]] == ["only-in-two"]
    # after wins over before, and over the environment
    later = run_process("--store", one, "conv", "list", "--json", f"--store={two}",
                        env={"MAKERS_STORE_URL": one})  # fmt: skip
    assert len(json.loads(later.stdout)["items"]) == 1
    appended = run_process("msg", "append", "c9", "--role", "user", "--content", "hi",
                           "--store", one)  # fmt: skip
    assert appended.returncode == 0, appended.stderr
    with makers_store.open_sync_store(one) as store:
        assert store.get_conversation(conversation_id="c9") is not None
    info = run_process("info", "--json", "--store", two)
    assert json.loads(info.stdout)["url"] == two


def test_debug_after_the_command_shows_the_traceback(url: str) -> None:
    run = run_process("conv", "show", "nope", "--store", url, "--debug")
    assert run.returncode == 3
    assert "Traceback" in run.stderr and run.stderr.endswith("not found\n")


def test_a_value_that_looks_like_a_global_option_stays_a_value(url: str) -> None:
    run = run_process("--store", url, "msg", "append", "c1", "--role", "user", "--content",
                      "--store")  # fmt: skip
    assert run.returncode == 0, run.stderr
    with makers_store.open_sync_store(url) as store:
        (message,) = store.get_messages(conversation_id="c1")
    assert message.content == "--store"


def test_serve_and_studio_keep_their_own_store_option() -> None:
    root = typer.main.get_command(app)
    for name in ("serve", "studio"):
        command = root.commands[name]  # type: ignore[attr-defined]
        stores = [param for param in command.params if "--store" in param.opts]
        assert len(stores) == 1 and stores[0].expose_value, name
