"""Run ``makers-store serve`` as a real process and talk to it over real HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

READY_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_project(root: Path, files: Mapping[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _clean_environ() -> dict[str, str]:
    """The environment without model-gateway settings (tests use the echo model or a fake)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AI_GATEWAY_")}


def cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "makers_store.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_clean_environ(), **(env or {})},
        check=False,
    )


class Server:
    def __init__(
        self,
        project: Path,
        log_path: Path,
        serve_args: tuple[str, ...],
        global_args: tuple[str, ...],
        env: Mapping[str, str],
    ) -> None:
        self.project = project
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = log_path.open("wb")
        command = [sys.executable, "-m", "makers_store.cli.main", *global_args, "serve"]
        command += [str(project), "--port", str(self.port), *serve_args]
        self.process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**_clean_environ(), "COLUMNS": "200", **env},
        )

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def worker_pids(self) -> set[int]:
        return {int(pid) for pid in re.findall(r"instance \d+ ready \(pid (\d+)\)", self.log())}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited with {self.process.returncode}:\n{self.log()}")
            try:
                # serve listens only once every instance is ready; connecting serves nothing
                with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"serve was not ready after {READY_TIMEOUT_S}s:\n{self.log()}")

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=timeout)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode

    def assert_no_workers_left(self, within_s: float = 10.0) -> None:
        pids = self.worker_pids()
        deadline = time.monotonic() + within_s
        while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = [pid for pid in pids if pid_alive(pid)]
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
        assert not alive, f"worker processes outlived serve: {alive}"


@contextmanager
def serving(
    project: Path,
    log_path: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    global_args: tuple[str, ...] = (),
) -> Iterator[Server]:
    """A running ``makers-store [global_args] serve project --port P args``.

    On exit the server gets SIGTERM; it must stop cleanly and leave no worker behind.
    """
    server = Server(project, log_path, args, global_args, env or {})
    try:
        server.wait_ready()
        yield server
    finally:
        code = server.stop()
        server.assert_no_workers_left()
    assert code == 0, f"serve exited with {code}:\n{server.log()}"


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """(event, data) per SSE frame, as the lines arrive."""
    event: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data or event:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


@dataclass
class StoppedStream:
    """What :func:`stop_mid_stream` saw: the run, its SSE frames, the stop's
    answer, and how long the stream went on after the stop was sent."""

    run_id: str
    frames: list[tuple[str | None, Any]]
    stop: httpx.Response
    seconds_after_stop: float


def stop_mid_stream(
    server: Server, client: httpx.Client, *, cid: str, body: dict[str, Any], stop_path: str
) -> StoppedStream:
    """Stream ``POST /chat`` for ``cid`` and, once text arrives, post
    ``{"conversation_id": cid}`` to ``stop_path`` from another client without
    the conversation header, as the templates' frontends send a stop (so it may
    land on another instance); wait for the stream to end."""
    seen: dict[str, Any] = {"frames": []}
    streaming = threading.Event()

    def stream() -> None:
        with client.stream(
            "POST", "/chat", json=body, headers={"makers-conversation-id": cid}
        ) as response:
            seen["run_id"] = response.headers["makers-run-id"]
            for event, data in sse_events(response.iter_lines()):
                seen["frames"].append((event, json.loads(data)))
                if event == "text_delta":
                    streaming.set()
        seen["ended"] = time.monotonic()

    thread = threading.Thread(target=stream)
    thread.start()
    assert streaming.wait(60), seen
    stopped_at = time.monotonic()
    with server.client() as other:
        stop = other.post(stop_path, json={"conversation_id": cid})
    thread.join(60)
    assert not thread.is_alive(), seen
    return StoppedStream(seen["run_id"], seen["frames"], stop, seen["ended"] - stopped_at)
