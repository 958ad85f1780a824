"""A TypeScript Claude Agent SDK agent under ``makers-store serve --instances 3``.

The project (:mod:`.node_claude_project`) is written in the platform's Node
template call style: ``context.tools.toClaudeMcpServer()`` fed to the SDK's
``createSdkMcpServer``, the session kept in ``context.store.claudeSessionStore()``
and resumed through ``claudeSessionBinding`` + ``getSessionInfo``, messages kept
with client-chosen ids, a ``/stop`` agent and a history cloud function.

The SDK's ``query()`` drives a real Claude Code CLI: the one bundled in the
Python ``claude-agent-sdk`` wheel (the npm package's 200 MB binary is optional
and not installed), named to the agent in ``CLAUDE_CLI_PATH``. The CLI talks to
the fake gateway on loopback (:mod:`.fake_tool_model`), which echoes what it
was sent and plays one turn that calls the ``edgeone`` MCP tools.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from makers_store.emulator.runtime.tools import Workspace
from makers_store.emulator.runtime.tools.catalog import SPECS
from tests.node.harness import CLAUDE_PROJECT, npm_ci

from .fake_model import SLOW_CHUNK_INTERVAL_S, SLOW_CHUNKS, FakeModel
from .fake_tool_model import NOTE_PATH, READ_TOOL, WRITE_TOOL, fake_tool_model
from .harness import Server, serving, sse_events, stop_mid_stream, write_project
from .node_claude_project import NODE_CLAUDE_PROJECT

pytestmark = pytest.mark.slow

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")
BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


@dataclass
class Served:
    server: Server
    model: FakeModel


def _cli_processes(config_dir: str) -> list[int]:
    """Live processes started with CLAUDE_CONFIG_DIR=config_dir (this test's CLIs only)."""
    marker = f"CLAUDE_CONFIG_DIR={config_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if not BUNDLED_CLI.is_file():
        pytest.skip(f"the claude-agent-sdk wheel has no bundled CLI at {BUNDLED_CLI}")
    npm_ci(CLAUDE_PROJECT)
    root = tmp_path_factory.mktemp("node-claude")
    project = write_project(root / "project", NODE_CLAUDE_PROJECT)
    (project / "node_modules").symlink_to(CLAUDE_PROJECT / "node_modules")
    config_dir = str(root / "claude-config")
    with fake_tool_model() as model:
        env = {
            "AI_GATEWAY_BASE_URL": model.base_url,
            "AI_GATEWAY_API_KEY": "sk-node-claude",
            "CLAUDE_CLI_PATH": str(BUNDLED_CLI),
            "CLAUDE_CONFIG_DIR": config_dir,
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
        }
        store = f"sqlite:///{root / 'store.db'}"
        args = ("--store", store, "--instances", "3")
        with serving(project, root / "serve.log", *args, env=env) as server:
            yield Served(server, model)
    # every CLI a run started has exited, the stopped one too
    deadline = time.monotonic() + 10
    while _cli_processes(config_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _cli_processes(config_dir), "Claude Code CLI processes outlived their runs"


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    with served.server.client(timeout=120) as opened:
        yield opened


def chat(client: httpx.Client, cid: str, message: str, message_id: str) -> tuple[
    list[tuple[str, dict[str, Any]]], httpx.Headers
]:
    body = {"message": message, "message_id": message_id, "user_id": "user-7"}
    frames = []
    with client.stream("POST", "/chat", json=body,
                       headers={"makers-conversation-id": cid}) as response:
        assert response.status_code == 200, response.read()
        for event, data in sse_events(response.iter_lines()):
            frames.append((event or "", json.loads(data)))
        return frames, response.headers


def reply_of(frames: list[tuple[str, dict[str, Any]]]) -> str:
    assert not [data for event, data in frames if event == "error"], frames
    assert frames[-1] == ("done", {"stopped": False}), frames
    return "".join(data["delta"] for event, data in frames if event == "text_delta")


def test_the_bundle_is_what_create_sdk_mcp_server_takes(
    served: Served, client: httpx.Client
) -> None:
    response = client.post("/mcp_probe", json={}, headers={"makers-conversation-id": "probe"})
    assert response.status_code == 200, response.text
    data = response.json()
    names = [spec.name for spec in SPECS]
    # toClaudeMcpServer() without arguments: Python's default name, nothing always loaded
    assert data["plain"] == {"name": "edgeone", "alwaysLoad": False, "meta": None,
                             "allowedTools": [f"mcp__edgeone__{name}" for name in names]}
    assert data["named"] == "mcp__my-tools__commands"
    assert data["bundle"] == {"name": "edgeone", "alwaysLoad": True, "type": "sdk"}
    # the server lists every tool, marked always-loaded, with the catalog's JSON schema
    listed = {tool["name"]: tool for tool in data["listed"]}
    assert list(listed) == names
    for spec in SPECS:
        schema = listed[spec.name]["inputSchema"]
        assert listed[spec.name]["meta"] == {"anthropic/alwaysLoad": True}
        assert set(schema["properties"]) == set(spec.parameters["properties"]), spec.name
        assert sorted(schema.get("required", [])) == sorted(spec.parameters["required"])
        for key, wanted in spec.parameters["properties"].items():
            shown = schema["properties"][key]
            for keyword in ("type", "description", "enum", "default", "minimum"):
                assert shown.get(keyword) == wanted.get(keyword), (spec.name, key, keyword)
    # calls run the Python tools in the conversation's workspace; failures are MCP errors
    assert json.loads(data["wrote"]["content"][0]["text"]) == {
        "path": "/probe/a.txt", "bytesWritten": 6}
    assert data["wrote"]["isError"] is False
    assert json.loads(data["read"]["content"][0]["text"]) == {
        "path": "/probe/a.txt", "content": "probed"}
    assert data["missing"]["isError"] is True
    assert "no such file" in json.loads(data["missing"]["content"][0]["text"])["error"]
    assert data["invalid"]["isError"] is True
    assert "Invalid arguments for tool files_read" in data["invalid"]["content"][0]["text"]
    workspace = Workspace.for_conversation(served.server.project, "probe", "unused").root
    assert (workspace / "probe" / "a.txt").read_text(encoding="utf-8") == "probed"
    name_rule = (
        "ToolArgumentError: name must be 1-64 letters, digits, '_' or '-' (an MCP server name)")
    assert data["errors"]["name"] == f"{name_rule}, not 'edge one'"
    assert data["errors"]["newline"] == f"{name_rule}, not 'edgeone\\n'"
    assert data["errors"]["alwaysLoad"] == (
        "ToolArgumentError: alwaysLoad must be true or false, not 'yes'")
    assert data["errors"]["options"].startswith("ToolArgumentError: options must be an object")
    assert data["errors"]["crewai"].startswith(
        "PlatformOnlyError: context.tools.toCrewAITools is not available in a Node agent, "
        "because CrewAI is Python-only")


def test_turns_resume_on_every_instance_and_the_model_uses_the_tools(
    served: Served, client: httpx.Client
) -> None:
    cid = "node-claude-memory"
    turns = ("alpha", "bravo", "charlie")
    instances = []
    for number, text in enumerate(turns, start=1):
        frames, headers = chat(client, cid, text, f"{cid}-{number}")
        assert reply_of(frames) == f"turns={number} first=alpha last={text}"
        instances.append(headers["makers-instance"])
    # resumed from the store's transcript on an instance that never saw the conversation
    assert len(set(instances)) == 3, instances

    frames, _ = chat(client, cid, "tool: buy milk", f"{cid}-4")
    read_back = {"path": NOTE_PATH, "content": "buy milk"}
    assert reply_of(frames) == f"read back: {json.dumps(read_back, separators=(',', ':'))}"
    assert [data["name"] for event, data in frames if event == "tool_call"] == [
        WRITE_TOOL, READ_TOOL]
    results = [data for event, data in frames if event == "tool_result"]
    assert [json.loads(r["text"]) for r in results] == [
        {"path": NOTE_PATH, "bytesWritten": 8}, read_back]
    assert not any(r["is_error"] for r in results)
    workspace = Workspace.for_conversation(served.server.project, cid, "unused").root
    assert (workspace / "notes" / "tool.txt").read_text(encoding="utf-8") == "buy milk"
    # the model was offered the tools with their schema, under the bundle's names
    offered = {tool["name"]: tool for request in served.model.requests
               for tool in request["body"].get("tools", [])}
    assert offered[WRITE_TOOL]["input_schema"]["required"] == ["path", "content"]

    history = client.post("/history", json={"conversation_id": cid, "user_id": "user-7"})
    assert history.status_code == 200, history.text
    expected = []
    for number, text in enumerate(turns, start=1):
        answer = f"turns={number} first=alpha last={text}"
        expected += [(f"{cid}-{number}", "user", text),
                     (f"{cid}-{number}-reply", "assistant", answer)]
    expected += [(f"{cid}-4", "user", "tool: buy milk"),
                 (f"{cid}-4-reply", "assistant", reply_of(frames))]
    assert [(m["id"], m["role"], m["text"]) for m in history.json()["messages"]] == expected


def test_stop_ends_a_run_on_another_instance(served: Served, client: httpx.Client) -> None:
    cid = "node-claude-stop"
    body = {"message": "slow one", "message_id": f"{cid}-1"}
    run = stop_mid_stream(served.server, client, cid=cid, body=body, stop_path="/stop")
    assert run.stop.status_code == 200, run.stop.text
    assert run.stop.json() == {"state": "stopping", "aborted": True, "conversation_id": cid,
                               "run_id": run.run_id}
    assert run.frames[-1] == ("done", {"stopped": True}), run.frames[-3:]
    # the slow answer takes SLOW_CHUNKS * interval; the run ended well before
    assert run.seconds_after_stop < SLOW_CHUNKS * SLOW_CHUNK_INTERVAL_S / 2, run
    idle = client.post("/stop", json={"conversation_id": cid}).json()
    assert idle == {"state": "idle", "aborted": False, "conversation_id": cid, "run_id": None}
    assert _trace_status(served.server, run.run_id) == "aborted"


def _trace_status(server: Server, run_id: str) -> str:
    path = server.project / ".makers-store" / "traces.jsonl"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
            record = json.loads(line)
            if record["run_id"] == run_id:
                return str(record["status"])
        time.sleep(0.1)
    raise AssertionError(f"no trace record for {run_id}")
