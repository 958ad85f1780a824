"""``makers-store studio`` as a command: its refusals and warnings (no browser)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import makers_store

from .conftest import start_studio, stop, studio_process


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "makers_store.cli.main", "studio", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_missing_store_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nothing" / "store.db"
    done = run("--store", str(missing), "--port", "0")
    assert done.returncode == 3, done.stderr
    assert "no store at" in done.stderr
    assert not missing.parent.exists()


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("--store", url, "--port", str(port))
    assert done.returncode == 1
    assert f"port {port} is already in use" in done.stderr


def test_listening_beyond_loopback_warns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
    process = studio_process(url, "--host", "0.0.0.0", stderr=subprocess.PIPE)
    assert process.stderr is not None
    line = process.stderr.readline()
    stop(process)
    assert "warning:" in line and "reachable from other machines" in line


def test_the_studio_is_an_optional_extra() -> None:
    """Without Jinja2 the command names the extra to install."""
    code = (
        "import sys; sys.modules['jinja2'] = None\n"
        "from makers_store.emulator.studio import require_extra\n"
        "try:\n    require_extra()\nexcept Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "MissingExtraError" in done.stdout
    assert "makers-store[studio]" in done.stdout


def test_stopping_the_studio_closes_cleanly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
    studio = start_studio(url)
    studio.stop()
    assert studio.process.returncode == 0
