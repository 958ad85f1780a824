"""``context.tools.all()`` in a Node agent, shaped by ``agents.framework`` as the
Python toolkit shapes ``ctx.tools``, handed to the real frameworks (the
projects are in :mod:`.node_tools_projects`), under ``makers-store serve``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from makers_store.emulator.runtime.tools import Workspace
from makers_store.emulator.runtime.tools.catalog import BROWSER_TOOLS, FILE_TOOLS, SPECS
from tests.node.harness import PROJECT, npm_ci

from .harness import serving, write_project
from .node_tools_projects import SHAPE_PROJECTS

pytestmark = pytest.mark.slow

NAMES = [spec.name for spec in SPECS]


def shape_of(framework: str, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """What ``POST /shape`` of that framework's project answered, and its workspace."""
    npm_ci(PROJECT)
    project = write_project(tmp_path / "project", SHAPE_PROJECTS[framework])
    (project / "node_modules").symlink_to(PROJECT / "node_modules")
    with serving(project, tmp_path / "serve.log", "--store", "memory://") as server:
        with server.client(timeout=60) as client:
            response = client.post("/shape", json={}, headers={"makers-conversation-id": "shape"})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data, Workspace.for_conversation(project, "shape", "unused").root


def test_openai_agents_run_the_function_tools(tmp_path: Path) -> None:
    data, workspace = shape_of("openai-agents-sdk", tmp_path)
    assert data["kinds"] == ["function"] and data["names"] == NAMES
    # the shape the platform's docs give: {type: 'function', name, parameters, execute}
    assert data["documented"] == ["type", "name", "parameters", "execute"]
    assert data["strict"] is False  # optional properties, as in Python
    written, read = (json.loads(text) for text in data["outputs"])
    assert written == {"path": "/oa/x.txt", "bytesWritten": 11}
    assert read == {"path": "/oa/x.txt", "content": "from openai"}
    assert data["final"] == f"read: {data['outputs'][1]}"
    assert data["executed"]["exists"] is True
    assert (workspace / "oa" / "x.txt").read_text(encoding="utf-8") == "from openai"


@pytest.mark.parametrize("framework", ["langgraph", "deepagents"])
def test_a_tool_node_runs_the_langchain_tools(framework: str, tmp_path: Path) -> None:
    data, workspace = shape_of(framework, tmp_path)
    assert data["count"] == 14
    assert data["namespaces"] == ["langchain/tools"]
    assert json.loads(data["wrote"]) == {"path": "/lg/x.txt", "bytesWritten": 5}
    assert json.loads(data["read"]) == {"path": "/lg/x.txt", "content": "graph"}
    assert data["factoryMadeInstance"] is True
    assert json.loads(data["viaFactory"]) == {"path": "/lg/x.txt", "content": "graph"}
    assert (workspace / "lg" / "x.txt").read_text(encoding="utf-8") == "graph"


def test_the_generic_shape_is_pythons_local_tool(tmp_path: Path) -> None:
    data, workspace = shape_of("none", tmp_path)
    assert data["keys"] == sorted([
        "type", "name", "description", "parameters", "inputSchema", "input_schema",
        "metadata", "execute", "handler", "invoke"])
    assert data["type"] == "tool"
    assert data["sameSchema"] is True and data["sameCall"] is True and data["attribute"] is True
    local = {"runtime": "makers-store serve", "runsLocally": True}
    assert data["metadata"] == [local, {**local, "runsLocally": False}]
    assert data["files"] == list(FILE_TOOLS) and data["browser"] == list(BROWSER_TOOLS)
    # arguments as an object or as their JSON text, as Python's LocalTool takes them
    assert data["wrote"] == {"path": "/g/x.txt", "bytesWritten": 7}
    assert data["read"] == {"path": "/g/x.txt", "content": "generic"}
    assert "browser_screenshot is not available under makers-store serve" in data["shot"]["error"]
    assert (workspace / "g" / "x.txt").read_text(encoding="utf-8") == "generic"
    errors = data["errors"]
    assert errors["names"] == (
        "ToolArgumentError: names must be an array of tool names, not 'files_read'")
    assert errors["unknown"] == "ToolArgumentError: names: no tool named 'nope'"
    assert errors["factory"].startswith("ToolArgumentError: toLangChainTools: pass LangChain's")
    assert errors["crewai"].startswith("PlatformOnlyError: context.tools.toCrewAITools")
    for name, python in (("cdpUrl", "browser.cdp_url"), ("liveUrl", "browser.live_url"),
                         ("envdAccessToken", "envd_access_token")):
        assert errors[name].startswith(
            f"PlatformOnlyError: ctx.sandbox.{python} is not available under makers-store serve"
        ), errors[name]
    # the throwing properties are not enumerable: logging the sandbox reads none of them
    assert "envdAccessToken" not in data["sandboxKeys"]
    assert not {"cdpUrl", "liveUrl"} & set(data["browserKeys"])
