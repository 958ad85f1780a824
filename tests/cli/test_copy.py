"""``makers-store copy`` between two SQLite files, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli


def test_copy_then_copy_again(cli: Cli, tmp_path: Path) -> None:
    cli.ok("msg", "append", "c1", "-r", "user", "--content", "hello", "-u", "alice")
    cli.ok("state", "set", "c1", "step", '{"n": 1}')
    target = f"sqlite:///{tmp_path}/copy.db"
    first = json.loads(cli.ok("copy", cli.url, target, "--json"))
    assert first["conversations"] == first["conversations_written"] == 1
    assert first["bytes_written"] > 0
    again = json.loads(cli.ok("copy", cli.url, target, "--json"))
    assert (again["conversations_written"], again["conversations_unchanged"]) == (0, 1)
    assert again["bytes_written"] == 0
    copied = Cli(target)
    assert json.loads(copied.ok("state", "get", "c1", "step")) == {"n": 1}
    assert "hello" in copied.ok("msg", "list", "c1")
    assert "no drift" in copied.ok("index", "check")


def test_copy_reports_extra_blobs_and_prunes(cli: Cli, tmp_path: Path) -> None:
    cli.ok("msg", "append", "c1", "-r", "user", "--content", "hello")
    target = Cli(f"sqlite:///{tmp_path}/copy.db")
    target.ok("msg", "append", "other", "-r", "user", "--content", "x")
    run = cli("copy", cli.url, target.url)
    assert run.exit_code == 0
    assert "1 conversation and 0 blobs exist only in the destination" in run.stderr
    assert "copied 1 conversation (1 written, 0 already equal)" in run.stderr
    refused = cli("copy", cli.url, target.url, "--prune")
    assert refused.exit_code == 1 and "no terminal to ask on" in refused.stderr
    assert "other" in target.ok("conv", "list")
    pruned = cli("copy", cli.url, target.url, "--prune", "--yes")
    assert "deleted 1 conversation and 0 blobs only in the destination" in pruned.stderr
    assert "other" not in target.ok("conv", "list")


def test_copy_refuses_one_store_twice_and_bad_urls(cli: Cli) -> None:
    same = cli("copy", cli.url, cli.url)
    assert same.exit_code == 2 and "same store" in same.stderr
    bad = cli("copy", cli.url, "nosuch://x")
    assert bad.exit_code != 0 and "unknown scheme" in bad.stderr
