"""A conversation that holds only state (``state set`` before any message:
no meta, no recency index entry) exists for the CLI (issue 32, item 4), run
as a user runs it: the installed ``makers-store`` in a subprocess, through
pipes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import run_process


def test_show_and_list_name_state_only_conversations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    for key, value in (("step", "2"), ("name", '"hello"')):
        assert run_process("--store", url, "state", "set", "s1", key, value).returncode == 0
    shown = run_process("--store", url, "conv", "show", "s1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split("\n")[1].split() == ["messages", "no", "messages;", "2", "state",
                                                   "keys"]  # fmt: skip
    assert shown.stdout.split("\n")[2].split() == ["state", "name,", "step"]
    document = json.loads(run_process("--store", url, "conv", "show", "s1", "--json").stdout)
    assert document == {"conversation_id": "s1", "message_count": 0, "state_keys": ["name", "step"]}
    assert run_process("--store", url, "conv", "show", "s2").returncode == 3

    empty = run_process("--store", url, "conv", "list")
    assert empty.returncode == 0 and empty.stdout == ""
    assert empty.stderr == (
        "no conversations\nsome conversations hold only state: conv list --state-only\n"
    )
    listed = run_process("--store", url, "conv", "list", "--state-only")
    assert listed.returncode == 0
    assert [line.split() for line in listed.stdout.splitlines()] == [
        ["conversation", "state", "entries"],
        ["s1", "2"],
    ]
    run_process("--store", url, "msg", "append", "c1", "-r", "user", "-c", "hi")
    run_process("--store", url, "state", "set", "s0", "k", "1")
    two = json.loads(
        run_process("--store", url, "conv", "list", "--state-only", "--json", "-n", "1").stdout
    )
    assert two == {"items": [{"conversation_id": "s0", "state_entries": 1}], "more": True}
    csv = run_process("--store", url, "conv", "list", "--state-only", "--format", "csv")
    assert csv.stdout.splitlines() == ["conversation_id,state_entries", "s0,1", "s1,2"]
    refused = run_process("--store", url, "conv", "list", "--state-only", "--find", "x")
    assert refused.returncode == 2 and "--find cannot apply" in refused.stderr
