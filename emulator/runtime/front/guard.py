"""The frontend dev server's guard: a tiny process that outlives nothing.

``python -I guard.py DIR ARGV...`` (run by path, so it imports nothing of
the package) starts ``ARGV`` in ``DIR`` as the leader of a process group of
its own, with the guard's stdout and stderr, and stops that whole group
(SIGTERM, then SIGKILL after :data:`GRACE_S`) as soon as

- its stdin ends: serve closed it to stop the frontend, or serve died, even
  by SIGKILL (the kernel closes the pipe then, which no signal handler in
  serve could do), or
- it gets SIGTERM or SIGHUP (its own group was stopped, a terminal closed).

SIGINT is ignored: Ctrl+C reaches serve, which decides. When the dev
command ends by itself, what it left running in its group is killed too, and
the guard exits with the command's exit code (128 + N for a signal N), which
serve reports. A dev server forks helpers (esbuild, Next's workers) that do
not all stop with their parent, hence a group, and a guard outside it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

#: How long the group gets to stop after SIGTERM before SIGKILL.
GRACE_S = 2.0


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group, SIGKILL to whatever is left after the grace."""
    _signal_group(child.pid, signal.SIGTERM)
    try:
        child.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.05)  # helpers that stop with their leader get a moment to
    _signal_group(child.pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: guard.py DIR COMMAND [ARG...]", file=sys.stderr)
        return 2
    directory, command = argv[0], argv[1:]
    try:
        child = subprocess.Popen(
            command, cwd=directory, stdin=subprocess.DEVNULL, start_new_session=True
        )
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # after the start: the command keeps its default
    stopping = threading.Event()

    def stop_now(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop_now)
    signal.signal(signal.SIGHUP, stop_now)

    def watch_stdin() -> None:
        while os.read(0, 4096):  # serve never writes; only the end matters
            pass
        stopping.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    while child.poll() is None and not stopping.is_set():
        stopping.wait(0.2)
    if child.poll() is None:
        _stop(child)
    else:
        _signal_group(child.pid, signal.SIGKILL)  # what it left behind
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
