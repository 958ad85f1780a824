"""The framework shapes of one tool: what ``ctx.tools`` hands each framework.

Every shape calls the same :class:`~.catalog.ToolRunner`, so a tool behaves
the same whichever framework runs it. Framework packages are imported only
when their shape is asked for, with an error naming the extra to install.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from makers_store import Portal
from makers_store.errors import missing_extra

from .catalog import ToolRunner, ToolSpec

_T = TypeVar("_T")

#: The loop that synchronous callers' tool runs are handed to: the store's
#: one sync bridge (the public :class:`makers_store.Portal`, as the sync
#: facade uses), one thread for the process, started on the first such call.
_SYNC_PORTAL = Portal()


def run_sync(run: Coroutine[Any, Any, _T]) -> _T:
    """Run a tool from a synchronous caller (LangChain ``invoke``, CrewAI ``_run``).

    The caller waits while the portal's loop runs it, so the caller's thread
    may run an event loop of its own (asyncio cannot nest loops), and Ctrl-C
    cancels the tool as it cancels a sync store call.
    """
    return _SYNC_PORTAL.call(run)


def result_text(result: Any) -> str:
    """A tool result as the text a model reads (JSON unless it is a str)."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


def is_error(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result


class LocalTool:
    """The generic shape: read the way the starter template reads ``all()``.

    ``name``, ``description``, ``parameters`` (JSON schema; also
    ``input_schema`` / ``inputSchema``), ``type = "tool"``, runtime
    ``metadata``, and ``await execute(args)`` (also ``handler`` / ``invoke``)
    with ``args`` a dict or its JSON text.
    """

    type = "tool"

    def __init__(self, spec: ToolSpec, runner: ToolRunner) -> None:
        self.name = spec.name
        self.description = spec.description
        self.parameters: dict[str, Any] = copy.deepcopy(spec.parameters)
        self.input_schema = self.inputSchema = self.parameters
        self.metadata = {"runtime": "makers-store serve", "runsLocally": spec.runs_locally}
        self._runner = runner

    async def execute(self, args: Mapping[str, Any] | str | None = None) -> Any:
        return await self._runner.run(self.name, args)

    handler = execute
    invoke = execute

    def __repr__(self) -> str:
        return f"<LocalTool {self.name}>"


def function_tool(spec: ToolSpec, runner: ToolRunner) -> Any:
    """An OpenAI Agents SDK ``FunctionTool`` (``openai-agents-sdk``)."""
    try:
        from agents import FunctionTool
    except ImportError:
        raise missing_extra("openai-agents", "openai") from None

    async def on_invoke_tool(context: Any, raw_arguments: str) -> str:
        return result_text(await runner.run(spec.name, raw_arguments))

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=copy.deepcopy(spec.parameters),
        on_invoke_tool=on_invoke_tool,
        # strict mode wants every property required; ours has optional ones
        strict_json_schema=False,
    )


def _callables(spec: ToolSpec, runner: ToolRunner) -> tuple[Any, Any]:
    async def coroutine(**kwargs: Any) -> Any:
        return await runner.run(spec.name, kwargs)

    def func(**kwargs: Any) -> Any:
        return run_sync(runner.run(spec.name, kwargs))

    coroutine.__name__ = func.__name__ = spec.name
    return func, coroutine


def langchain_tool(spec: ToolSpec, runner: ToolRunner, factory: Any) -> Any:
    """A LangChain tool from ``factory``: the ``StructuredTool`` class or the ``tool`` decorator."""
    func, coroutine = _callables(spec, runner)
    schema = copy.deepcopy(spec.parameters)
    if hasattr(factory, "from_function"):
        return factory.from_function(
            func=func, coroutine=coroutine, name=spec.name, description=spec.description,
            args_schema=schema,
        )  # fmt: skip
    made = factory(spec.name, description=spec.description, args_schema=schema)(coroutine)
    if getattr(made, "func", True) is None:  # the decorator kept only the coroutine
        made.func = func
    return made


def structured_tool(spec: ToolSpec, runner: ToolRunner) -> Any:
    """A real ``langchain_core`` StructuredTool (``langgraph`` / ``deepagents``)."""
    try:
        from langchain_core.tools import StructuredTool
    except ImportError:
        raise missing_extra("langchain-core", "langgraph") from None
    return langchain_tool(spec, runner, StructuredTool)


def mcp_tool(spec: ToolSpec, runner: ToolRunner) -> Any:
    """A Claude Agent SDK in-process MCP tool (``SdkMcpTool``)."""
    try:
        from claude_agent_sdk import tool
    except ImportError:
        raise missing_extra("claude-agent-sdk", "claude") from None

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        result = await runner.run(spec.name, args)
        return {
            "content": [{"type": "text", "text": result_text(result)}],
            "is_error": is_error(result),
        }

    return tool(spec.name, spec.description, copy.deepcopy(spec.parameters))(handler)


_JSON_TYPES: dict[str, Any] = {
    "string": str, "integer": int, "number": float, "boolean": bool,
    "object": dict[str, Any], "array": list[Any],
}  # fmt: skip


def _arguments_model(spec: ToolSpec) -> Any:
    from pydantic import Field, create_model  # CrewAI tools are pydantic models

    required = set(spec.parameters.get("required", []))
    fields: dict[str, Any] = {}
    for name, schema in spec.parameters["properties"].items():
        kind = _JSON_TYPES.get(schema.get("type", "string"), Any)
        described = Field(description=schema.get("description", ""))
        if name not in required:
            kind, described = kind | None, Field(None, description=schema.get("description", ""))
        fields[name] = (kind, described)
    return create_model(f"{spec.name}_arguments", **fields)


def crewai_tool(spec: ToolSpec, runner: ToolRunner, base_tool: type) -> Any:
    """An instance of a subclass of the injected CrewAI ``BaseTool`` class."""

    def _run(self: Any, **kwargs: Any) -> str:
        given = {key: value for key, value in kwargs.items() if value is not None}
        return result_text(run_sync(runner.run(spec.name, given)))

    async def _arun(self: Any, **kwargs: Any) -> str:
        given = {key: value for key, value in kwargs.items() if value is not None}
        return result_text(await runner.run(spec.name, given))

    subclass = type(f"{spec.name}_tool", (base_tool,), {"_run": _run, "_arun": _arun})
    return subclass(
        name=spec.name, description=spec.description, args_schema=_arguments_model(spec)
    )
