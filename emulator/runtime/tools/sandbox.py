"""``ctx.sandbox``: the platform's sandbox client, backed by the local workspace.

The same implementation as the tools (:mod:`.files`, :mod:`.processes`):
``commands.run``, ``files.read/write/list/make_dir/exists/remove``,
``run_code``, and the control calls ``get_info`` / ``extend_timeout`` /
``kill`` (local no-ops). Python snake_case names plus the Node spellings
the platform's docs use (``makeDir``, ``runCode``, ``getInfo``...), and
``run(cmd, {"cwd": ..., "timeout": ...})`` as well as keywords.

``browser.*``, ``get_host`` and ``envd_access_token`` need the platform's
sandbox machine: they raise :class:`PlatformOnlyError` naming the method.
Not a security sandbox: commands and code run as the user (see
:mod:`.processes`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

from ..errors import PlatformOnlyError, ToolArgumentError, ToolsDisabledError
from ..log import ignored_option
from . import files, processes
from .files import FileEntry
from .processes import CodeExecution, CommandResult
from .workspace import Workspace

_BROWSER_REASON = "it drives the platform sandbox's Chromium browser, which serve does not run"


def _platform_only(method: str, because: str) -> NoReturn:
    raise PlatformOnlyError(
        f"ctx.sandbox.{method} is not available under makers-store serve, because {because}"
    )


def _node_options(
    method: str, first_key: str, first: Any, keywords: dict[str, Any]
) -> dict[str, Any]:
    """One dict of options from ``f(x, {"cwd": ...})`` (Node style) and/or keywords."""
    if isinstance(first, Mapping):
        accepted = (first_key, *keywords)
        options = {}
        for key, value in first.items():
            if key in accepted:
                options[key] = value
            else:  # the platform's client is JavaScript: an extra property is ignored
                ignored_option(f"context.sandbox.{method}", str(key), accepted)
    else:
        options = {first_key: first}
    for key, value in keywords.items():
        if value is None:
            continue
        if options.get(key) is not None:
            raise ToolArgumentError(f"{method}: {key} given both in the options and as a keyword")
        options[key] = value
    return options


class SandboxCommands:
    def __init__(self, sandbox: LocalSandbox) -> None:
        self._sandbox = sandbox

    async def run(
        self,
        cmd: str,
        cwd: str | Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the platform's name
    ) -> CommandResult:
        """``bash -c cmd`` in the workspace; ``timeout`` in seconds; non-zero exits do not raise.

        ``user`` is accepted and ignored: everything runs as the local user.
        """
        self._sandbox.check_enabled("commands.run")
        keywords = {"env": env, "user": user, "timeout": timeout}
        options = _node_options("commands.run", "cwd", cwd, keywords)
        if options.get("user") is not None and not isinstance(options["user"], str):
            raise ToolArgumentError(f"user must be a str, not {options['user']!r}")
        return await processes.run_command(
            self._sandbox.workspace, cmd, cwd=options.get("cwd"), env=options.get("env"),
            seconds=options.get("timeout"),
        )  # fmt: skip


class SandboxFiles:
    def __init__(self, sandbox: LocalSandbox) -> None:
        self._sandbox = sandbox

    def _workspace(self, method: str) -> Workspace:
        self._sandbox.check_enabled(f"files.{method}")
        return self._sandbox.workspace

    async def read(self, path: str) -> str:
        return files.read_text(self._workspace("read"), path)

    async def write(self, path: str, content: str) -> None:
        """Write UTF-8 text only (binary: ``commands.run("base64 -d ...")``)."""
        files.write_text(self._workspace("write"), path, content)

    async def list(self, path: str) -> list[FileEntry]:
        return files.list_dir(self._workspace("list"), path)

    async def exists(self, path: str) -> bool:
        return files.exists(self._workspace("exists"), path)

    async def remove(self, path: str) -> None:
        files.remove(self._workspace("remove"), path)

    async def make_dir(self, path: str) -> bool:
        """True if created, False if it already existed."""
        return files.make_dir(self._workspace("make_dir"), path)

    makeDir = make_dir


class UnavailableBrowser:
    """``ctx.sandbox.browser``: every method and property raises PlatformOnlyError."""

    async def goto(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.goto", _BROWSER_REASON)

    async def screenshot(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.screenshot", _BROWSER_REASON)

    async def click(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.click", _BROWSER_REASON)

    async def type(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.type", _BROWSER_REASON)

    async def evaluate(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.evaluate", _BROWSER_REASON)

    async def get_content(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.get_content", _BROWSER_REASON)

    getContent = get_content

    async def close(self, *args: Any, **kwargs: Any) -> NoReturn:
        _platform_only("browser.close", _BROWSER_REASON)

    @property
    def cdp_url(self) -> NoReturn:
        _platform_only("browser.cdp_url", _BROWSER_REASON)

    @property
    def live_url(self) -> NoReturn:
        _platform_only("browser.live_url", _BROWSER_REASON)

    cdpUrl = cdp_url
    liveUrl = live_url


class LocalSandbox:
    """``ctx.sandbox`` over one conversation's workspace."""

    def __init__(self, workspace: Workspace, *, enabled: bool = True) -> None:
        self.workspace = workspace
        self.enabled = enabled
        self.commands = SandboxCommands(self)
        self.files = SandboxFiles(self)
        self.browser = UnavailableBrowser()

    def check_enabled(self, method: str) -> None:
        if not self.enabled:
            raise ToolsDisabledError(
                f"ctx.sandbox.{method} did not run: tools are turned off by "
                "`makers-store serve --no-tools`"
            )

    async def run_code(
        self,
        code: str,
        language: str | Mapping[str, Any] = "python",
        timeout: float | None = None,  # noqa: ASYNC109 - the platform's name
    ) -> CodeExecution:
        """A fresh interpreter process per call (no Jupyter kernel: variables do not persist)."""
        self.check_enabled("run_code")
        options = _node_options("run_code", "language", language, {"timeout": timeout})
        return await processes.run_code(
            self.workspace, code, language=options.get("language") or "python",
            seconds=options.get("timeout"),
        )  # fmt: skip

    runCode = run_code

    async def get_info(self) -> dict[str, Any]:
        """Local facts in place of the platform's instance info."""
        sandbox_id = f"local-{self.workspace.root.name}"
        return {
            "sandbox_id": sandbox_id,
            "sandboxId": sandbox_id,
            "backend": "makers-store serve: local subprocesses, not isolated",
            "workspace": str(self.workspace.root),
            "enabled": self.enabled,
        }

    getInfo = get_info

    async def extend_timeout(self, seconds: float) -> None:
        """A no-op locally (the workspace does not expire); ``seconds`` is still checked."""
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not (math.isfinite(seconds) and seconds > 0)
        ):
            raise ToolArgumentError(f"seconds must be a positive number, not {seconds!r}")

    extendTimeout = extend_timeout

    async def kill(self) -> None:
        """A no-op locally: the workspace folder is kept (delete it by hand to reset)."""

    def get_host(self, port: int) -> NoReturn:
        _platform_only(
            "get_host", "there is no sandbox machine; a server started with commands listens "
            f"on this machine, at localhost:{port}",
        )  # fmt: skip

    getHost = get_host

    @property
    def envd_access_token(self) -> NoReturn:
        _platform_only("envd_access_token", "there is no sandbox daemon (envd) locally")

    envdAccessToken = envd_access_token

    def __repr__(self) -> str:
        return f"<LocalSandbox {self.workspace.root}>"
