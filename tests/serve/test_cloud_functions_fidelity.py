"""Cloud functions under ``makers-store serve`` as the platform runs them (issue 11).

Entry-file recognition (helpers are not routed), framework mode with the
route prefix stripped, ``self.context.agent`` = ``{conversation_id, store}``
with the LangGraph adapters removed, and the 6 MB / 120 s limits (120 s
shortened through ``MAKERS_STORE_FUNCTION_TIMEOUT_S``), all over real HTTP.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from makers_store.emulator.runtime.functions import limits as function_limits
from makers_store.emulator.runtime.project import routes

from .function_projects import FIDELITY, SHORT_WALL_CLOCK_S
from .harness import Server, serving, write_project

pytestmark = pytest.mark.slow
SIX_MB = 6 * 1024 * 1024


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("fidelity") / "project", FIDELITY)


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[Server]:
    store = project.parent / "serve.db"
    with serving(
        project,
        project.parent / "serve.log",
        "--store",
        f"sqlite:///{store}",
        env={function_limits.WALL_CLOCK_ENV: str(SHORT_WALL_CLOCK_S)},
    ) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


def seed(client: httpx.Client, cid: str, *texts: str) -> None:
    got = client.post("/seed", json={"messages": list(texts)},
                      headers={"makers-conversation-id": cid})
    assert got.status_code == 200, got.text


# --- entry files --------------------------------------------------------------


def test_only_entry_files_are_routed(project: Path) -> None:
    table = routes.discover(project)
    routed = {route.relative: route.entry for route in table.functions}
    assert routed == {
        "cloud-functions/history/index.py": "handler",
        "cloud-functions/conversations/index.py": "handler",
        "cloud-functions/rules.py": "handler",
        "cloud-functions/positional.py": "handler",
        "cloud-functions/upload.py": "handler",
        "cloud-functions/slow.py": "handler",
        "cloud-functions/flood.py": "handler",
        "cloud-functions/relative/index.py": "handler",
        "cloud-functions/api/index.py": "app",
        "cloud-functions/api/status.py": "handler",
        "cloud-functions/fast/index.py": "app",
    }
    assert set(table.helpers) == {
        "cloud-functions/history/render.py",
        "cloud-functions/lib/util.py",
    }  # tests/ and scripts/ are not scanned at all; _private files are neither


def test_helpers_and_skipped_folders_answer_404(client: httpx.Client) -> None:
    for path in ("/history/render", "/lib/util", "/tests/probe", "/scripts"):
        assert client.get(path).status_code == 404, path


def test_template_style_history_function(client: httpx.Client, server: Server) -> None:
    cid = f"hist-{uuid.uuid4()}"
    seed(client, cid, "one", "two")
    got = client.get(f"/history?conversation_id={cid}")
    assert got.status_code == 200
    assert got.json() == {
        "conversation_id": cid,
        "messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    }
    assert f"[history] history of {cid}: 2 messages" in server.log()  # sys.path + bare import
    listed = client.get("/conversations").json()["conversations"]
    assert cid in listed
    deleted = client.post("/history", json={"conversation_id": cid})
    assert deleted.json() == {"deleted": cid}
    assert client.get(f"/history?conversation_id={cid}").json()["messages"] == []
    assert cid not in client.get("/conversations").json()["conversations"]


def test_positional_sync_calls(client: httpx.Client) -> None:
    cid = f"pos-{uuid.uuid4()}"
    seed(client, cid, "one", "two")
    assert client.get(f"/positional?conversation_id={cid}").json() == {
        "messages": ["one", "two"], "listed": True,
    }
    cleared = client.post("/positional", json={"action": "clear", "conversation_id": cid})
    assert cleared.json() == {"done": "clear"}
    assert client.get(f"/positional?conversation_id={cid}").json() == {
        "messages": [], "listed": True,
    }
    client.post("/positional", json={"action": "delete", "conversation_id": cid})
    assert client.get(f"/positional?conversation_id={cid}").json()["listed"] is False


def test_the_printed_route_table(server: Server) -> None:
    log = server.log()
    assert re.search(r"^  ANY   /api/\*\* +cloud-functions/api/index\.py \(Flask app\)$", log, re.M)
    assert re.search(r"^  ANY   /fast/\*\* +cloud-functions/fast/index\.py \(FastAPI app\)$", log,
                     re.M)
    assert re.search(r"^  do_\*  /positional +cloud-functions/positional\.py \(handler class\)$",
                     log, re.M)
    assert ("helpers (not routed: no entry pattern): cloud-functions/history/render.py, "
            "cloud-functions/lib/util.py\n") in log


def test_relative_import_works_but_warns_once(client: httpx.Client, server: Server) -> None:
    assert client.get("/relative").text == "relative"
    assert client.get("/relative").text == "relative"
    warning = "`from ._shared import ...` is a relative import"
    assert server.log().count(warning) == 1


# --- self.context --------------------------------------------------------------


def test_langgraph_adapters_are_refused_with_the_rule(client: httpx.Client) -> None:
    got = client.get("/rules", headers={"makers-conversation-id": "rules-1"}).json()
    for name in ("langgraph_checkpointer", "langgraph_store"):
        message = got["refused"][name]
        assert message.startswith(f"context.agent.store.{name}: the EdgeOne Makers platform")
        assert "cloud functions no LangGraph adapters" in message
        assert "from an agent" in message
    assert got["hasattr"] is False
    assert got["bound_refused"] is False
    assert got["kept"] == ["get_messages", "list_conversations", "state", "openai_session",
                           "claude_session_store", "claude_session_binding",
                           "delete_conversation"]
    assert got["listed"] == []
    assert got["state"] is True


def test_agent_conversation_id_from_the_header(client: httpx.Client) -> None:
    got = client.get("/rules", headers={"makers-conversation-id": "rules-2"})
    body = got.json()
    assert body["agent_conversation_id"] == body["conversation_id"] == "rules-2"
    assert body["store_conversation_id"] == "rules-2"
    assert body["run_id"] == got.headers["makers-run-id"]
    assert body["store_run_id"] == body["run_id"]
    answer = client.get("/rules")
    bare = answer.json()
    assert bare["agent_conversation_id"] == bare["conversation_id"] == ""
    assert bare["store_conversation_id"] is None  # unbound, but bound to the run
    assert bare["store_run_id"] == answer.headers["makers-run-id"]
    assert bare["state"] is None


def test_handler_path_is_the_full_raw_path(client: httpx.Client) -> None:
    got = client.get("/api/status")  # a handler below a Flask app's prefix: static wins
    assert got.text == "static"


# --- framework mode -------------------------------------------------------------


def test_flask_app_sees_the_path_below_its_prefix(client: httpx.Client) -> None:
    got = client.get("/api/users/7?tab=a").json()
    assert got == {"route": "user", "user_id": "7", "path": "/users/7", "script_root": "/api",
                   "query": {"tab": "a"}}
    assert client.get("/api").json()["path"] == "/"
    assert client.get("/api/").json()["route"] == "root"
    assert client.get("/api/nothing").status_code == 404


def test_flask_app_reaches_the_context(client: httpx.Client) -> None:
    cid = f"flask-{uuid.uuid4()}"
    seed(client, cid, "hello flask")
    got = client.post("/api/history", json={"conversation_id": cid},
                      headers={"makers-conversation-id": cid})
    assert got.status_code == 200
    body = got.json()
    assert body["messages"] == ["hello flask"]
    assert body["agent_conversation_id"] == cid
    assert body["run_id"] == got.headers["makers-run-id"]


def test_flask_error_is_500(client: httpx.Client, server: Server) -> None:
    got = client.get("/api/boom")
    assert got.status_code == 500
    assert "flask failure 7731" in server.log()


def test_fastapi_app_sees_the_path_below_its_prefix(client: httpx.Client) -> None:
    got = client.get("/fast/items/abc", headers={"makers-conversation-id": "fast-1"}).json()
    assert got == {"item_id": "abc", "path": "/fast/items/abc", "root_path": "/fast",
                   "agent_conversation_id": "fast-1", "has_checkpointer": False}
    assert client.get("/fast").json() == {"route": "root"}
    assert client.get("/fast/missing").status_code == 404


# --- limits ---------------------------------------------------------------------


def test_body_over_6_mb_is_413(client: httpx.Client) -> None:
    assert client.post("/upload", content=b"x" * SIX_MB).json() == {"received": SIX_MB}
    refused = client.post("/upload", content=b"x" * (SIX_MB + 1))
    assert refused.status_code == 413
    assert "limit of 6 MB" in refused.json()["error"]
    assert refused.json()["limit_bytes"] == SIX_MB
    framework = client.post("/api/history", content=b"x" * (SIX_MB + 1))
    assert framework.status_code == 413


def test_wall_clock_limit_is_504_and_the_thread_runs_on(client: httpx.Client) -> None:
    started = time.monotonic()
    got = client.get("/slow?seconds=3")
    elapsed = time.monotonic() - started
    assert got.status_code == 504
    assert "wall-clock limit of 1.5 s (the platform allows 120 s)" in got.json()["error"]
    assert SHORT_WALL_CLOCK_S <= elapsed < 3
    assert client.get("/slow?seconds=0.1").json() == {"slept": 0.1}  # the worker still serves
    deadline = time.monotonic() + 10
    while client.post("/slow").json().get("write") != "BrokenPipeError":
        assert time.monotonic() < deadline, "the late handler never hit its closed response"
        time.sleep(0.2)


def test_wall_clock_limit_cancels_an_asgi_app(client: httpx.Client) -> None:
    started = time.monotonic()
    got = client.get("/fast/sleep?seconds=5")
    assert got.status_code == 504
    assert time.monotonic() - started < 4


def test_streamed_response_is_cut_at_the_limit(client: httpx.Client, server: Server) -> None:
    started = time.monotonic()
    with client.stream("GET", "/flood") as response:
        body = b"".join(response.iter_bytes())
    assert time.monotonic() - started < 5
    assert body.startswith(b"tick\n")
    assert "the platform does not stream cloud functions" in server.log()
    assert "response cut off at the cloud-function wall-clock limit" in server.log()


def test_a_large_streamed_response_arrives_whole(client: httpx.Client) -> None:
    with client.stream("GET", "/flood?chunks=160") as response:  # 10 MB, 10x the write buffer
        size = sum(len(chunk) for chunk in response.iter_bytes())
    assert size == 160 * 65536


def test_no_function_limits_lifts_both(project: Path) -> None:
    with serving(
        project,
        project.parent / "unlimited.log",
        "--store",
        f"sqlite:///{project.parent / 'unlimited.db'}",
        "--no-function-limits",
        env={function_limits.WALL_CLOCK_ENV: "0.5"},
    ) as server, server.client() as client:
        got = client.post("/upload", content=b"x" * (SIX_MB + 1))
        assert got.json() == {"received": SIX_MB + 1}
        assert client.get("/slow?seconds=1").json() == {"slept": 1.0}
