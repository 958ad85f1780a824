"""The 14 tools of ``ctx.tools``: names, descriptions, JSON-schema parameters, and
what each does under ``makers-store serve``.

Names and parameters are the platform's (spec/platform-runtime.md section 2.7);
descriptions are ours. :class:`ToolRunner` runs one by name and never raises
(except cancellation): any failure becomes an ``{"error": ...}`` result the
model can read, which is how the platform's tools report failures too.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ToolArgumentError, ToolError
from . import files, processes, web
from .workspace import Workspace

logger = logging.getLogger("makers_store.serve")

_STRING = {"type": "string"}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _path(what: str) -> dict[str, Any]:
    return _object({"path": {**_STRING, "description": what}}, "path")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    #: False: the tool only ever answers "not available under makers-store serve".
    runs_locally: bool = True


_TIMEOUT = {
    "type": "number",
    "description": f"Seconds before it is killed (default {processes.DEFAULT_TIMEOUT_S:g}).",
}
_BROWSER_ONLY = " Needs the platform's sandbox browser: not available under makers-store serve."

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("commands", "Run a shell command (bash) in the sandbox workspace; returns stdout, "
             "stderr and exitCode. Use it for binary files too (base64 -d).",
             _object({"cmd": {**_STRING, "description": "The shell command."},
                      "cwd": {**_STRING, "description": "Working directory (default: the root)."},
                      "env": {"type": "object", "additionalProperties": _STRING,
                              "description": "Extra environment variables."},
                      "timeout": _TIMEOUT}, "cmd")),
    ToolSpec("files_read", "Read a UTF-8 text file.", _path("File to read.")),
    ToolSpec("files_write", "Write a UTF-8 text file (parent folders are created).",
             _object({"path": {**_STRING, "description": "File to write."},
                      "content": {**_STRING, "description": "The text to write."}},
                     "path", "content")),
    ToolSpec("files_list", "List a directory's entries.", _path("Directory to list.")),
    ToolSpec("files_exists", "Tell whether a file or directory exists.", _path("Path to test.")),
    ToolSpec("files_remove", "Remove a file or a directory with its contents.",
             _path("Path to remove.")),
    ToolSpec("files_make_dir", "Create a directory and its parents.",
             _path("Directory to create.")),
    ToolSpec("browser_fetch", "Fetch a URL with an HTTP GET and return the body as text.",
             _object({"url": {**_STRING, "description": "http:// or https:// URL."}}, "url")),
    ToolSpec("browser_screenshot", "Take a screenshot of a page." + _BROWSER_ONLY,
             _object({"url": _STRING, "fullPage": {"type": "boolean"}}), runs_locally=False),
    ToolSpec("browser_click", "Click an element of the open page." + _BROWSER_ONLY,
             _object({"selector": _STRING}, "selector"), runs_locally=False),
    ToolSpec("browser_type", "Type text into an element of the open page." + _BROWSER_ONLY,
             _object({"selector": _STRING, "text": _STRING}, "selector", "text"),
             runs_locally=False),
    ToolSpec("browser_evaluate", "Evaluate JavaScript in the open page." + _BROWSER_ONLY,
             _object({"script": _STRING}, "script"), runs_locally=False),
    ToolSpec("code_interpreter", "Run a code snippet (python, javascript, bash; r is not "
             "available locally); returns results, logs (stdout, stderr) and error.",
             _object({"language": {"type": "string", "enum": ["python", "javascript", "r", "bash"]},
                      "code": {**_STRING, "description": "The source code."},
                      "timeout": _TIMEOUT}, "language", "code")),
    ToolSpec("web_search", "Search the web (Tencent Cloud WSA); returns a list of "
             "{title, href, snippet, site, date}. Needs WSA_API_KEY.",
             _object({"query": {**_STRING, "description": "What to search for."},
                      "maxResults": {"type": "integer", "minimum": 1, "default": 5},
                      "site": {**_STRING, "description": "Only this domain, e.g. zhihu.com."}},
                     "query")),
)  # fmt: skip

SPECS_BY_NAME = {spec.name: spec for spec in SPECS}
FILE_TOOLS = tuple(spec.name for spec in SPECS if spec.name.startswith("files_"))
BROWSER_TOOLS = tuple(spec.name for spec in SPECS if spec.name.startswith("browser_"))

BROWSER_NOT_AVAILABLE = (
    "it drives the platform sandbox's Chromium browser, which makers-store serve does not "
    "run; browser_fetch gets a page's text with a plain HTTP GET"
)


def not_available(name: str, because: str) -> dict[str, str]:
    return {"error": f"{name} is not available under makers-store serve, because {because}"}


def turned_off(name: str) -> dict[str, str]:
    return {"error": f"{name} did not run: tools are turned off by `makers-store serve --no-tools`"}


def arguments(raw: Any) -> dict[str, Any]:
    """A tool's arguments as given: a dict, its JSON text, or nothing."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ToolArgumentError(f"the arguments are not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ToolArgumentError(f"the arguments must be a JSON object, not {raw!r}")
    return dict(raw)


