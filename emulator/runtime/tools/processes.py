"""Shell commands and code snippets, run as local subprocesses in a workspace.

The one implementation behind the ``commands`` / ``code_interpreter`` tools
and ``ctx.sandbox.commands.run`` / ``run_code``. NOT a sandbox: the
processes run as the user who started serve, with the user's permissions,
network and filesystem; only their working folder, ``HOME`` and ``TMPDIR``
are the workspace. What they inherit of serve's environment is limited to
:data:`INHERITED_ENV`, so the agent's own secrets (``AI_GATEWAY_API_KEY``...)
are not handed to model-written commands, as on the platform where the
sandbox is another machine.

Each run gets a new session (process group): at its timeout, or when the
run is cancelled, the whole group is killed. Output is capped per stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ToolArgumentError, ToolError
from .workspace import Workspace

#: Seconds a command or snippet may run when the caller gives no timeout
#: (the platform's default is UNKNOWN; E2B's is 60 s).
DEFAULT_TIMEOUT_S = 60.0
#: Larger timeouts are refused: they are almost always milliseconds by mistake.
MAX_TIMEOUT_S = 3600.0
#: Bytes kept of each of stdout and stderr; the rest is read and dropped.
MAX_OUTPUT_BYTES = 1024 * 1024
#: After the command exits, how long background processes it left may keep
#: its output pipes open before they are stopped too.
DRAIN_AFTER_EXIT_S = 2.0
#: exit code reported for a command killed at its timeout (coreutils timeout's).
TIMEOUT_EXIT_CODE = 124
#: Variables of serve's environment a subprocess inherits (plus HOME, TMPDIR, PWD).
INHERITED_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME")

_READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ProcessOutcome:
    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool


def parse_timeout(value: Any, *, argument: str = "timeout") -> float:
    """``value`` in seconds (None -> the default); a clear error otherwise."""
    if value is None:
        return DEFAULT_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ToolArgumentError(f"{argument} must be a number of seconds, not {value!r}")
    if not 0 < value <= MAX_TIMEOUT_S:
        raise ToolArgumentError(
            f"{argument} is in seconds and must be > 0 and <= {MAX_TIMEOUT_S:g}, not {value!r}"
        )
    return float(value)


def subprocess_env(workspace_root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    tmp = workspace_root / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(HOME=str(workspace_root), TMPDIR=str(tmp))
    env.update(extra or {})
    return env


class _Capture:
    """One output stream, kept up to MAX_OUTPUT_BYTES; survives cancellation."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    async def pump(self, stream: asyncio.StreamReader | None) -> None:
        while stream is not None and (chunk := await stream.read(_READ_CHUNK)):
            room = MAX_OUTPUT_BYTES - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        if self.dropped:
            text += (
                f"\n[makers-store: output cut at {MAX_OUTPUT_BYTES} bytes; "
                f"{self.dropped} more dropped]"
            )
        return text


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes | None) -> None:
    if stdin is None:
        return
    with contextlib.suppress(ConnectionError):  # the process may exit without reading
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _drain(process: asyncio.subprocess.Process, readers: asyncio.Future[Any]) -> None:
    """Read to the end; background children still holding the pipes are stopped."""
    try:
        await asyncio.wait_for(asyncio.shield(readers), DRAIN_AFTER_EXIT_S)
        return
    except TimeoutError:
        _kill_group(process)
    try:  # a child that left the process group can still hold them: give up on it
        await asyncio.wait_for(asyncio.shield(readers), DRAIN_AFTER_EXIT_S)
    except TimeoutError:
        readers.cancel()


async def run_process(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], stdin: bytes | None, timeout_s: float
) -> ProcessOutcome:
    """Run ``argv``; kill its process group at ``timeout_s`` or on cancellation."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    out, err = _Capture(), _Capture()
    readers = asyncio.gather(out.pump(process.stdout), err.pump(process.stderr))
    feeder = asyncio.ensure_future(_feed(process.stdin, stdin))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
            _kill_group(process)
            await process.wait()
        await _drain(process, readers)
    except BaseException:  # cancelled (an abort): nothing may outlive the run
        _kill_group(process)
        readers.cancel()
        with contextlib.suppress(TimeoutError):  # reap it, so its pipes get closed
            await asyncio.wait_for(process.wait(), DRAIN_AFTER_EXIT_S)
        raise
    finally:
        feeder.cancel()
    code = int(process.returncode or 0)
    if timed_out:
        code = TIMEOUT_EXIT_CODE
    elif code < 0:  # killed by a signal: report it as a shell does (128 + signal)
        code = 128 - code
    return ProcessOutcome(out.text(), err.text(), code, timed_out)


# -- commands -----------------------------------------------------------------


@dataclass(frozen=True)
class CommandResult:
    """``commands`` / ``sandbox.commands.run``: ``exit_code`` also as ``exitCode``."""

    stdout: str
    stderr: str
    exit_code: int
    error: str | None = None

    @property
    def exitCode(self) -> int:  # the platform's Node spelling
        return self.exit_code

    def to_dict(self) -> dict[str, Any]:
        """The tool result: the platform's ``{stdout, stderr, exitCode}`` (+ ``error``)."""
        out: dict[str, Any] = {"stdout": self.stdout, "stderr": self.stderr}
        out["exitCode"] = self.exit_code
        if self.error:
            out["error"] = self.error
        return out


