"""A ``makers-store`` server (``serve``, ``studio``) as a person runs it, its
output read through pipes: started in a session of its own so that a test can
press Ctrl-C the way a terminal does (SIGINT to the process group)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

READY_TIMEOUT_S = 60.0


def _sigint_default() -> None:
    """A suite started with SIGINT ignored (``nohup``, ``cmd &``) passes that on
    to its children; a Ctrl-C test needs the child to see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Piped:
    """``python -m makers_store.cli.main ARGS`` with stdout and stderr on pipes."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("AI_GATEWAY_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "makers_store.cli.main", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**environment, **(env or {})},
            start_new_session=True,  # its own process group, as a shell gives a job
            preexec_fn=_sigint_default,
        )
        self._out = bytearray()
        self._err = bytearray()
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self._out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[bytes], into: bytearray) -> None:
        with stream:  # as it comes: a line is seen as soon as it is written
            while chunk := os.read(stream.fileno(), 65536):
                into += chunk

    @property
    def stdout(self) -> bytes:
        return bytes(self._out)

    @property
    def stderr(self) -> bytes:
        return bytes(self._err)

    def text(self) -> str:
        """Both streams, for a failure message."""
        return (self.stdout + b"\n--- stderr ---\n" + self.stderr).decode("utf-8", "replace")

    def wait_listening(self, port: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"exited with {self.process.returncode}:\n{self.text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"not listening after {READY_TIMEOUT_S}s:\n{self.text()}")

    def wait_for(
        self, text: bytes, *, stderr: bool = True, times: int = 1, timeout: float = 30.0
    ) -> None:
        """Wait until ``text`` was printed ``times`` times: an answer reaches the
        client before serve's relay prints the lines about it."""
        deadline = time.monotonic() + timeout
        while (self.stderr if stderr else self.stdout).count(text) < times:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never printed:\n{self.text()}")
            time.sleep(0.02)

    def ctrl_c(self) -> float:
        """SIGINT to the process group, as Ctrl-C on a terminal; seconds until it exited."""
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(30)
        finally:
            self.close()
        return time.monotonic() - started

    def close(self) -> None:
        """Kill what is still running (a failed test) and read the rest of the output."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for reader in self._readers:
            reader.join(10)
