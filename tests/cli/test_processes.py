"""The installed command as real processes: exit codes, tail --follow, lazy imports."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, run_process


def test_append_then_list_in_separate_processes(url: str) -> None:
    made = run_process("--store", url, "msg", "append", "c1", "--role", "user", "--content", "hi")
    assert made.returncode == 0, made.stderr
    listed = run_process("--store", url, "conv", "list", "--json")
    assert listed.returncode == 0
    (item,) = json.loads(listed.stdout)["items"]
    assert item["conversation_id"] == "c1" and item["message_count"] == 1
    with makers_store.open_sync_store(url) as store:
        (message,) = store.get_messages(conversation_id="c1")
    assert message.message_id == made.stdout.strip() and message.content == "hi"


def test_exit_codes_and_one_line_errors(url: str) -> None:
    missing = run_process("--store", url, "conv", "show", "nope")
    assert missing.returncode == 3
    assert missing.stderr == "error: conversation 'nope' not found\n"
    usage = run_process("--store", url, "conv", "list", "--limit", "abc")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
    assert usage.stderr.startswith("error: ") and "--limit" in usage.stderr
    env_url = run_process("conv", "list", env={"MAKERS_STORE_URL": "nope://x"})
    assert env_url.returncode == 2 and "unknown scheme" in env_url.stderr


def test_python_dash_m_runs_the_same_app(url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "makers_store.cli.main", "--store", url, "info", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["conversations"] == 0


def test_help_imports_no_backend_rich_or_sqlite() -> None:
    probe = (
        "import sys\n"
        "from makers_store.cli.main import app\n"
        "from typer.testing import CliRunner\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "heavy = [m for m in ('rich', 'sqlite_utils', 'sqlite3',"
        " 'makers_store.emulator.sqlite.backend', 'makers_store.maintenance.admin',"
        " 'makers_store.maintenance.exporting', 'makers_store.context_store',"
        " 'makers_store.sync_api', 'makers_store.factory', 'asyncio', 'platformdirs')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_install_completion_writes_the_shell_script(tmp_path: Path) -> None:
    result = run_process(
        "--install-completion",
        "bash",
        env={"HOME": str(tmp_path), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    )
    assert result.returncode == 0, result.stderr
    rc = (tmp_path / ".bashrc").read_text()
    assert "makers-store" in rc
    installed = list((tmp_path / ".bash_completions").glob("makers-store*"))
    assert installed and "_MAKERS_STORE_COMPLETE" in installed[0].read_text()


class Lines:
    """Lines from a child's stdout pipe, each within a timeout (raw reads, so
    lines that arrive together are not hidden in a buffer from select)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.fd = process.stdout.fileno()
        self.pending = b""

    def next(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(remaining, 0))
            if not ready:
                raise AssertionError("no output from msg tail --follow in time")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise AssertionError("msg tail --follow exited early")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode("utf-8")


@pytest.mark.slow
def test_tail_follow_prints_messages_appended_by_another_process(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        first = store.append_message(conversation_id="c1", role="user", content="before")
    process = subprocess.Popen(
        [*console_script(), "--store", url, "msg", "tail", "c1", "--follow", "--json",
         "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    lines = Lines(process)
    try:
        shown = json.loads(lines.next(30))
        assert shown["message_id"] == first and shown["content"] == "before"
        appended = []
        for n in range(3):
            done = run_process(
                "--store", url, "msg", "append", "c1", "--role", "assistant", "--content", f"n{n}"
            )
            assert done.returncode == 0, done.stderr
            appended.append(done.stdout.strip())
        seen = [json.loads(lines.next(30)) for _ in appended]
        assert [m["message_id"] for m in seen] == appended
        assert [m["content"] for m in seen] == ["n0", "n1", "n2"]
        time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert lines.pending + out == b"" and err == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
