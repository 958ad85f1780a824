"""``ctx.tools`` / ``ctx.sandbox`` through a real ``makers-store serve``: the
workspace is per conversation, under the project, shared by tools and sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from makers_store.emulator.runtime.tools.workspace import WORKSPACES_DIR, folder_name

from .harness import serving, write_project

PROJECT = {
    "edgeone.json": '{"agents": {"framework": "langgraph"}}',
    "agents/note.py": """
        import json

        from langchain_core.messages import AIMessage
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode


        async def handler(ctx):
            graph = StateGraph(MessagesState)
            graph.add_node("tools", ToolNode(ctx.tools.all()))
            graph.add_edge(START, "tools")
            graph.add_edge("tools", END)
            call = {"name": "files_write", "id": "w",
                    "args": {"path": "/tmp/note.txt", "content": ctx.request.body["text"]}}
            out = await graph.compile().ainvoke(
                {"messages": [AIMessage(content="", tool_calls=[call])]})
            return json.loads(out["messages"][-1].content)
    """,
    "agents/recall.py": """
        async def handler(ctx):
            try:
                text = await ctx.sandbox.files.read("/tmp/note.txt")
            except FileNotFoundError as exc:
                return {"error": str(exc)}
            listed = await ctx.sandbox.commands.run("cat tmp/note.txt", timeout=10)
            return {"text": text, "cat": listed.stdout, "exitCode": listed.exitCode}
    """,
}


@pytest.mark.slow
def test_tools_and_sandbox_share_a_workspace_per_conversation(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", PROJECT)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    alice = {"makers-conversation-id": "alice/../x"}
    with serving(project, tmp_path / "serve.log", "--store", store) as server:
        with server.client() as client:
            wrote = client.post("/note", json={"text": "ship it"}, headers=alice)
            assert wrote.json() == {"path": "/tmp/note.txt", "bytesWritten": 7}, wrote.text
            recalled = client.post("/recall", json={}, headers=alice).json()
            assert recalled == {"text": "ship it", "cat": "ship it", "exitCode": 0}
            other = client.post("/recall", json={}, headers={"makers-conversation-id": "bob"})
            assert other.json() == {"error": "no such file or directory: /tmp/note.txt"}
    folder = project / WORKSPACES_DIR / folder_name("alice/../x", "")
    assert (folder / "tmp/note.txt").read_text(encoding="utf-8") == "ship it"
