"""``ctx.tools``: the toolkit registry, shaped by ``agents.framework``.

``all()`` / ``get(name)`` / ``files()`` / ``browser()`` and the 14 tool
attributes give the shape of the project's framework:

- ``openai-agents-sdk``: ``agents.FunctionTool`` objects, for ``Agent(tools=...)``;
- ``langgraph`` / ``deepagents``: real ``langchain_core`` StructuredTools (the
  platform's are duck-typed look-alikes; real ones pass ``ToolNode`` and
  ``isinstance`` checks);
- ``claude-agent-sdk``, ``crewai``, none or unknown: :class:`~.shapes.LocalTool`
  objects (their real shapes come from ``to_claude_mcp_server`` and
  ``to_crewai_tools``, which need the framework's own objects).

The helpers build other shapes on demand, in snake_case and in the
camelCase the migration docs spell (``toLangChainTools``...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ToolArgumentError
from ..platform_choices import FRAMEWORK_WHEN_ABSENT, KNOWN_FRAMEWORKS
from . import shapes
from .catalog import BROWSER_TOOLS, FILE_TOOLS, SPECS, SPECS_BY_NAME, ToolRunner, ToolSpec
from .workspace import Workspace

#: ``to_claude_mcp_server()`` without a name. The platform's default is UNKNOWN: its
#: docs pass "edgeone"; its Node starter passes nothing and reads the name back from
#: the bundle, so only the allowed names (``mcp__edgeone__...``) depend on it.
DEFAULT_MCP_SERVER_NAME = "edgeone"
#: What Claude Code accepts as an MCP server name, matched whole (fullmatch: ``$`` would let
#: a final newline through). Node's toolkit applies the same pattern.
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

Shaper = Callable[[ToolSpec, ToolRunner], Any]

#: framework -> how ``all()`` shapes a tool; any other -> LocalTool.
_SHAPERS: dict[str, Shaper] = {
    "openai-agents-sdk": shapes.function_tool,
    "langgraph": shapes.structured_tool,
    "deepagents": shapes.structured_tool,
}


@dataclass(frozen=True)
class ClaudeMcpServerBundle:
    """What ``to_claude_mcp_server`` returns: feed ``create_sdk_mcp_server(name=, tools=)``.

    Attributes as CAS reads them, the Node spelling ``allowedTools``, and
    ``bundle["name"]`` access since the Python docs show it as a dict.
    ``always_load`` is recorded only: the Python SDK has no such switch.
    """

    name: str
    tools: list[Any]
    allowed_tools: list[str]
    always_load: bool = False

    @property
    def allowedTools(self) -> list[str]:  # the platform's Node spelling
        return self.allowed_tools

    @property
    def alwaysLoad(self) -> bool:
        return self.always_load

    def __getitem__(self, key: str) -> Any:
        if key not in (
            "name",
            "tools",
            "allowed_tools",
            "allowedTools",
            "always_load",
            "alwaysLoad",
        ):
            raise KeyError(key)
        return getattr(self, key)


class _ToolAttribute:
    """``ctx.tools.<name>``: the shaped tool of that name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, toolkit: Toolkit | None, owner: type | None = None) -> Any:
        if toolkit is None:
            return self
        return toolkit.get(self.name)


def _always_load(options: Any, keyword: bool | None) -> bool:
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ToolArgumentError(
            f"options must be a dict such as {{'always_load': True}}, not {options!r}"
        )
    unknown = set(options) - {"always_load", "alwaysLoad"}
    if unknown:
        raise ToolArgumentError(f"options: unknown key(s) {sorted(unknown)}; known: always_load")
    value = (
        keyword if keyword is not None else options.get("always_load", options.get("alwaysLoad"))
    )
    if value is not None and not isinstance(value, bool):
        raise ToolArgumentError(f"always_load must be True or False, not {value!r}")
    return bool(value)


