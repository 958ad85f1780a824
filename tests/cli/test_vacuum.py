"""``makers-store vacuum`` and the reclaimable space ``makers-store info`` shows."""

from __future__ import annotations

import json
import re
import time

import makers_store
from tests.cli.conftest import Cli

PAD = "x" * 3000


def delete_much(lib: makers_store.SyncContextStore) -> None:
    for c in range(30):
        lib.append_messages(f"c{c}", [{"role": "user", "content": PAD} for _ in range(10)])
    for c in range(25):
        lib.delete_conversation(f"c{c}")
    # This process indexes what the writes left for the search index once they
    # pause (docs/backends.md): let it, so that it does not write to the file
    # while the commands below measure it (after a vacuum, the file grew).
    deadline = time.monotonic() + 30
    while (check := lib.admin.check_search_index()) is not None and check.pending:
        assert time.monotonic() < deadline, check
        time.sleep(0.05)


def test_info_shows_what_vacuum_gives_back(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    delete_much(lib)
    info = json.loads(cli.ok("info", "--json"))
    reclaimable = info["backend"]["reclaimable_bytes"]
    assert reclaimable > 500_000 and info["backend"]["auto_vacuum"] == "incremental"
    text = cli.ok("info")
    assert "reclaimable" in text and "makers-store vacuum gives it back" in text

    report = json.loads(cli.ok("vacuum", "--json"))
    assert report["backend"] == "sqlite" and report["nothing_to_do"] is False
    assert report["reclaimed_bytes"] == report["bytes_before"] - report["bytes_after"] > 0
    assert report["reclaimed_bytes"] >= reclaimable
    assert "free pages given back" in report["note"]

    after = json.loads(cli.ok("info", "--json"))
    assert after["backend"]["reclaimable_bytes"] == 0
    assert after["backend"]["size_bytes"] < info["backend"]["size_bytes"]
    assert (after["conversations"], after["messages"]) == (5, 50)  # no data lost
    assert "reclaimable  0 bytes" in cli.ok("info")


def test_vacuum_prints_sizes_and_what_it_did(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    delete_much(lib)
    text = cli.ok("vacuum")
    for label in ("backend  sqlite", "before", "after", "reclaimed", "done"):
        assert label in text, text
    assert "free pages given back in short transactions" in text
    again = cli.ok("vacuum")  # nothing left: says so, and succeeds
    assert "no free pages" in again
    # one unit for before, after and reclaimed (issue 32)
    unit = re.search(r"before  [\d.,]+ (\S+)", again)
    assert unit and f"reclaimed  0.0 {unit.group(1)}" in again, again


def test_vacuum_help_says_it_deletes_nothing(cli: Cli) -> None:
    help_text = cli.ok("vacuum", "--help")
    assert "deletes no data" in help_text and "no confirmation" in help_text


def test_vacuum_of_a_missing_store_creates_nothing(tmp_path: object) -> None:
    missing = f"sqlite:///{tmp_path}/none.db"
    run = Cli(missing)("vacuum")
    assert run.exit_code == 3, (run.stdout, run.stderr)
    assert "not found" in run.stderr
