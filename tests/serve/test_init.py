"""``makers-store init``: the scaffolded project, served and exercised."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from .harness import cli, serving, sse_events

pytestmark = pytest.mark.slow


def init(directory: Path, *extra: str) -> None:
    result = cli("init", str(directory), *extra)
    assert result.returncode == 0, result.stderr


def chat(client: httpx.Client, path: str, cid: str, message: str) -> httpx.Response:
    return client.post(path, json={"message": message}, headers={"makers-conversation-id": cid})


def stream_events(client: httpx.Client, cid: str, message: str) -> list[tuple[str | None, Any]]:
    with client.stream(
        "POST", "/chat/stream", json={"message": message}, headers={"makers-conversation-id": cid}
    ) as response:
        assert response.status_code == 200
        return [(event, json.loads(data)) for event, data in sse_events(response.iter_lines())]


def test_init_writes_a_project(tmp_path: Path) -> None:
    init(tmp_path / "app")
    files = {p.relative_to(tmp_path / "app").as_posix() for p in (tmp_path / "app").rglob("*")}
    assert {
        "agents/_model.py",
        "agents/chat/index.py",
        "agents/chat/stream.py",
        "agents/chat/stop.py",
        "agents/chat/_memory.py",
        "cloud-functions/api/history.py",
        ".env.example",
        "README.md",
        "seeds/welcome.jsonl",
    } <= files
    refused = cli("init", str(tmp_path / "app"))
    assert refused.returncode != 0
    assert "--force" in refused.stderr
    (tmp_path / "app" / "agents" / "chat" / "index.py").write_text("changed", encoding="utf-8")
    init(tmp_path / "app", "--force")
    assert "async def handler" in (tmp_path / "app/agents/chat/index.py").read_text()


def test_init_project_serves_with_the_echo_model(tmp_path: Path) -> None:
    project = tmp_path / "app"
    init(project)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--instances", "2"
    ) as server, server.client() as client:
        first = chat(client, "/chat", "demo", "hi")
        second = chat(client, "/chat", "demo", "again")
        assert first.json()["reply"] == "Echo #1: hi"
        assert second.json()["reply"] == "Echo #2: again (your first message was: hi)"
        assert first.headers["makers-instance"] != second.headers["makers-instance"]
        assert chat(client, "/chat", "other", "solo").json()["reply"] == "Echo #1: solo"

        events = stream_events(client, "demo", "stream this")
        deltas = "".join(data["text"] for event, data in events if event == "delta")
        assert deltas == "Echo #3: stream this (your first message was: hi)"
        assert events[-1][0] == "done"
        assert events[-1][1]["aborted"] is False

        long_message = " ".join(f"word{n}" for n in range(200))
        with client.stream(
            "POST",
            "/chat/stream",
            json={"message": long_message},
            headers={"makers-conversation-id": "demo"},
        ) as response:
            frames = sse_events(response.iter_lines())
            assert next(frames)[0] == "delta"
            stop = client.post("/chat/stop", json={"conversation_id": "demo"})
            # abort_active_run answers synchronously with the stopped run's id
            assert stop.json() == {
                "conversation_id": "demo",
                "aborted": True,
                "run_id": response.headers["makers-run-id"],
            }
            rest = [(event, json.loads(data)) for event, data in frames]
        assert rest[-1][0] == "done"
        assert rest[-1][1]["aborted"] is True
        assert len(rest) < 100  # stopped long before the 200 words were echoed

        history = client.get("/api/history", params={"conversation_id": "demo"}).json()
        messages = history["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * 4
        assert messages[1]["content"] == "Echo #1: hi"
        assert messages[-1]["metadata"] == {"aborted": True}
        assert history["conversation"]["message_count"] == 8
        listed = client.get("/api/history").json()["conversations"]
        assert {c["conversation_id"] for c in listed} == {"demo", "other"}

        assert client.post("/chat", json={}).status_code == 400
        assert client.post("/chat/stop", json={}).status_code == 400


class _FakeModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/chat/completions that records what it is sent."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append(
            {"path": self.path, "auth": self.headers["Authorization"], "payload": payload}
        )
        reply = f"fake reply {len(self.calls)}"
        if payload.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for piece in (reply[:5], reply[5:]):
                chunk = {"choices": [{"delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
            return
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def fake_model() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    handler = type("Handler", (_FakeModel,), {"calls": calls})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", calls
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_init_project_calls_an_openai_compatible_gateway(tmp_path: Path) -> None:
    project = tmp_path / "app"
    init(project)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with fake_model() as (base_url, calls):
        (project / ".env").write_text(
            f"AI_GATEWAY_BASE_URL={base_url}\nAI_GATEWAY_API_KEY=test-key\n"
            "AI_GATEWAY_MODEL=fake-model\n",
            encoding="utf-8",
        )
        with serving(
            project, tmp_path / "serve.log", "--store", store
        ) as server, server.client() as client:
            assert chat(client, "/chat", "g", "hi").json()["reply"] == "fake reply 1"
            assert chat(client, "/chat", "g", "again").json()["reply"] == "fake reply 2"
            events = stream_events(client, "g", "streamed")
    assert "".join(d["text"] for e, d in events if e == "delta") == "fake reply 3"
    assert [call["path"] for call in calls] == ["/v1/chat/completions"] * 3
    assert {call["auth"] for call in calls} == {"Bearer test-key"}
    assert {call["payload"]["model"] for call in calls} == {"fake-model"}
    assert calls[2]["payload"]["stream"] is True
    sent = [(m["role"], m["content"]) for m in calls[2]["payload"]["messages"]]
    assert sent[0][0] == "system"
    assert sent[1:] == [
        ("user", "hi"),
        ("assistant", "fake reply 1"),
        ("user", "again"),
        ("assistant", "fake reply 2"),
        ("user", "streamed"),
    ]


def test_seeded_serve_and_a_snapshot_restored_while_it_runs(tmp_path: Path) -> None:
    """``serve --seed seeds/`` starts from init's seed conversation; a snapshot
    saved and restored while serve runs is what its workers read next (issue 34)."""
    project = tmp_path / "app"
    init(project)
    assert (project / "seeds" / "welcome.jsonl").is_file()
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--instances", "2", "--seed", "seeds"
    ) as server, server.client() as client:
        assert "seeded 1 conversation, 2 messages from " in server.log()

        def history() -> list[str]:
            found = client.get("/api/history", params={"conversation_id": "welcome"}).json()
            return [m["content"] for m in found["messages"]]

        seeded = history()
        assert seeded[0] == "What can you do?" and len(seeded) == 2
        saved = cli("--store", store, "snapshot", "save", "seeded")
        assert saved.returncode == 0, saved.stderr
        assert chat(client, "/chat", "welcome", "hi").status_code == 200
        assert chat(client, "/chat", "fresh", "hello").status_code == 200
        assert len(history()) == 4
        restored = cli("--store", store, "snapshot", "restore", "seeded", "--yes")
        assert restored.returncode == 0, restored.stderr
        for _ in range(2):  # both instances read the restored store
            assert history() == seeded
            assert client.get("/api/history", params={"conversation_id": "fresh"}).json()[
                "messages"
            ] == []
        assert chat(client, "/chat", "welcome", "again").status_code == 200
        assert history()[:2] == seeded and len(history()) == 4