class Toolkit:
    """``ctx.tools``; tools are shaped on first use (framework imports are lazy)."""

    commands = _ToolAttribute()
    files_read = _ToolAttribute()
    files_write = _ToolAttribute()
    files_list = _ToolAttribute()
    files_exists = _ToolAttribute()
    files_remove = _ToolAttribute()
    files_make_dir = _ToolAttribute()
    browser_fetch = _ToolAttribute()
    browser_screenshot = _ToolAttribute()
    browser_click = _ToolAttribute()
    browser_type = _ToolAttribute()
    browser_evaluate = _ToolAttribute()
    code_interpreter = _ToolAttribute()
    web_search = _ToolAttribute()

    def __init__(self, framework: str | None, runner: ToolRunner) -> None:
        self.framework = framework
        self.runner = runner
        self._shaped: dict[str, Any] | None = None

    def _tools(self) -> dict[str, Any]:
        if self._shaped is None:
            shape = _SHAPERS.get(self.framework or "", shapes.LocalTool)
            self._shaped = {spec.name: shape(spec, self.runner) for spec in SPECS}
        return self._shaped

    def all(self) -> list[Any]:
        """Every tool, shaped for the framework (synchronous, as on the platform)."""
        return list(self._tools().values())

    def get(self, name: str) -> Any | None:
        return self._tools().get(name)

    def files(self) -> list[Any]:
        return [self._tools()[name] for name in FILE_TOOLS]

    def browser(self) -> list[Any]:
        return [self._tools()[name] for name in BROWSER_TOOLS]

    def _selected(self, names: Iterable[str] | None) -> list[ToolSpec]:
        if names is None:
            return list(SPECS)
        given = [names] if isinstance(names, str) else list(names)
        if isinstance(names, str) or not all(isinstance(name, str) for name in given):
            raise ToolArgumentError(f"names must be a list of tool names, not {names!r}")
        unknown = [name for name in given if name not in SPECS_BY_NAME]
        if unknown:
            raise ToolArgumentError(f"names: no tool named {', '.join(map(repr, unknown))}")
        return [SPECS_BY_NAME[name] for name in given]

    def to_langchain_tools(
        self, tool_factory: Any, names: Iterable[str] | None = None
    ) -> list[Any]:
        """LangChain tools made by ``tool_factory`` (``StructuredTool`` or ``tool``)."""
        return [
            shapes.langchain_tool(spec, self.runner, tool_factory) for spec in self._selected(names)
        ]

    def to_crewai_tools(self, base_tool: type, names: Iterable[str] | None = None) -> list[Any]:
        """CrewAI tools: instances of subclasses of the injected ``BaseTool`` class."""
        if not isinstance(base_tool, type):
            raise ToolArgumentError(f"base_tool must be CrewAI's BaseTool class, not {base_tool!r}")
        return [shapes.crewai_tool(spec, self.runner, base_tool) for spec in self._selected(names)]

    def to_claude_mcp_server(
        self, name: str | None = None, options: Mapping[str, Any] | None = None, *,
        always_load: bool | None = None,
    ) -> ClaudeMcpServerBundle:  # fmt: skip
        """The Claude Agent SDK bundle: SDK MCP tools plus ``mcp__<name>__<tool>`` names.

        Options either way: ``("edgeone", {"always_load": True})`` or ``always_load=True``.
        """
        server = DEFAULT_MCP_SERVER_NAME if name is None else name
        if not isinstance(server, str) or not MCP_SERVER_NAME.fullmatch(server):
            raise ToolArgumentError(
                f"name must be 1-64 letters, digits, '_' or '-' (an MCP server name), not {name!r}"
            )
        load = _always_load(options, always_load)
        tools = [shapes.mcp_tool(spec, self.runner) for spec in SPECS]
        allowed = [f"mcp__{server}__{spec.name}" for spec in SPECS]
        return ClaudeMcpServerBundle(server, tools, allowed, load)

    toLangChainTools = to_langchain_tools
    toCrewAITools = to_crewai_tools
    toClaudeMcpServer = to_claude_mcp_server

    def __repr__(self) -> str:
        return f"<Toolkit framework={self.framework!r} tools={len(SPECS)}>"


def build_toolkit(
    framework: str | None, workspace: Workspace, enabled: bool, env: Mapping[str, str]
) -> Toolkit:
    """``ctx.tools`` for ``agents.framework`` (None or unknown: the absent default)."""
    known = framework if framework in KNOWN_FRAMEWORKS else FRAMEWORK_WHEN_ABSENT
    return Toolkit(known, ToolRunner(workspace, env, enabled=enabled))