Implementation = Callable[[dict[str, Any]], Awaitable[Any]]

#: ``MAKERS_AGENT_TOOLKIT_DEBUG=1``: each tool call is logged to stderr, as the
#: platform's toolkit does, with secret-looking values redacted.
DEBUG_ENV = "MAKERS_AGENT_TOOLKIT_DEBUG"
DEBUG_PREVIEW_CHARS = 300
_SECRET_KEY = re.compile(r"token|auth|password|secret|key", re.IGNORECASE)


def redacted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: "***" if _SECRET_KEY.search(str(key)) else redacted(item)
            for key, item in value.items()
        }
    return value


def _debug_line(name: str, args: Any, result: Any) -> str:
    try:
        given = arguments(args)
    except ToolArgumentError:
        given = {"unparsed arguments": "***"}
    shown = json.dumps(redacted(given), ensure_ascii=False, default=str)
    outcome = json.dumps(result, ensure_ascii=False, default=str)
    if len(outcome) > DEBUG_PREVIEW_CHARS:
        outcome = outcome[:DEBUG_PREVIEW_CHARS] + f"... ({len(outcome)} chars)"
    return f"[makers-toolkit] {name} {shown} -> {outcome}"


class ToolRunner:
    """Runs the tools of one workspace; what every framework shape calls."""

    def __init__(self, workspace: Workspace, env: Mapping[str, str], *, enabled: bool) -> None:
        self.workspace = workspace
        self.enabled = enabled
        self._env = env
        self._implementations: dict[str, Implementation] = {
            "commands": self._commands,
            "files_read": self._files_read,
            "files_write": self._files_write,
            "files_list": self._files_list,
            "files_exists": self._files_exists,
            "files_remove": self._files_remove,
            "files_make_dir": self._files_make_dir,
            "browser_fetch": self._browser_fetch,
            "code_interpreter": self._code_interpreter,
            "web_search": self._web_search,
        }

    async def run(self, name: str, raw_arguments: Any = None) -> Any:
        """The result of tool ``name``; failures are ``{"error": message}``."""
        result = await self._run(name, raw_arguments)
        if self._env.get(DEBUG_ENV) == "1":
            print(_debug_line(name, raw_arguments, result), file=sys.stderr, flush=True)
        return result

    async def _run(self, name: str, raw_arguments: Any) -> Any:
        spec = SPECS_BY_NAME.get(name)
        if spec is None:
            return {"error": f"there is no tool named {name!r}"}
        if not self.enabled:
            return turned_off(name)
        if not spec.runs_locally:
            return not_available(name, BROWSER_NOT_AVAILABLE)
        try:
            return await self._implementations[name](arguments(raw_arguments))
        except ToolError as exc:
            return {"error": str(exc)}
        except Exception as exc:  # a bug or an unexpected OS failure: still a tool result
            logger.exception("tool %s failed", name)
            return {"error": f"{name} failed: {type(exc).__name__}: {exc}"}

    async def _commands(self, args: dict[str, Any]) -> Any:
        result = await processes.run_command(
            self.workspace, args.get("cmd"), cwd=args.get("cwd"), env=args.get("env"),
            seconds=args.get("timeout"),
        )  # fmt: skip
        return result.to_dict()

    async def _files_read(self, args: dict[str, Any]) -> Any:
        content = files.read_text(self.workspace, args.get("path"))
        return {"path": args.get("path"), "content": content}

    async def _files_write(self, args: dict[str, Any]) -> Any:
        size = files.write_text(self.workspace, args.get("path"), args.get("content"))
        return {"path": args.get("path"), "bytesWritten": size}

    async def _files_list(self, args: dict[str, Any]) -> Any:
        entries = files.list_dir(self.workspace, args.get("path"))
        return {"path": args.get("path"), "entries": [entry.to_dict() for entry in entries]}

    async def _files_exists(self, args: dict[str, Any]) -> Any:
        return {"path": args.get("path"), "exists": files.exists(self.workspace, args.get("path"))}

    async def _files_remove(self, args: dict[str, Any]) -> Any:
        files.remove(self.workspace, args.get("path"))
        return {"path": args.get("path"), "removed": True}

    async def _files_make_dir(self, args: dict[str, Any]) -> Any:
        created = files.make_dir(self.workspace, args.get("path"))
        return {"path": args.get("path"), "created": created}

    async def _browser_fetch(self, args: dict[str, Any]) -> Any:
        return (await web.fetch_text(args.get("url"))).to_dict()

    async def _code_interpreter(self, args: dict[str, Any]) -> Any:
        result = await processes.run_code(
            self.workspace, args.get("code"), language=args.get("language", "python"),
            seconds=args.get("timeout"),
        )  # fmt: skip
        return result.to_dict()

    async def _web_search(self, args: dict[str, Any]) -> Any:
        return await web.web_search(
            args.get("query"), args.get("maxResults"), args.get("site"),
            api_key=self._env.get("WSA_API_KEY"),
        )  # fmt: skip
