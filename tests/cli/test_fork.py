"""``makers-store conv fork`` and the parent ``conv show`` names, through the CLI."""

from __future__ import annotations

import json

import makers_store
from tests.cli.conftest import Cli


def test_fork_whole_and_up_to_a_message(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    first = cli.ok("msg", "append", "c1", "-r", "user", "--content", "hello", "-u", "alice").strip()
    cli.ok("msg", "append", "c1", "-r", "assistant", "--content", "hi", "--id", "reply-1")
    cli.ok("msg", "append", "c1", "-r", "user", "--content", "more")
    cli.ok("state", "set", "c1", "step", '{"n": 1}')
    whole = json.loads(cli.ok("conv", "fork", "c1", "c2", "--json"))
    assert whole["message_count"] == 3
    assert whole["metadata"]["forked_from"]["conversation_id"] == "c1"
    run = cli("conv", "fork", "c1", "c3", "--up-to", "reply-1")
    assert run.exit_code == 0, run.stderr
    assert "forked 2 messages of 'c1' into 'c3'" in run.stderr
    assert "c1 at message reply-1" in run.stdout
    assert [m.message_id for m in lib.get_messages("c3")] == [first, "reply-1"]
    assert json.loads(cli.ok("state", "get", "c3", "step")) == {"n": 1}
    assert "c3" in cli.ok("conv", "list", "--user", "alice")
    # a fork of a fork names its direct parent
    cli.ok("conv", "fork", "c3", "c4", "--up-to", first)
    assert f"forked from  c3 at message {first}" in cli.ok("conv", "show", "c4")
    assert "forked from" not in cli.ok("conv", "show", "c1")


def test_fork_errors_exit_with_their_codes_and_write_nothing(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    cli.ok("msg", "append", "c1", "-r", "user", "--content", "hello")
    cli.ok("msg", "append", "taken", "-r", "user", "--content", "mine")
    before = lib.admin.counts()
    exists = cli("conv", "fork", "c1", "taken")
    assert (exists.exit_code, "new_id 'taken' already exists") == (1, exists.stderr.strip()[7:])
    missing = cli("conv", "fork", "nowhere", "c9")
    assert (missing.exit_code, missing.stderr) == (3, "error: conversation 'nowhere' not found\n")
    absent = cli("conv", "fork", "c1", "c9", "--up-to", "nope")
    expected = "error: message 'nope' not found in conversation 'c1'\n"
    assert (absent.exit_code, absent.stderr) == (3, expected)
    empty = cli("conv", "fork", "c1", "c9", "--up-to", "")
    assert empty.exit_code == 2 and "--up-to must not be empty" in empty.stderr
    same = cli("conv", "fork", "c1", "c1")
    assert same.exit_code == 2 and "must differ" in same.stderr
    assert lib.admin.counts() == before
    assert lib.get_conversation("c9") is None
