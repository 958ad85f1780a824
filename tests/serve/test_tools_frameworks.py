"""``ctx.tools`` shapes driven by the real frameworks installed in the venv.

Each test is agent code in the templates' call style (``Agent(tools=
ctx_tools.all())``, ``to_claude_mcp_server("edgeone", {...})`` fed to
``create_sdk_mcp_server``, ``ToolNode(ctx.tools.all())``...), with a
scripted model or a hand-written tool call, and checks the files on disk.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from makers_store.emulator.runtime.tools import (
    ToolArgumentError,
    Workspace,
    build_toolkit,
    shapes,
)
from makers_store.emulator.runtime.tools.catalog import SPECS, SPECS_BY_NAME, ToolRunner
from makers_store.emulator.runtime.tools.shapes import LocalTool
from makers_store.emulator.runtime.tools.toolkit import Toolkit
from makers_store.errors import MissingExtraError

ALL_NAMES = [spec.name for spec in SPECS]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.for_conversation(tmp_path / "project", "conv-1", "run_1")


def tools_for(framework: str | None, workspace: Workspace) -> Toolkit:
    return build_toolkit(framework, workspace, True, {})


def text_of(workspace: Workspace, path: str) -> str:
    return (workspace.root / path).read_text(encoding="utf-8")


# --- openai-agents-sdk ------------------------------------------------------------


async def test_openai_agent_writes_then_reads_a_file(workspace: Workspace) -> None:
    from agents import Agent, FunctionTool, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    ctx_tools = tools_for("openai-agents-sdk", workspace)
    tools = ctx_tools.all()
    assert not inspect.isawaitable(tools)
    assert [type(t) for t in tools] == [FunctionTool] * 14
    model = ScriptedModel(
        [
            [
                function_call(
                    "files_write", {"path": "/notes/todo.txt", "content": "milk"}, call_id="w"
                )
            ],
            [function_call("files_read", {"path": "/notes/todo.txt"}, call_id="r")],
            [assistant_message("noted")],
        ]
    )
    agent = Agent(name="notes", instructions="Keep notes.", tools=tools, model=model)
    result = await Runner.run(agent, "Remember milk.", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "noted"
    model.assert_complete()
    assert text_of(workspace, "notes/todo.txt") == "milk"
    outputs = {
        item.raw_item["call_id"]: item.output
        for item in result.new_items
        if item.type == "tool_call_output_item"
    }
    assert json.loads(outputs["w"]) == {"path": "/notes/todo.txt", "bytesWritten": 4}
    assert json.loads(outputs["r"]) == {"path": "/notes/todo.txt", "content": "milk"}


async def test_openai_tool_errors_reach_the_model_as_results(workspace: Workspace) -> None:
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    model = ScriptedModel(
        [
            [function_call("files_read", {"path": "../../etc/passwd"}, call_id="bad")],
            [assistant_message("refused")],
        ]
    )
    agent = Agent(name="a", tools=tools_for("openai-agents-sdk", workspace).all(), model=model)
    result = await Runner.run(agent, "read it", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "refused"
    (output,) = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert "climbs above the workspace root" in json.loads(output)["error"]


async def test_openai_tools_respect_no_tools(workspace: Workspace) -> None:
    off = build_toolkit("openai-agents-sdk", workspace, False, {})
    answer = await off.commands.on_invoke_tool(None, '{"cmd": "touch x"}')
    assert json.loads(answer) == {
        "error": "commands did not run: tools are turned off by `makers-store serve --no-tools`"
    }
    assert not workspace.root.exists()


def test_openai_shape_names_the_extra_when_missing(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # as if openai-agents were not installed
    with pytest.raises(MissingExtraError, match=r"makers-store\[openai\]"):
        tools_for("openai-agents-sdk", workspace).all()


# --- claude-agent-sdk -------------------------------------------------------------


async def test_claude_bundle_serves_the_tools_over_mcp(workspace: Workspace) -> None:
    from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server
    from mcp import Client

    ctx_tools = tools_for("claude-agent-sdk", workspace)
    bundle = ctx_tools.to_claude_mcp_server("edgeone", {"always_load": True})
    assert bundle.name == bundle["name"] == "edgeone"
    assert bundle.allowed_tools == bundle.allowedTools == [f"mcp__edgeone__{n}" for n in ALL_NAMES]
    assert bundle.always_load is True
    assert all(
        isinstance(t, SdkMcpTool) and t.input_schema["type"] == "object" for t in bundle.tools
    )
    server = create_sdk_mcp_server(name=bundle.name, tools=bundle.tools)
    async with Client(server["instance"]) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ALL_NAMES
        wrote = await client.call_tool("files_write", {"path": "/a.txt", "content": "via mcp"})
        assert not wrote.is_error
        read = await client.call_tool("files_read", {"path": "/a.txt"})
        assert json.loads(read.content[0].text) == {"path": "/a.txt", "content": "via mcp"}
        refused = await client.call_tool("files_read", {"path": "../x"})
        assert refused.is_error and "climbs above" in refused.content[0].text
    assert text_of(workspace, "a.txt") == "via mcp"


def test_claude_bundle_options_both_spellings(workspace: Workspace) -> None:
    ctx_tools = tools_for("claude-agent-sdk", workspace)
    assert ctx_tools.to_claude_mcp_server("edgeone", always_load=True).always_load is True
    assert ctx_tools.toClaudeMcpServer("x", {"alwaysLoad": True}).alwaysLoad is True
    default = ctx_tools.to_claude_mcp_server()
    assert (default.name, default.always_load) == ("edgeone", False)
    with pytest.raises(ToolArgumentError, match="unknown key"):
        ctx_tools.to_claude_mcp_server("edgeone", {"alwaysload": True})
    with pytest.raises(ToolArgumentError, match="an MCP server name"):
        ctx_tools.to_claude_mcp_server("edge one")
    with pytest.raises(ToolArgumentError, match="an MCP server name"):
        ctx_tools.to_claude_mcp_server("edgeone\n")  # the whole name must match
    # all() keeps the generic shape for this framework
    assert all(isinstance(t, LocalTool) for t in ctx_tools.all())


# --- langgraph / deepagents -------------------------------------------------------


def tool_graph(tools: list[Any]) -> Any:
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def tool_call(name: str, call_id: str, **args: Any) -> Any:
    from langchain_core.messages import AIMessage

    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


@pytest.mark.parametrize("framework", ["langgraph", "deepagents"])
async def test_langgraph_tool_node_runs_the_tools(workspace: Workspace, framework: str) -> None:
    from langchain_core.tools import StructuredTool

    tools = tools_for(framework, workspace).all()
    assert all(isinstance(t, StructuredTool) for t in tools)
    app = tool_graph(tools)
    wrote = await app.ainvoke(
        {"messages": [tool_call("files_write", "w", path="/g.txt", content="graph")]}
    )
    assert json.loads(wrote["messages"][-1].content)["bytesWritten"] == 5
    read = await app.ainvoke({"messages": [tool_call("files_read", "r", path="/g.txt")]})
    assert json.loads(read["messages"][-1].content) == {"path": "/g.txt", "content": "graph"}
    # a synchronous graph run uses the tools' sync entry point
    exists = app.invoke({"messages": [tool_call("files_exists", "e", path="/g.txt")]})
    assert json.loads(exists["messages"][-1].content)["exists"] is True


async def test_to_langchain_tools_with_the_injected_factory(workspace: Workspace) -> None:
    from langchain_core.tools import StructuredTool, tool

    ctx_tools = tools_for(None, workspace)
    made = ctx_tools.to_langchain_tools(StructuredTool, ["files_write", "files_read"])
    assert [(type(t), t.name) for t in made] == [
        (StructuredTool, "files_write"),
        (StructuredTool, "files_read"),
    ]
    write, read = made
    await write.ainvoke({"path": "/lc.txt", "content": "lc"})
    assert read.invoke({"path": "/lc.txt"}) == {"path": "/lc.txt", "content": "lc"}
    (decorated,) = ctx_tools.toLangChainTools(tool, names=["files_read"])
    assert isinstance(decorated, StructuredTool)
    assert decorated.invoke({"path": "/lc.txt"})["content"] == "lc"
    assert await decorated.ainvoke({"path": "/lc.txt"}) == {"path": "/lc.txt", "content": "lc"}
    assert len(ctx_tools.to_langchain_tools(StructuredTool)) == 14
    with pytest.raises(ToolArgumentError, match="no tool named 'nope'"):
        ctx_tools.to_langchain_tools(StructuredTool, ["nope"])
    with pytest.raises(ToolArgumentError, match="names must be a list"):
        ctx_tools.to_langchain_tools(StructuredTool, "files_read")


# --- crewai (the BaseTool class is injected) -----------------------------------------


class CrewStyleBaseTool(BaseModel, ABC):
    """CrewAI's BaseTool contract (crewai is not installed here): pydantic fields
    ``name``, ``description``, ``args_schema``, an abstract ``_run``, and ``run``
    validating the arguments against ``args_schema`` first."""

    name: str
    description: str
    args_schema: type[BaseModel]

    @abstractmethod
    def _run(self, *args: Any, **kwargs: Any) -> Any: ...

    def run(self, **kwargs: Any) -> Any:
        return self._run(**self.args_schema(**kwargs).model_dump())


def test_to_crewai_tools_subclasses_the_injected_base(workspace: Workspace) -> None:
    ctx_tools = tools_for("crewai", workspace)
    write, read = ctx_tools.to_crewai_tools(CrewStyleBaseTool, ["files_write", "files_read"])
    assert isinstance(write, CrewStyleBaseTool) and write.name == "files_write"
    assert set(write.args_schema.model_fields) == {"path", "content"}
    assert json.loads(write.run(path="/crew.txt", content="crew"))["bytesWritten"] == 4
    assert json.loads(read.run(path="/crew.txt"))["content"] == "crew"
    assert len(ctx_tools.toCrewAITools(CrewStyleBaseTool)) == 14
    assert all(isinstance(t, LocalTool) for t in ctx_tools.all())


class ThreadNoting(ToolRunner):
    """The real runner, noting the thread each run happens on."""

    threads: list[str]

    async def run(self, name: str, raw_arguments: Any = None) -> Any:
        self.threads.append(threading.current_thread().name)
        return await super().run(name, raw_arguments)


def test_sync_shapes_run_tools_through_the_stores_one_sync_bridge(workspace: Workspace) -> None:
    # CrewAI's _run, called from a plain thread and from inside a running loop:
    # both hand the run to the store's Portal thread (no loop of their own).
    runner = ThreadNoting(workspace, {}, enabled=True)
    runner.threads = []
    write = shapes.crewai_tool(SPECS_BY_NAME["files_write"], runner, CrewStyleBaseTool)
    assert json.loads(write.run(path="/s.txt", content="s"))["bytesWritten"] == 1

    async def inside_a_loop() -> Any:
        return write.run(path="/s.txt", content="ss")

    assert json.loads(asyncio.run(inside_a_loop()))["bytesWritten"] == 2
    assert runner.threads == ["makers-store-portal"] * 2


# --- no framework: the starter template's generic reading ---------------------------


@pytest.mark.parametrize("framework", [None, "basic"])
async def test_generic_tools_read_the_way_the_starter_reads_them(
    workspace: Workspace, framework: str | None
) -> None:
    items = tools_for(framework, workspace).all()
    assert not inspect.isawaitable(items)
    by_name: dict[str, Any] = {}
    for item in items:
        assert item.type == "tool"
        assert item.parameters is item.input_schema is item.inputSchema
        by_name[item.name] = item.execute or item.handler or item.invoke
    assert list(by_name) == ALL_NAMES
    written = by_name["files_write"]({"path": "/p.txt", "content": "generic"})
    assert inspect.isawaitable(written)
    assert (await written)["bytesWritten"] == 7
    assert (await by_name["files_read"](json.dumps({"path": "/p.txt"})))["content"] == "generic"
    tool = items[ALL_NAMES.index("files_read")]
    assert await tool.handler({"path": "/p.txt"}) == await tool.invoke({"path": "/p.txt"})
