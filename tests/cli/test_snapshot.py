"""``snapshot``, ``reset`` and ``seed`` from the command line (issue 34): the
confirmation rules of every command that deletes (a plan, a question on a
terminal, --yes, --dry-run, refusal without a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

import makers_store
from tests.cli.conftest import Cli, run_on_terminal, snapshot

REFUSED = "no terminal to ask on (--yes goes ahead, --dry-run shows the plan)"


def test_save_list_restore_delete(cli: Cli, url: str, tmp_path: Path) -> None:
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "hello")
    saved = cli.ok("snapshot", "save", "before-bug")
    assert "saved snapshot 'before-bug'" in saved and "1 conversation, 1 message" in saved
    assert (tmp_path / "snapshots" / "before-bug.db").is_file()  # beside the store's file
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "the bug")
    cli.ok("msg", "append", "c2", "--role", "user", "--content", "more")
    after_bug = snapshot(url)

    listed = cli.ok("snapshot", "list")
    assert "before-bug" in listed and "1 conversation, 1 message" in listed
    items = json.loads(cli.ok("snapshot", "list", "--json"))["items"]
    assert [item["name"] for item in items] == ["before-bug"]
    assert items[0]["counts"]["messages"] == 1

    plan = cli.ok("snapshot", "restore", "before-bug", "--dry-run")
    assert plan.startswith("would replace everything in") and "'before-bug'" in plan
    refused = cli("snapshot", "restore", "before-bug")
    assert refused.exit_code == 1 and REFUSED in refused.stderr
    assert snapshot(url) == after_bug  # refused and dry runs change nothing
    cli.ok("snapshot", "restore", "before-bug", "--yes")
    with makers_store.open_sync_store(url) as lib:
        assert [m.content for m in lib.get_messages("c1")] == ["hello"]
        assert lib.get_conversation("c2") is None

    again = cli("snapshot", "save", "before-bug")  # replacing a snapshot asks too
    assert again.exit_code == 1 and REFUSED in again.stderr
    cli.ok("snapshot", "save", "before-bug", "--yes")

    assert cli("snapshot", "delete", "before-bug").exit_code == 1
    cli.ok("snapshot", "delete", "before-bug", "-y")
    assert cli("snapshot", "delete", "before-bug", "-y").exit_code == 3  # not found
    assert cli("snapshot", "restore", "nope", "-y").exit_code == 3
    assert cli("snapshot", "save", "../x").exit_code == 2  # bad input: a usage error
    assert "snapshot name" in cli("snapshot", "save", "../x").stderr


def test_reset_asks_on_a_terminal_and_empties(cli: Cli, url: str, tmp_path: Path) -> None:
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "hello")
    cli.ok("snapshot", "save", "one")
    cli.ok("msg", "append", "c2", "--role", "user", "--content", "two")
    declined = run_on_terminal("--store", url, "reset", answer="n\n")
    assert declined.returncode == 1 and "[y/N]: " in declined.terminal
    assert "delete everything in" in declined.terminal
    assert cli("reset").exit_code == 1
    done = run_on_terminal("--store", url, "reset", answer="y\n")
    assert done.returncode == 0, done.terminal
    assert "no conversations" in cli("conv", "list").stderr
    assert cli.ok("reset").strip() == "the store is empty"  # an empty store: nothing to ask
    restored = json.loads(cli.ok("reset", "--to", "one", "--json"))  # nothing to replace
    assert restored["name"] == "one"
    assert "c1" in cli.ok("conv", "list") and "c2" not in cli.ok("conv", "list")
    assert cli("reset", "--to", "one").exit_code == 1  # now it replaces: asks


def test_seed_a_folder(cli: Cli, url: str, tmp_path: Path) -> None:
    other = Cli(f"sqlite:///{tmp_path}/other.db")
    other.ok("msg", "append", "fixture", "-r", "user", "--content", "from the seed", "--id", "m1")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    other.ok("export", "-o", str(seeds / "one.jsonl"))
    out = cli.ok("seed", str(seeds))
    assert "seeded 1 conversation, 1 message" in out
    before = cli.ok("export")
    cli.ok("seed", str(seeds))
    assert cli.ok("export") == before  # the same conversations every time
    assert json.loads(cli.ok("seed", str(seeds / "one.jsonl"), "--json"))["messages"] == 1
    assert cli("seed", str(tmp_path / "missing")).exit_code == 3
