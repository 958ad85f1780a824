"""Ctrl-C during export and import says what was done, and it is true
(issue 12, item 15): real processes, interrupted with SIGINT mid-run."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, default_sigint, run_process

CONVERSATIONS = 6000
#: The file an import reads must be large enough that it is still running
#: when the poll sees its first conversation and the signal arrives: at 10,000
#: conversations (about 3 s of writing on SQLite) the signal came after 91 to
#: 118 of them on a loaded 2-core machine, a margin of about 100x. Every phase
#: (build, export, import twice, export again) scales with it: 30,000 took 28 s.
IMPORTED_CONVERSATIONS = 10_000


def build(url: str, conversations: int = CONVERSATIONS) -> None:
    async def fill() -> None:
        async with makers_store.open_store(url) as store:
            for n in range(conversations):
                cid = f"c{n:05}"
                await store.append_message(conversation_id=cid, role="user", content="x" * 100)

    asyncio.run(fill())


def interrupt_when(args: list[str], ready: Callable[[], bool]) -> subprocess.CompletedProcess[str]:
    """Run the CLI, send SIGINT once ``ready()``, and wait for it to exit."""
    env = {k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"}
    process = subprocess.Popen(
        [*console_script(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,  # the SIGINT below must reach a handler
    )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the command never got going"
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.slow
def test_interrupted_export_says_how_far_it_got_and_leaves_no_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/src.db"
    build(url)
    output = tmp_path / "dump.jsonl"

    def writing() -> bool:
        return any(p.stat().st_size > 0 for p in tmp_path.glob(".dump.jsonl.*.tmp"))

    done = interrupt_when(["--store", url, "export", "-o", str(output)], writing)
    assert done.returncode == 130, done.stderr
    match = re.fullmatch(
        rf"error: export interrupted after ([\d,]+) of {CONVERSATIONS:,} conversations; "
        rf"{re.escape(str(output))} was not written\n",
        done.stderr,
    )
    assert match, done.stderr
    assert int(match.group(1).replace(",", "")) < CONVERSATIONS
    assert list(tmp_path.glob("dump*")) == [] and list(tmp_path.glob(".dump*")) == []


@pytest.mark.slow
def test_interrupted_import_says_where_it_stopped_and_a_rerun_finishes(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path}/src.db"
    build(source, IMPORTED_CONVERSATIONS)
    dump = tmp_path / "dump.jsonl"
    assert run_process("--store", source, "export", "-o", str(dump)).returncode == 0
    target = f"sqlite:///{tmp_path}/dst.db"

    def importing() -> bool:
        if not (tmp_path / "dst.db").exists():
            return False
        try:
            with makers_store.open_sync_store(target) as store:
                return bool(store.list_conversations(limit=1).items)
        except makers_store.StoreError:  # the file is there, its schema not yet
            return False

    done = interrupt_when(["--store", target, "import", str(dump)], importing)
    assert done.returncode == 130, done.stderr
    match = re.fullmatch(
        r"error: import interrupted after ([\d,]+) of ([\d,]+) conversations; each conversation "
        r"of the file is either imported or as it was; run the same import again to finish\n",
        done.stderr,
    )
    assert match, done.stderr
    imported, conversations = (int(group.replace(",", "")) for group in match.groups())
    assert 1 <= imported < conversations
    with makers_store.open_sync_store(target) as store:  # exactly that many, each whole
        listed, cursor = [], None
        while True:
            page = store.list_conversations(limit=100, after=cursor)
            listed += page.items
            if (cursor := page.next_cursor) is None:
                break
        assert len(listed) in (imported, imported + 1)  # + the one replaced as Ctrl-C came
        for meta in listed:
            assert len(store.get_messages(conversation_id=meta.conversation_id)) == (
                meta.message_count
            )
    again = run_process("--store", target, "import", str(dump))
    assert again.returncode == 0, again.stderr
    redo = tmp_path / "redo.jsonl"
    assert run_process("--store", target, "export", "-o", str(redo)).returncode == 0
    assert redo.read_bytes() == dump.read_bytes()
