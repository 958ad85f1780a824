"""Each framework family, served at ``--instances 3`` over real HTTP, as deployed.

For plain Chat Completions, the OpenAI Agents SDK, LangGraph and the Claude
Agent SDK (projects in :mod:`tests.serve.framework_projects`, written in the
templates' call styles), against a fake gateway that echoes what the model
was sent:

- three turns land on three different instances and the third is answered
  from all three user turns: memory comes from the store, not the process;
- a stop POSTed without the conversation header (as the platform's frontends
  do) stops a slow stream on whichever instance runs it, answering
  ``aborted: true`` with that run's id; a second stop finds nothing running;
- the history cloud function renders the turns from the message API.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .fake_model import SLOW_CHUNK_INTERVAL_S, SLOW_CHUNKS, fake_model
from .framework_projects import FAMILIES
from .harness import serving, sse_events, write_project

pytestmark = pytest.mark.slow

TURNS = ("alpha", "bravo", "charlie")


def gateway_env(base_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "AI_GATEWAY_BASE_URL": base_url,
        "AI_GATEWAY_API_KEY": "sk-e2e",
        # The Claude Agent SDK's CLI appends /v1/messages itself.
        "ANTHROPIC_BASE_URL": base_url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "sk-e2e",
        # The CLI refuses bypassPermissions as root unless told it is sandboxed.
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }


def chat(
    client: httpx.Client, cid: str, message: str
) -> tuple[list[dict[str, Any]], httpx.Headers]:
    """One turn: the decoded SSE frames (with their event names) and the headers."""
    frames: list[dict[str, Any]] = []
    headers = {"makers-conversation-id": cid}
    with client.stream("POST", "/chat", json={"message": message}, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event, data in sse_events(response.iter_lines()):
            frames.append({"event": event, **json.loads(data)})
        return frames, response.headers


def reply_of(frames: list[dict[str, Any]]) -> str:
    errors = [frame for frame in frames if frame["event"] == "error"]
    assert not errors, errors
    return "".join(frame["delta"] for frame in frames if frame["event"] == "text_delta")


def check_three_turns_remember(client: httpx.Client, cid: str) -> None:
    instances = []
    for number, text in enumerate(TURNS, start=1):
        frames, headers = chat(client, cid, text)
        assert reply_of(frames) == f"turns={number} first={TURNS[0]} last={text}"
        assert frames[-1] == {"event": "done", "stopped": False}
        instances.append(headers["makers-instance"])
    assert len(set(instances)) == 3, instances


def check_stop_mid_stream(client: httpx.Client, cid: str) -> None:
    seen: dict[str, Any] = {"frames": []}
    first_delta = threading.Event()

    def stream() -> None:
        headers = {"makers-conversation-id": cid}
        with client.stream("POST", "/chat", json={"message": "slow one"}, headers=headers) as reply:
            seen["run_id"] = reply.headers["makers-run-id"]
            seen["instance"] = reply.headers["makers-instance"]
            for event, data in sse_events(reply.iter_lines()):
                seen["frames"].append({"event": event, **json.loads(data)})
                if event == "text_delta":
                    first_delta.set()
        seen["ended"] = time.monotonic()

    thread = threading.Thread(target=stream)
    thread.start()
    assert first_delta.wait(60), seen
    stopped_at = time.monotonic()
    stop = client.post("/chat/stop", json={"conversation_id": cid})  # no header, as frontends do
    assert stop.status_code == 200, stop.text
    answer = stop.json()
    thread.join(60)
    assert answer == {
        "status": "aborting",
        "conversation_id": cid,
        "run_id": seen["run_id"],
        "aborted": True,
    }
    # The slow answer would take SLOW_CHUNKS * interval; it ended well before that.
    assert seen["ended"] - stopped_at < SLOW_CHUNKS * SLOW_CHUNK_INTERVAL_S / 2, seen
    assert seen["frames"][-1] == {"event": "done", "stopped": True}, seen["frames"][-3:]
    idle = client.post("/chat/stop", json={"conversation_id": cid}).json()
    assert idle["aborted"] is False and idle["status"] == "idle"


def check_history(client: httpx.Client, cid: str) -> None:
    response = client.get("/history", params={"conversation_id": cid})
    assert response.status_code == 200, response.text
    bubbles = [(b["role"], b["text"]) for b in response.json()["messages"]]
    expected = []
    for number, text in enumerate(TURNS, start=1):
        expected += [("user", text), ("assistant", f"turns={number} first={TURNS[0]} last={text}")]
    assert bubbles[: len(expected)] == expected
    assert bubbles[len(expected)] == ("user", "slow one")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_framework_family_served_at_three_instances(family: str, tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", FAMILIES[family])
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with fake_model() as model:
        env = gateway_env(model.base_url, tmp_path)
        args = ("--store", store, "--instances", "3")
        with serving(project, tmp_path / "serve.log", *args, env=env) as server:
            cid = f"e2e-{family}"
            with server.client(timeout=120) as client:
                check_three_turns_remember(client, cid)
                check_stop_mid_stream(client, cid)
                check_history(client, cid)
    # The model saw every turn's history: the third call carried all three user turns.
    assert model.requests, "the fake gateway was never called"