def _bash() -> str:
    found = shutil.which("bash")
    if found is None:
        raise ToolError("bash is not on PATH, so commands cannot run under makers-store serve")
    return found


def _env_argument(env: Any) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in env.items()
    ):
        raise ToolArgumentError(f"env must be an object of string values, not {env!r}")
    return dict(env)


async def run_command(
    workspace: Workspace, cmd: Any, *, cwd: Any = None, env: Any = None, seconds: Any = None
) -> CommandResult:
    """``bash -c cmd`` in the workspace (``cwd`` is a sandbox path inside it).

    ``seconds`` is the caller's ``timeout`` argument, checked here.
    """
    if not isinstance(cmd, str) or not cmd.strip():
        raise ToolArgumentError(f"cmd must be a non-empty string, not {cmd!r}")
    timeout_s = parse_timeout(seconds)
    extra = _env_argument(env)
    root = workspace.ensure()
    where = root if cwd is None else workspace.resolve(cwd, argument="cwd").host
    if not where.is_dir():
        raise ToolArgumentError(f"cwd {cwd!r} is not a directory in the workspace")
    outcome = await run_process(
        [_bash(), "-c", cmd],
        cwd=where,
        env={**subprocess_env(root, extra), "PWD": str(where)},
        stdin=None,
        timeout_s=timeout_s,
    )
    error = None
    if outcome.timed_out:
        error = f"the command ran longer than {timeout_s:g} s and was killed"
    return CommandResult(outcome.stdout, outcome.stderr, outcome.exit_code, error)


# -- code ---------------------------------------------------------------------

#: code_interpreter / run_code language names -> the canonical one.
LANGUAGES = {
    "python": "python", "python3": "python", "py": "python",
    "javascript": "javascript", "js": "javascript", "node": "javascript",
    "bash": "bash", "sh": "bash", "shell": "bash",
    "r": "r",
}  # fmt: skip


@dataclass(frozen=True)
class CodeExecution:
    """``run_code`` / ``code_interpreter``: the platform's ``{results, logs, error}``.

    No Jupyter kernel locally: each call is a fresh process, ``results`` is
    always empty (print what you need) and variables do not persist.
    """

    results: list[Any] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)
    error: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"results": list(self.results), "logs": dict(self.logs), "error": self.error}


def _interpreter(language: str) -> list[str]:
    if language == "python":
        return [sys.executable, "-I", "-"]  # -I: no user site, no PYTHON* variables
    if language == "bash":
        return [_bash(), "-s"]
    if language == "javascript":
        node = shutil.which("node")
        if node is None:
            raise ToolError(
                "code_interpreter language 'javascript' is not available under makers-store "
                "serve, because node is not on PATH"
            )
        return [node, "-"]
    raise ToolError(
        f"code_interpreter language {language!r} is not available under makers-store serve, "
        "because only python, bash and javascript (with node on PATH) run locally"
    )


_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")


def _code_error(language: str, outcome: ProcessOutcome, timeout_s: float) -> dict[str, str] | None:
    if outcome.timed_out:
        value = f"the code ran longer than {timeout_s:g} s and was stopped"
        return {"name": "TimeoutError", "value": value, "traceback": outcome.stderr}
    if outcome.exit_code == 0:
        return None
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    found = _PY_ERROR.match(lines[-1]) if language == "python" and lines else None
    if found:
        return {"name": found[1], "value": found[2] or "", "traceback": outcome.stderr}
    value = f"exited with status {outcome.exit_code}"
    return {"name": "ExitError", "value": value, "traceback": outcome.stderr}


async def run_code(
    workspace: Workspace, code: Any, *, language: Any = "python", seconds: Any = None
) -> CodeExecution:
    """Run ``code`` in a fresh interpreter process (fed on stdin) in the workspace."""
    if not isinstance(code, str):
        raise ToolArgumentError(f"code must be a string, not {type(code).__name__}")
    if not isinstance(language, str) or language.lower() not in LANGUAGES:
        raise ToolArgumentError(
            f"language must be one of python, javascript, r, bash, not {language!r}"
        )
    canonical = LANGUAGES[language.lower()]
    timeout_s = parse_timeout(seconds)
    argv = _interpreter(canonical)
    root = workspace.ensure()
    outcome = await run_process(
        argv, cwd=root, env=subprocess_env(root), stdin=code.encode("utf-8", "replace"),
        timeout_s=timeout_s,
    )  # fmt: skip
    logs = {
        "stdout": outcome.stdout.splitlines(keepends=True),
        "stderr": outcome.stderr.splitlines(keepends=True),
    }
    return CodeExecution(results=[], logs=logs, error=_code_error(canonical, outcome, timeout_s))
