"""``makers-store studio`` as a command: its refusals and warnings (no browser)."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
from pathlib import Path

import makers_store
from tests.serve.harness import free_port
from tests.serve.piped import Piped

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


def test_ctrl_c_stops_the_studio_within_a_second_and_says_so(tmp_path: Path) -> None:
    """With a tab open (an event stream that never ends by itself): it used to
    take the whole graceful period, end in a CancelledError traceback and say
    nothing (issue 23, item 13)."""
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
    port = free_port()
    studio = Piped(["studio", "--store", url, "--port", str(port)])
    try:
        studio.wait_listening(port)
        studio.wait_for(b"Ctrl+C stops", stderr=False)
        tab = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        tab.request("GET", "/events")
        response = tab.getresponse()
        assert response.read1(100).startswith(b"event: ready")
        took = studio.ctrl_c()
        tab.close()
    finally:
        studio.close()
    assert studio.process.returncode == 0, studio.text()
    assert took < 1.5, f"took {took:.2f}s to stop"
    assert studio.stdout.decode().splitlines()[-1] == "Studio stopped"
    assert studio.stderr == b"", studio.text()


def test_the_banner_shows_the_store_path_escaped(tmp_path: Path) -> None:
    """The store's path is the user's: printed through the CLI's safe printer,
    one line per item, so a file name cannot colour or retitle the terminal."""
    folder = tmp_path / "e\x1b]0;pwned\x07"
    folder.mkdir()
    url = f"sqlite:///{folder}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hi")
    port = free_port()
    studio = Piped(["studio", "--store", url, "--port", str(port)])
    try:
        studio.wait_for(b"Ctrl+C stops", stderr=False)
        studio.ctrl_c()
    finally:
        studio.close()
    lines = studio.stdout.decode().splitlines()
    assert lines == [
        f"Studio for sqlite:///{tmp_path}/e\\x1b]0;pwned\\x07/s.db",
        f"  http://127.0.0.1:{port}/",
        "Ctrl+C stops",
        "Studio stopped",
    ]
