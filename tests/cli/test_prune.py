"""``makers-store prune``: its two modes, the confirmation rules every bulk
operation follows (says what it will delete, asks on a terminal, ``--yes``,
``--dry-run``, refused without a terminal), durations and JSON output."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

import makers_store
from makers_store.clock import FixedClock
from tests.cli.conftest import Cli, make_store, run_on_terminal


def seed(url: str) -> None:
    """Two conversations last written in 2023 (old: idle for years), one of
    them u1's, and one written now."""
    with makers_store.open_sync_store(url, clock=FixedClock()) as old:
        old.append_message("old1", "user", "a", user_id="u1")
        old.append_message("old1", "user", "b")
        old.append_message("old2", "user", "c", user_id="u2")
    with makers_store.open_sync_store(url) as now:
        now.append_message("fresh", "user", "d", user_id="u1")


def alive(url: str) -> list[str]:
    with makers_store.open_sync_store(url) as store:
        return sorted(c.conversation_id for c in store.iter_conversations())


def test_yes_deletes_the_idle_ones(cli: Cli) -> None:
    seed(cli.url)
    run = cli("prune", "--idle-for", "30d", "--yes")
    assert run.exit_code == 0, run.stderr
    assert run.stderr == "deleted 2 conversations with 3 messages\n"
    assert alive(cli.url) == ["fresh"]
    assert cli("prune", "--idle-for", "30d", "--yes").stderr == (
        "deleted 0 conversations with 0 messages\n"
    )


def test_dry_run_says_what_and_changes_nothing(cli: Cli) -> None:
    seed(cli.url)
    run = cli("prune", "--idle-for", "2w", "--dry-run")
    assert run.exit_code == 0
    lines = run.stdout.splitlines()
    assert re.fullmatch(
        r"would delete 2 conversations idle since \d{4}-\d\d-\d\d \d\d:\d\d \(14 days ago\) "
        r"or longer, with 3 messages",
        lines[0],
    ), lines[0]
    assert sorted(lines[1:]) == ["old1", "old2"]
    document = json.loads(cli.ok("prune", "--idle-for", "12h", "--dry-run", "--json"))
    assert document["dry_run"] is True
    assert (document["conversations"], document["messages"]) == (2, 3)
    assert sorted(document["conversation_ids"]) == ["old1", "old2"]
    assert alive(cli.url) == ["fresh", "old1", "old2"]


def test_without_a_terminal_and_without_yes_it_refuses(cli: Cli) -> None:
    seed(cli.url)
    run = cli("prune", "--idle-for", "90min")
    assert run.exit_code == 1
    assert "did not delete 2 conversations idle since " in run.stderr
    assert "(90 minutes ago) or longer" in run.stderr
    assert "no terminal to ask on" in run.stderr
    assert alive(cli.url) == ["fresh", "old1", "old2"]


def test_nothing_to_prune_asks_nothing(cli: Cli) -> None:
    with makers_store.open_sync_store(cli.url) as store:
        store.append_message("fresh", "user", "x")
    run = cli("prune", "--idle-for", "45s")  # no terminal, no --yes: nothing to refuse
    assert run.exit_code == 0 and run.stderr == "deleted 0 conversations with 0 messages\n"


def test_user_limits_it_to_that_users_conversations(cli: Cli) -> None:
    seed(cli.url)
    run = cli("prune", "--idle-for", "30d", "--user", "u1", "--yes", "--json")
    report = json.loads(run.stdout)
    assert report["conversation_ids"] == ["old1"] and report["dry_run"] is False
    assert (report["conversations"], report["messages"]) == (1, 2)
    assert alive(cli.url) == ["fresh", "old2"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "pass exactly one of --idle-for"),
        (["--idle-for", "30d", "--checkpoints", "keep-latest"], "pass exactly one of"),
        (["--idle-for", "0d"], "--idle-for must be a positive duration"),
        (["--idle-for", "30 parsecs"], "unknown unit 'parsecs'"),
        (["--idle-for", "-3h"], "--idle-for must be a positive duration"),
        (["--idle-for", "6m"], "write min for minutes (6min) or mo for months of 30 days (6mo)"),
        (["--idle-for", "9999999999d"], "--idle-for '9999999999d' is too long: at most 36500d"),
        (["--idle-for", "99999999999999w"], "--idle-for '99999999999999w' is too long"),
        (["--idle-for", "9" * 400 + "s"], "is too long"),
        (["--idle-for", "3y"], "unknown unit 'y'"),
        (["--idle-for", "30d", "--conversation", "c1"], "--conversation goes with --checkpoints"),
        (["--checkpoints", "keep-latest", "--user", "u"], "--user goes with --idle-for"),
        (["--idle-for", "30d", "--user", ""], "--user must not be empty"),
        (["--checkpoints", "keep-latest", "--conversation", ""], "--conversation must"),
    ],
)
def test_usage_errors_name_the_option(cli: Cli, args: list[str], words: str) -> None:
    seed(cli.url)
    run = cli("prune", *args, "--yes")
    assert run.exit_code == 2, run.stderr
    assert words in run.stderr
    assert alive(cli.url) == ["fresh", "old1", "old2"]


