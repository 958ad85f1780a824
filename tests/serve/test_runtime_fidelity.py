"""The platform's runtime behaviour under ``makers-store serve --instances 3`` (issue 11).

Agents in :mod:`.fidelity_projects` are our own code in the templates' call style.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from .fidelity_projects import FIDELITY, TIMEOUT
from .harness import Server, cli, serving, sse_events, write_project

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("fidelity")
    project = write_project(root / "project", FIDELITY)
    store = f"sqlite:///{root / 'store.db'}"
    with serving(project, root / "serve.log", "--store", store, "--instances", "3") as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


def eventually(check: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


# --- abort_active_run ----------------------------------------------------------------


def test_stop_without_header_aborts_a_stream_on_another_instance(
    client: httpx.Client, server: Server
) -> None:
    cid = f"chat-{uuid.uuid4()}"
    headers = {"makers-conversation-id": cid}
    with client.stream("POST", "/chat", json={"message": "go"}, headers=headers) as response:
        assert response.headers["connection"] == "keep-alive"
        events = sse_events(response.iter_lines())
        assert next(events)[0] == "delta"
        run_id = response.headers["makers-run-id"]
        running_on = response.headers["makers-instance"]
        stopped_on = set()
        stop = None
        for _ in range(3):  # no header: round-robin, so at least one lands elsewhere
            answer = client.post("/chat/stop", json={"conversation_id": cid})
            stopped_on.add(answer.headers["makers-instance"])
            if stop is None:
                stop = answer.json()
        assert stopped_on - {running_on}
        assert stop == {
            "aborted": True,
            "conversation_id": cid,
            "run_id": run_id,
            "truthy": True,
            "class": "AbortActiveRunResult",
            "same_alias": True,
            "result": {"aborted": True, "conversation_id": cid, "run_id": run_id},
        }
        rest = list(events)
    assert rest[-1][0] == "done"
    done = json.loads(rest[-1][1])
    assert done["aborted"] is True and done["sent"] < 100
    history = client.post("/history", json={"conversation_id": cid}).json()
    assert history[-1] == {"role": "assistant", "content": f"{done['sent']} words",
                           "metadata": {"aborted": True}}


def test_abort_ends_a_stream_that_ignores_its_signal(client: httpx.Client) -> None:
    cid = f"deaf-{uuid.uuid4()}"
    with client.stream("POST", "/deaf", json={}, headers={"makers-conversation-id": cid}) as got:
        frames = sse_events(got.iter_lines())
        next(frames)
        run_id = got.headers["makers-run-id"]
        stopped = time.monotonic()
        assert client.post("/chat/stop", json={"conversation_id": cid}).json()["aborted"]
        rest = list(frames)  # ends: cancelled after the grace period
        assert time.monotonic() - stopped < 6
    assert len(rest) < 200
    metrics = client.get("/agent-metrics").json()["runs"]
    record = next(r for r in metrics if r["run_id"] == run_id)
    assert record["status"] == "aborted"
    assert record["attributes"] == {"ignores": "signal"}


def test_two_runs_stopping_each_other_neither_waits(server: Server) -> None:
    """Each instance is blocked in its synchronous abort call at the same time:
    the front answers from its registry, so neither waits for the other."""
    cid = f"mutual-{uuid.uuid4()}"
    at = time.time() + 2.0
    finals: list[dict[str, object]] = []
    instances: list[str] = []

    def run() -> None:
        with server.client() as own, own.stream(
            "POST", "/mutual", json={"at": at}, headers={"makers-conversation-id": cid}
        ) as response:
            instances.append(response.headers["makers-instance"])
            frames = [json.loads(data) for _, data in sse_events(response.iter_lines())]
        finals.append(frames[-1])

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.3)  # the second request of the conversation goes to the next instance
    for thread in threads:
        thread.join(30)
    assert len(set(instances)) == 2, instances
    assert len(finals) == 2, finals
    for final in finals:
        assert final["aborted"] is True and final["signalled"] is True, finals
        assert isinstance(final["took"], float) and final["took"] < 1.0, finals


def test_idle_stop_answers_aborted_false(client: httpx.Client) -> None:
    got = client.post("/chat/stop", json={"conversationId": "nothing-running"}).json()
    assert got["aborted"] is False
    assert got["run_id"] is None
    assert got["truthy"] is True  # the object is truthy: read .aborted
    assert got["result"] == {
        "aborted": False, "conversation_id": "nothing-running", "run_id": None
    }


def test_stop_with_the_same_header_spares_its_own_run(client: httpx.Client) -> None:
    cid = f"self-{uuid.uuid4()}"
    got = client.post(
        "/chat/stop", json={"conversation_id": cid}, headers={"makers-conversation-id": cid}
    ).json()
    assert got["aborted"] is False


# --- tracer ------------------------------------------------------------------------------


def test_tracer_goes_to_the_log_traces_jsonl_and_agent_metrics(
    client: httpx.Client, server: Server
) -> None:
    got = client.post("/traced", json={}, headers={"makers-conversation-id": "traced"})
    run_id = got.json()["run_id"]
    assert got.json()["has_record_exception"] is False
    eventually(lambda: f"trace route=/traced run={run_id}" in server.log())
    line = next(
        line for line in server.log().splitlines() if f"trace route=/traced run={run_id}" in line
    )
    assert '"user": "u-1"' in line and "load.context" in line and "status=ok" in line

    path = server.project / ".makers-store" / "traces.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    record = next(r for r in records if r["run_id"] == run_id)
    assert record["version"] == 1
    assert record["conversation_id"] == "traced"
    assert record["route"] == "/traced"
    assert record["file"] == "agents/traced.py"
    assert record["status"] == "ok"
    assert record["attributes"] == {"user": "u-1", "plan": "free", "step_count": 2}
    spans = {span["name"]: span for span in record["spans"]}
    assert list(spans) == ["load.context", "model.call", "post.process"]
    assert spans["load.context"]["attributes"] == {"source": "store", "items": 3}
    assert spans["model.call"]["attributes"] == {"model": "echo"}
    assert all(span["duration_ms"] is not None for span in record["spans"])

    metrics = client.get("/agent-metrics", params={"limit": 500})
    assert metrics.status_code == 200
    listed = metrics.json()["runs"]
    assert listed[0]["run_id"] == run_id  # newest first; written before the response
    assert listed[0] == record


# --- kv, env, conversation id ---------------------------------------------------------


def test_kv_is_per_route_per_instance_and_text_only(client: httpx.Client) -> None:
    cid = "kv"  # rotation: each request of one conversation goes to the next instance
    headers = {"makers-conversation-id": cid}
    body = {"op": "set", "key": "greeting", "value": "hi"}
    stored = client.post("/kvdemo", json=body, headers=headers)
    assert "MemoryValidationError" in stored.json()["refused"]
    assert "must be a str" in stored.json()["refused"]
    assert stored.json()["keys"] == ["greeting", "greeting.json"]
    reads = [client.post("/kvdemo", json={"key": "greeting"}, headers=headers) for _ in range(3)]
    by_instance = {r.headers["makers-instance"]: r.json() for r in reads}
    same = by_instance[stored.headers["makers-instance"]]
    assert same["text"] == "hi" and same["json"] == {"v": "hi"} and same["missing"] is None
    others = [v for k, v in by_instance.items() if k != stored.headers["makers-instance"]]
    assert others and all(v["text"] is None for v in others)  # temporary, per process
    assert client.post("/other_kv", json={}, headers=headers).json() == {"keys": []}


def test_no_conversation_header(client: httpx.Client) -> None:
    responses = [client.post("/whoami", json={}) for _ in range(3)]
    for response in responses:
        assert response.json()["conversation_id"] == ""
        assert response.json()["state"] == "MemoryValidationError"  # unbound store
        assert "makers-conversation-id" not in response.headers
    assert len({r.headers["makers-instance"] for r in responses}) == 3  # round-robin


def test_non_utf8_conversation_header_is_400(client: httpx.Client) -> None:
    got = client.post("/whoami", json={}, headers=[(b"makers-conversation-id", b"caf\xe9")])
    assert got.status_code == 400
    assert "not UTF-8" in got.json()["error"]


# --- built-in routes, bodies ----------------------------------------------------------


def test_health(client: httpx.Client) -> None:
    assert client.get("/health").json() == {"status": "ok", "route_count": len(FIDELITY)}


def test_bodies_empty_bad_surrogate_and_deep(client: httpx.Client, server: Server) -> None:
    assert client.post("/whoami", content=b"").status_code == 200
    eventually(lambda: "the platform refuses it" in server.log())
    for raw in (b"{bad", b'{"a": "\\ud800"}', b"[" * 50_000):
        got = client.post("/whoami", content=raw, headers={"content-type": "application/json"})
        assert got.status_code == 400, (raw[:20], got.text)
        assert "not valid JSON" in got.json()["error"]


# --- sse, GraphInterrupt, import failures, _platform ------------------------------------


def test_sse_strings_unchanged_and_unencodable_data_falls_back_to_str(
    client: httpx.Client, server: Server
) -> None:
    with client.stream("POST", "/fallback", json={}) as response:
        events = list(sse_events(response.iter_lines()))
    assert events[0] == ("end", "[DONE]")
    assert events[1][1].startswith("{'bad': <")  # str() of the dict: a Python repr
    assert events[2] == ("again", "opaque-value-9")
    eventually(lambda: "Opaque data is not JSON-encodable" in server.log())
    assert server.log().count("Opaque data is not JSON-encodable") == 1


def test_graph_interrupt_is_not_an_error(client: httpx.Client) -> None:
    with client.stream("POST", "/interrupted_stream", json={}) as response:
        events = list(sse_events(response.iter_lines()))
    assert events == [(None, '{"step": "asking"}')]
    plain = client.post("/interrupted", json={})
    assert plain.status_code == 200
    assert plain.json()["interrupted"] is True
    assert plain.json()["interrupts"] == [{"question": "approve?"}]


def test_import_failures_and_plain_handlers_are_reported_at_start(
    client: httpx.Client, server: Server
) -> None:
    log = server.log()
    assert "ERROR agents/broken_import.py failed to import" in log
    assert "a_module_that_does_not_exist_4471" in log
    assert "agents/plain.py: `handler` is not `async def`" in log
    failed = client.post("/broken_import", json={})
    assert failed.status_code == 500
    assert "agents/broken_import.py failed to import" in failed.json()["error"]
    assert client.post("/plain", json={}).json() == {"plain": True}


def test_platform_memory_errors_import(client: httpx.Client) -> None:
    assert client.post("/errors", json={}).json() == {
        "caught": "MemoryValidationError", "not_found_is_key_error": True
    }


# --- edgeone.json, --sticky -------------------------------------------------------------


def test_edgeone_timeout_and_framework(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", TIMEOUT)
    (project / "edgeone.json").write_text(
        json.dumps({"agents": {"framework": "langgraph", "timeout": 1, "runtime": "python",
                               "scene": ["x"]}, "buildCommand": "npm run build"}),
        encoding="utf-8",
    )
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store) as server:
        with server.client() as client:
            started = time.monotonic()
            with client.stream("POST", "/slow", json={}) as response:
                steps = [json.loads(d)["step"] for _, d in sse_events(response.iter_lines())]
            assert steps == ["started", "signalled"]
            assert time.monotonic() - started < 5
            stubborn = client.post("/stubborn", json={})
            assert stubborn.status_code == 504
            tools = client.post("/tools_info", json={}).json()
            assert tools["framework"] == "langgraph"  # edgeone.json -> ctx.tools' shape
            assert tools["same"] is True  # built once per request, on first use
        log = server.log()
    assert "framework langgraph (edgeone.json agents.framework)" in log
    assert "agents.timeout 1s" in log
    assert "agents/slow.py reached agents.timeout (1s)" in log
    traces = (project / ".makers-store" / "traces.jsonl").read_text(encoding="utf-8")
    statuses = {r["file"]: r["status"] for r in map(json.loads, traces.splitlines())}
    assert statuses == {"agents/slow.py": "timeout", "agents/stubborn.py": "timeout",
                        "agents/tools_info.py": "ok"}


def test_edgeone_broken_and_unknown_framework(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", TIMEOUT)
    (project / "edgeone.json").write_text('{\n  "agents": {"framework": }\n}\n', encoding="utf-8")
    result = cli("serve", str(project), "--port", "0")
    assert result.returncode != 0
    assert "edgeone.json:2:" in result.stderr and "not valid JSON" in result.stderr

    (project / "edgeone.json").write_text('{"agents": {"framework": "basic"}}', encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store) as server:
        pass
    log = server.log()
    assert "agents.framework 'basic' is not one the platform knows" in log
    assert "framework generic (not set ('basic' is unknown))" in log


def test_sticky_keeps_a_conversation_on_one_instance_and_no_tools(tmp_path: Path) -> None:
    files = {"agents/whoami.py": FIDELITY["agents/whoami.py"],
             "agents/tools_info.py": TIMEOUT["agents/tools_info.py"]}
    project = write_project(tmp_path / "project", files)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--instances", "3", "--sticky",
        "--no-tools",
    ) as server, server.client() as client:
        tools = client.post("/tools_info", json={}).json()
        assert tools["sandbox"] == "ToolsDisabledError"  # --no-tools reaches the workers
        assert tools["framework"] is None  # no edgeone.json
        seen: dict[str, set[str]] = {}
        for turn in range(4):
            for cid in ("a", "b", "c"):
                got = client.post("/whoami", json={"turn": turn},
                                  headers={"makers-conversation-id": cid})
                seen.setdefault(cid, set()).add(got.headers["makers-instance"])
        assert all(len(instances) == 1 for instances in seen.values())
        assert len(set().union(*seen.values())) == 3  # new conversations still spread
    assert "sticky conversations" in server.log()
