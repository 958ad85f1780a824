"""``makers-store doctor`` (issue 24, item 6): findings as safe text or JSON,
exit code 1 when something is found and 0 when clean, ``--fix`` through the
one confirmation gate. The stores the CLI shares with a test are the ones
several processes can open (SQLite, PostgreSQL, S3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import makers_store
from tests.backends import SHARED_BACKENDS, backend_url
from tests.cli.conftest import Cli, make_store, run_on_terminal, snapshot

CALL = {"id": "w1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}


def broken(url: str) -> None:
    """One repairable finding of each kind and one reported only."""
    with makers_store.open_sync_store(url) as store:
        store.append_message("tail", "user", "weather?")
        store.append_message("tail", "assistant", "", {"tool_calls": [CALL]})
        store.append_message("dup", "user", "hi", {"run_id": "r"})
        store.append_message("dup", "user", "hi", {"run_id": "r"})
        store.append_message("ghost", "tool", "42", {"tool_call_id": "nobody"})


@pytest.fixture(params=SHARED_BACKENDS)
def shared_cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    return Cli(make_store(backend_url(request.param, tmp_path)))


def test_a_clean_store_exits_0(cli: Cli) -> None:
    with makers_store.open_sync_store(cli.url) as store:
        store.append_message("c1", "user", "hi")
        store.append_message("c1", "assistant", "", {"tool_calls": [CALL]})
        store.append_message("c1", "tool", "sunny", {"tool_call_id": "w1"})
    assert cli.ok("doctor") == "checked 1 conversation: the history is clean\n"
    assert cli.ok("doctor", "c1") == "checked 1 conversation: the history is clean\n"
    assert json.loads(cli.ok("doctor", "--json")) == {
        "conversations": 1,
        "findings": [],
        "count": 0,
        "repairable": 0,
    }


def test_findings_exit_1_and_name_conversation_messages_and_rule(cli: Cli) -> None:
    broken(cli.url)
    run = cli("doctor")
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    assert lines[-1] == "checked 3 conversations: 3 findings, 2 repairable with --fix"
    heads = [line for line in lines if not line.startswith("    ")][:-1]
    assert [head.split("  ")[:2] for head in heads] == [
        ["dup", "duplicate-message"],
        ["ghost", "orphan-tool-result"],
        ["tail", "orphan-tool-call"],
    ]
    assert "[--fix: append a result saying the call was interrupted]" in run.stdout

    document = json.loads(cli("doctor", "tail", "--json").stdout)
    (finding,) = document["findings"]
    assert (finding["conversation_id"], finding["rule"], finding["call_id"]) == (
        "tail",
        "orphan-tool-call",
        "w1",
    )
    assert (document["count"], document["repairable"]) == (1, 1)


def test_an_unknown_conversation_is_not_found(cli: Cli) -> None:
    run = cli("doctor", "nobody")
    assert run.exit_code == 3
    assert "nobody" in run.stderr


def test_user_data_is_printed_as_text(cli: Cli) -> None:
    cid = "[bold]x[/bold]\x1b[31m"
    with makers_store.open_sync_store(cli.url) as store:
        store.append_message(cid, "tool", "42", {"tool_call_id": "[red]\x07"})
    run = cli("doctor")
    assert run.exit_code == 1
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "[bold]x[/bold]" in run.stdout  # shown as typed, not as markup


def test_options_that_go_with_fix(cli: Cli) -> None:
    for option in ("--dry-run", "--yes"):
        run = cli("doctor", option)
        assert run.exit_code == 2
        assert "go with --fix" in run.stderr


def test_fix_asks_first_and_dry_run_changes_nothing(shared_cli: Cli) -> None:
    cli = shared_cli
    broken(cli.url)
    before = snapshot(cli.url)

    refused = cli("doctor", "--fix")  # no terminal, no --yes
    assert refused.exit_code == 1
    assert "no terminal to ask on" in refused.stderr
    plan = cli("doctor", "--fix", "--dry-run")
    assert plan.exit_code == 1  # what was found is still there
    assert (
        "would append 1 interrupted tool result, delete 1 duplicate message in 2 conversations"
        in plan.stdout
    )
    as_json = json.loads(cli("doctor", "--fix", "--dry-run", "--json").stdout)
    assert (as_json["dry_run"], as_json["repairable"]) == (True, 2)
    assert len(as_json["findings"]) == 3
    assert snapshot(cli.url) == before

    done = cli("doctor", "--fix", "--yes")
    assert done.exit_code == 1  # the orphan result is reported, not repaired
    assert "repaired 2 of 2 repairable findings; 1 finding left" in done.stdout
    again = cli("doctor")
    assert again.exit_code == 1
    assert again.stdout.splitlines()[-1] == "checked 3 conversations: 1 finding"
    after = snapshot(cli.url)
    assert cli("doctor", "--fix", "--yes").exit_code == 1  # nothing left to repair
    assert snapshot(cli.url) == after

    with makers_store.open_sync_store(cli.url) as store:
        store.delete_conversation("ghost")
    assert cli("doctor", "--fix", "--yes").exit_code == 0


def test_fix_of_everything_repairable_exits_0(cli: Cli) -> None:
    with makers_store.open_sync_store(cli.url) as store:
        store.append_message("tail", "assistant", "", {"tool_calls": [CALL]})
    document = json.loads(cli("doctor", "tail", "--fix", "--yes", "--json").stdout)
    (repair,) = document["repairs"]
    assert repair["repaired"] and repair["finding"]["rule"] == "orphan-tool-call"
    assert document["remaining"] == 0
    assert cli.ok("doctor") == "checked 1 conversation: the history is clean\n"


@pytest.mark.slow
def test_fix_on_a_terminal(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    broken(url)
    before = snapshot(url)
    declined = run_on_terminal("--store", url, "doctor", "--fix", answer="n\n")
    assert declined.returncode == 1
    assert "Append 1 interrupted tool result, delete 1 duplicate message in 2 conversations? " in (
        declined.terminal
    )
    assert snapshot(url) == before
    accepted = run_on_terminal("--store", url, "doctor", "--fix", answer="y\n")
    assert accepted.returncode == 1, accepted.terminal  # the orphan result stays
    assert "repaired 2 of 2" in accepted.stdout


def test_every_rule_has_a_hint_and_findings_show_it(url: str) -> None:
    """A hint per rule (issue 32): on the line under each finding and in the
    JSON, through a real process and pipe."""
    from makers_store.cli.doctor import _HINTS
    from makers_store.lifecycle.history_rules import RULES
    from tests.cli.conftest import run_process

    assert set(_HINTS) == set(RULES)
    broken(url)
    run = run_process("--store", url, "doctor")
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith(" ") and number + 2 < len(lines):
            rule = line.split("  ")[1]
            assert lines[number + 2] == f"    hint: {_HINTS[rule]}", (rule, lines[number + 2])
    document = json.loads(run_process("--store", url, "doctor", "ghost", "--json").stdout)
    (finding,) = document["findings"]
    assert finding["hint"] == _HINTS["orphan-tool-result"]