def test_checkpoints_mode(cli: Cli) -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    with makers_store.open_sync_store(cli.url) as store:
        saver = store.async_store.langgraph_checkpointer
        config: dict[str, dict[str, str]] = {"configurable": {"thread_id": "t1"}}
        for _ in range(3):
            checkpoint = empty_checkpoint()
            config = saver.put(config, checkpoint, {}, {})  # type: ignore[arg-type,assignment]
    plan = json.loads(cli.ok("prune", "--checkpoints", "keep-latest", "--dry-run", "--json"))
    assert (plan["threads"], plan["checkpoints"]) == (1, 2)
    refused = cli("prune", "--checkpoints", "keep-latest")
    assert refused.exit_code == 1 and "no terminal to ask on" in refused.stderr
    report = json.loads(
        cli.ok("prune", "--checkpoints", "keep-latest", "--conversation", "t1", "--yes", "--json")
    )
    assert (report["threads"], report["checkpoints_deleted"]) == (1, 2)
    assert cli("prune", "--checkpoints", "keep-latest").exit_code == 0  # nothing left to ask


@pytest.mark.slow
def test_on_a_terminal_it_asks(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    seed(url)
    declined = run_on_terminal("--store", url, "prune", "--idle-for", "30d", answer="n\n")
    assert declined.returncode == 1
    assert re.search(
        r"Delete 2 conversations idle since \d{4}-\d\d-\d\d \d\d:\d\d \(30 days ago\) or "
        r"longer, with 3 messages\? ",
        declined.terminal,
    ), declined.terminal
    assert alive(url) == ["fresh", "old1", "old2"]
    accepted = run_on_terminal("--store", url, "prune", "--idle-for", "30d", answer="y\n")
    assert accepted.returncode == 0, accepted.terminal
    assert "deleted 2 conversations with 3 messages" in accepted.terminal
    assert alive(url) == ["fresh"]


def _cut_short(url: str, cid: str, *, users_too: bool) -> None:
    """Remove conversation ``cid`` as a removal killed before its last step
    leaves it: every key but its recency index entry (and, ``users_too``,
    its per-user entries: rows deleted by hand)."""

    async def remove() -> None:
        async with makers_store.open_store(url) as store:
            for info in await store.blobs.list():
                mine = info.key.endswith("/" + cid) or info.key.startswith(f"c/{cid}/")
                if mine and not info.key.startswith(("i/all/", "i/u/" if users_too else "i/all/")):
                    await store.blobs.delete(info.key)

    asyncio.run(remove())


def test_index_entries_that_point_at_nothing_are_removed(cli: Cli) -> None:
    """A removal cut short leaves index entries without their conversation
    (issue 35: `index check` stayed at exit 1 through any number of CLI
    prunes, whose plan names conversations only): the prune removes the
    recency entries older than its cutoff, `index rebuild` every one."""
    seed(cli.url)
    _cut_short(cli.url, "old2", users_too=False)
    assert cli("index", "check").exit_code == 1
    run = cli("prune", "--idle-for", "30d", "--yes")
    assert run.exit_code == 0, run.stderr
    assert run.stderr == "deleted 1 conversation with 2 messages\n"
    assert cli("index", "check").exit_code == 0
    assert alive(cli.url) == ["fresh"]

    seed(cli.url)
    _cut_short(cli.url, "old1", users_too=True)  # its rows deleted by hand
    cli("prune", "--idle-for", "30d", "--yes")
    assert "stale" in cli("index", "check").stdout  # u1's entry: no prune walks it here
    assert cli("index", "rebuild").exit_code == 0
    assert cli("index", "check").exit_code == 0
