"""Context handlers (``async def handler(context)`` in cloud-functions/), served for real.

The official claude-agent-starter-python writes its cloud functions this way;
see platform_choices.CONTEXT_HANDLER_ENTRY. Our own code in that style:
history, a user's conversations, clear, delete, plus the context's fields,
results, limits and the relative-import rule.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from makers_store.emulator.runtime.functions import limits as function_limits
from makers_store.emulator.runtime.project import routes

from .context_handler_projects import CONTEXT_HANDLERS, SHORT_WALL_CLOCK_S
from .harness import Server, serving, write_project

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("context") / "project", CONTEXT_HANDLERS)


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[Server]:
    with serving(
        project,
        project.parent / "serve.log",
        "--store",
        f"sqlite:///{project.parent / 'serve.db'}",
        env={function_limits.WALL_CLOCK_ENV: str(SHORT_WALL_CLOCK_S), "PROBE_ENV": "probe-7"},
    ) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


def seed(client: httpx.Client, cid: str, *texts: str, user_id: str | None = None) -> None:
    payload = {"conversation_id": cid, "messages": list(texts), "user_id": user_id}
    got = client.post("/seed", json=payload)
    assert got.status_code == 200, got.text


def test_module_level_handlers_are_context_handler_routes(project: Path) -> None:
    table = routes.discover(project)
    kinds = {route.relative: route.entry for route in table.functions}
    assert set(kinds.values()) == {"context_handler"}
    assert "cloud-functions/history/index.py" in kinds
    assert "cloud-functions/probe/_facts.py" not in kinds  # private helpers stay unrouted
    assert table.helpers == ()


def test_history_clear_and_delete(client: httpx.Client, server: Server) -> None:
    cid = f"ctx-{uuid.uuid4()}"
    seed(client, cid, "one", "two")
    got = client.post("/history", json={"conversation_id": cid})
    assert got.status_code == 200
    assert got.json() == {
        "conversation_id": cid,
        "messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    }
    assert f"[history] {cid}: 2 messages" in server.log()  # the relative import worked
    cleared = client.post("/clear-history", json={"conversationId": cid})
    assert cleared.json() == {"status": "ok", "conversation_id": cid, "left": 0}
    assert client.post("/history", json={"conversation_id": cid}).json()["messages"] == []
    deleted = client.post("/delete-conversation", json={"conversation_id": cid})
    assert deleted.json() == {"status": "ok", "conversation_id": cid}


def test_conversations_of_one_user(client: httpx.Client) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    first, second, other = (f"ctx-{uuid.uuid4()}" for _ in range(3))
    seed(client, first, "a", user_id=user)
    seed(client, second, "b", user_id=user)
    seed(client, other, "c", user_id="someone-else")
    listed = client.post("/conversations", json={"user_id": user}).json()
    assert listed == {"conversations": [second, first], "next_cursor": None}
    client.post("/delete-conversation", json={"conversation_id": first})
    assert client.post("/conversations", json={"user_id": user}).json()["conversations"] == [
        second
    ]
    refused = client.post("/conversations", json={})
    assert refused.status_code == 400
    assert refused.json() == {"message": "user_id is required"}


def test_context_fields(client: httpx.Client) -> None:
    got = client.put(
        "/probe?tab=2",
        json={"x": 1},
        headers={"makers-conversation-id": "probe-1", "x-probe": "yes"},
    )
    assert got.status_code == 200
    body = got.json()
    assert {k: body[k] for k in ("method", "path", "query", "body", "header", "env")} == {
        "method": "PUT", "path": "/probe", "query": {"tab": "2"}, "body": {"x": 1},
        "header": "yes", "env": "probe-7",
    }
    assert body["conversation_id"] == body["agent_conversation_id"] == "probe-1"
    assert body["store_conversation_id"] == "probe-1"
    assert body["run_id"] == body["store_run_id"] == got.headers["makers-run-id"]
    assert body["state"] is True
    assert body["has_utils"] is False
    assert body["listed"] == []
    for name in ("langgraph_checkpointer", "langgraph_store"):
        assert body["refused"][name].startswith(
            f"context.agent.store.{name}: the EdgeOne Makers platform gives cloud functions "
            "no LangGraph adapters"
        )


def test_without_a_header_the_store_is_unbound(client: httpx.Client) -> None:
    got = client.get("/probe")
    body = got.json()
    assert body["conversation_id"] == body["agent_conversation_id"] == ""
    assert body["store_conversation_id"] is None
    assert body["store_run_id"] == got.headers["makers-run-id"]
    assert body["state"] is None and body["body"] == {}
    assert "makers-conversation-id" not in got.headers


def test_results_are_sent_as_an_agents(client: httpx.Client, server: Server) -> None:
    item = client.get("/items/42")
    assert (item.status_code, item.json(), item.headers["x-item"]) == (
        201, {"item_id": "42"}, "yes"
    )
    plain = client.post("/plain", json={})
    assert plain.text == "plain from True"  # a plain def runs in a thread
    assert "cloud-functions/plain.py: `handler` is not `async def`" in server.log()
    # declared JSON and not JSON: refused before the handler; with no type it is its bytes
    declared = {"content-type": "application/json"}
    assert client.post("/plain", content=b"not json", headers=declared).status_code == 400
    assert client.post("/plain", content=b"not json").text == "plain from True"
    stream = client.post("/stream", json={})
    assert stream.status_code == 500
    assert "cloud functions do not stream on the platform" in stream.json()["error"]
    assert "stream.py: `handler` is not `async def`" not in server.log()


def test_relative_imports_do_not_warn(client: httpx.Client, server: Server) -> None:
    assert client.get("/probe").status_code == 200
    assert "[probe] probed" in server.log()
    assert "is a relative import" not in server.log()


def test_limits_apply(client: httpx.Client) -> None:
    started = time.monotonic()
    got = client.post("/slow", json={"seconds": 5})
    assert got.status_code == 504
    assert "wall-clock limit of 1.5 s" in got.json()["error"]
    assert time.monotonic() - started < 4
    assert client.post("/slow", json={"seconds": 0.1}).json() == {"slept": 0.1}
    too_large = client.post("/history", content=b"x" * (6 * 1024 * 1024 + 1))
    assert too_large.status_code == 413


def test_own_timeout_error_is_a_500_not_the_limit(client: httpx.Client) -> None:
    got = client.get("/boom")
    assert got.status_code == 500
    assert got.json()["error"] == "TimeoutError: the handler's own timeout 5521"
