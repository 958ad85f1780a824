"""Bulk operations that delete or replace data say what they will do, ask on a
terminal, refuse without one, and --dry-run changes nothing (issue 23, items
10 and 11): real processes, with a pseudo-terminal where a person would be."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, make_store, run_on_terminal, run_process, snapshot

EXTRA = 1200  # conversations only in the destination: printed as "1,200"


def fill(url: str, ids: list[str], content: str = "x") -> None:
    with makers_store.open_sync_store(url) as store:
        for cid in ids:
            store.append_message(conversation_id=cid, role="user", content=content)


@pytest.mark.slow
def test_copy_prune_says_how_many_it_deletes_and_asks(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path}/src.db", f"sqlite:///{tmp_path}/dst.db"
    fill(source, ["kept"])
    fill(target, [f"old{n:04}" for n in range(EXTRA)])
    before = snapshot(target)

    refused = run_process("copy", source, target, "--prune")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("error: did not copy 1 conversation (1 new, ")
    assert f"delete {EXTRA:,} conversations and 0 blobs that exist only in the destination" in (
        refused.stderr
    )
    assert refused.stderr.rstrip().endswith(
        "no terminal to ask on (--yes goes ahead, --dry-run shows the plan)"
    )
    plan = run_process("copy", source, target, "--prune", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0].startswith("would copy 1 conversation") and f"delete {EXTRA:,}" in lines[0]
    assert lines[1:] == [f"delete conversation 'old{n:04}'" for n in range(EXTRA)]
    as_json = json.loads(run_process("copy", source, target, "--prune", "--dry-run",
                                     "--json").stdout)  # fmt: skip
    assert (as_json["deleted"], as_json["new"], as_json["dry_run"]) == (EXTRA, 1, True)
    declined = run_on_terminal("copy", source, target, "--prune", answer="n\n")
    assert declined.returncode == 1
    assert f"delete {EXTRA:,} conversations" in declined.terminal
    assert "? This cannot be undone [y/N]: " in declined.terminal
    assert snapshot(target) == before  # refused, planned, declined: nothing changed

    done = run_on_terminal("copy", source, target, "--prune", answer="y\n")
    assert done.returncode == 0, done.terminal
    with makers_store.open_sync_store(target) as store:
        assert [m.conversation_id for m in store.list_conversations().items] == ["kept"]
    again = run_process("copy", source, target, "--prune")  # nothing to delete or replace
    assert again.returncode == 0, again.stderr


def test_import_says_it_replaces_what_changed_since_the_backup(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    fill(url, ["c1", "c2"])
    backup = tmp_path / "backup.jsonl"
    assert run_process("--store", url, "export", "-o", str(backup)).returncode == 0
    assert run_process("--store", url, "import", str(backup)).returncode == 0  # all equal
    with makers_store.open_sync_store(url) as store:
        later = store.append_message(conversation_id="c1", role="user", content="after backup")
    before = snapshot(url)

    refused = run_process("--store", url, "import", str(backup))
    assert refused.returncode == 1
    assert "1 replacing a different copy in the store, 1 already equal" in refused.stderr
    plan = run_process("--store", url, "import", str(backup), "--dry-run")
    assert plan.returncode == 0 and plan.stdout.splitlines()[1:] == ["replace conversation 'c1'"]
    from_stdin = run_process("--store", url, "import", "-", input=backup.read_text())
    assert from_stdin.returncode == 1 and "from standard input" in from_stdin.stderr
    declined = run_on_terminal("--store", url, "import", str(backup), answer=None)
    assert declined.returncode == 1 and "[y/N]: " in declined.terminal
    assert snapshot(url) == before

    done = run_process("--store", url, "import", str(backup), "--yes")
    assert done.returncode == 0, done.stderr
    with makers_store.open_sync_store(url) as store:
        assert store.get_message(conversation_id="c1", message_id=later) is None


def test_dry_runs_create_no_store(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path}/src.db"
    fill(source, ["c1"])
    backup = tmp_path / "b.jsonl"
    assert run_process("--store", source, "export", "-o", str(backup)).returncode == 0
    missing = tmp_path / "new.db"
    run = run_process("--store", str(missing), "import", str(backup), "--dry-run")
    assert run.returncode == 0 and run.stdout.startswith("would import 1 conversation")
    run = run_process("copy", source, str(missing), "--dry-run")
    assert run.returncode == 0 and "(1 new, 0 replacing" in run.stdout
    assert not missing.exists()


def test_empty_input_to_import_is_a_usage_error(url: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    run = run_process("--store", url, "import", "-", input="")
    assert run.returncode == 2
    assert run.stderr == "error: standard input is empty: nothing to import\n"
    run = run_process("--store", url, "import", str(empty))
    assert run.returncode == 2 and "is empty: nothing to import" in run.stderr


def test_export_keeps_the_umask_mode_and_an_existing_files_mode(url: str, tmp_path: Path) -> None:
    fill(url, ["c1"])
    fresh, existing = tmp_path / "fresh.jsonl", tmp_path / "existing.jsonl"
    existing.write_text("old")
    existing.chmod(0o640)
    for umask, target in ((0o022, fresh), (0o022, existing)):
        done = subprocess.run(
            ["sh", "-c", f'umask {umask:03o}; exec "$@"', "sh", *console_script(), "--store", url,
             "export", "-o", str(target)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    assert existing.read_text().startswith('{"type":"header"')
    private = tmp_path / "private.jsonl"
    subprocess.run(["sh", "-c", 'umask 077; exec "$@"', "sh", *console_script(), "--store", url,
                    "export", "-o", str(private)], check=True, capture_output=True, timeout=60,
                   env={**os.environ})  # fmt: skip
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
