"""Exit codes and error lines: 0 ok, 1 error, 2 usage, 3 not found."""

from __future__ import annotations

from pathlib import Path

import pytest

import makers_store
from makers_store._core import keys
from makers_store.cli.errors import run_with_error_boundary
from makers_store.cli.main import app
from tests.cli.conftest import Cli, with_blobs


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in stderr
    return lines[0]


def test_not_found_is_3(cli: Cli) -> None:
    run = cli("conv", "show", "nope")
    assert run.exit_code == 3
    assert "nope" in one_error_line(run.stderr)
    assert cli("conv", "clear", "nope").exit_code == 3
    assert cli("msg", "show", "nope", "msg_0000000000_a").exit_code == 3
    assert cli("blob", "get", "c/nope/meta").exit_code == 3


def test_usage_errors_are_2(cli: Cli) -> None:
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "x")
    for args in (
        ("conv", "list", "--bogus"),
        ("conv", "list", "--order", "sideways"),
        ("conv", "list", "--limit", "0"),
        ("conv", "list", "--after", "x", "--before", "y"),
        ("conv", "list", "--after", "not-a-cursor"),
        ("msg", "list", "c1", "--after", "not-a-message-id"),
        ("msg", "append"),
        ("nosuchcommand",),
    ):
        run = cli(*args)
        assert run.exit_code == 2, (args, run.stdout, run.stderr)
        one_error_line(run.stderr)


def test_usage_error_names_the_argument(cli: Cli) -> None:
    run = cli("conv", "list", "--after", "not-a-cursor")
    assert "after" in one_error_line(run.stderr)
    run = cli("msg", "append", "x" * 300, "--role", "user", "--content", "hi")
    assert "conversation id must be at most 256" in one_error_line(run.stderr)  # CLI words


def test_store_errors_are_1(cli: Cli, tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a SQLite database" * 100)
    run = Cli(f"sqlite:///{broken}")("conv", "list")
    assert run.exit_code == 1
    assert str(broken) in one_error_line(run.stderr)


def test_corrupt_data_is_an_error_not_a_traceback(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x")
    (info,) = with_blobs(url, lambda blobs: blobs.list(keys.messages_prefix("c1")))
    with_blobs(url, lambda blobs: blobs.put(info.key, b"{not json"))
    run = cli("msg", "list", "c1")
    assert run.exit_code == 1
    assert "not valid JSON" in one_error_line(run.stderr)


def test_debug_shows_the_traceback(cli: Cli) -> None:
    run = cli("--debug", "conv", "show", "nope")
    assert run.exit_code == 3
    assert "Traceback" in run.stderr and run.stderr.rstrip().endswith("'nope' not found")


def test_help_everywhere_exits_0(cli: Cli) -> None:
    for args in (("-h",), ("--help",), ("conv", "-h"), ("msg", "append", "--help")):
        run = cli(*args, store=False)
        assert run.exit_code == 0 and "Usage:" in run.stdout


def test_a_group_without_a_command_prints_help(cli: Cli) -> None:
    run = cli("conv", store=False)
    assert run.exit_code == 2 and "list" in run.stderr


def test_run_with_error_boundary_returns_the_code(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_with_error_boundary(app, ["--store", url, "conv", "show", "nope"]) == 3
    assert run_with_error_boundary(app, ["--store", url, "conv", "list", "--bogus"]) == 2
    assert run_with_error_boundary(app, ["--store", url, "conv", "list"]) == 0
    assert "error: conversation 'nope' not found" in capsys.readouterr().err
