"""TypeScript and JavaScript agents under ``makers-store serve``: real processes, real HTTP.

One server at ``--instances 3`` serves a project that mixes ``.ts``, ``.mjs``
and ``.py`` routes (:mod:`.node_projects`); every Node route runs in the Node
worker of the instance that takes it, with ``context.store`` served by the
same Python store.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .harness import Server, pid_alive, serving, sse_events, write_project
from .node_projects import NODE_LIFECYCLE, NODE_PROJECT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("node")
    project = write_project(root / "project", NODE_PROJECT)
    store = f"sqlite:///{root / 'store.db'}"
    with serving(project, root / "serve.log", "--store", store, "--instances", "3") as running:
        yield running
    node_pids = [int(pid) for pid in re.findall(r"node worker ready \(pid (\d+)", running.log())]
    assert len(node_pids) == 3, running.log()
    assert not [pid for pid in node_pids if pid_alive(pid)], "Node workers outlived serve"


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


def test_routes_are_listed_with_their_files(server: Server) -> None:
    log = server.log()
    assert re.search(r"POST\s+/notes\s+agents/notes\.ts", log)
    assert re.search(r"POST\s+/toolbox\s+agents/toolbox\.mjs", log)
    assert re.search(r"ANY\s+/api/ts-notes/\[cid\]\s+cloud-functions/api/ts-notes/\[cid\]\.ts "
                     r"\(onRequestGet\)", log)
    assert "cloud-functions/lib/format.ts" in log  # a helper: listed as not routed


def test_three_turns_remember_through_the_store_while_a_global_forgets(
    client: httpx.Client,
) -> None:
    cid = f"notes-{uuid.uuid4().hex[:8]}"
    answers = []
    for note in ("alpha", "beta", "gamma"):
        response = client.post("/notes", json={"note": note},
                               headers={"makers-conversation-id": cid})
        assert response.status_code == 200, response.text
        assert response.headers["makers-conversation-id"] == cid
        assert response.headers["makers-run-id"] == response.json()["run_id"]
        answers.append(response)
    assert [a.json()["notes"] for a in answers] == [
        ["alpha"], ["alpha", "beta"], ["alpha", "beta", "gamma"]
    ]
    # each turn landed on another instance, whose module-global counter had not seen
    # the earlier ones (the first test here to call /notes)
    assert len({a.headers["makers-instance"] for a in answers}) == 3
    assert [a.json()["turns"] for a in answers] == [1, 1, 1]


def test_a_python_cloud_function_reads_what_a_ts_agent_wrote(client: httpx.Client) -> None:
    cid = f"shared-{uuid.uuid4().hex[:8]}"
    for note in ("one", "two"):
        sent = client.post("/notes", json={"note": note}, headers={"makers-conversation-id": cid})
        assert sent.status_code == 200, sent.text
    python_view = client.get(f"/api/notes/{cid}")
    assert python_view.status_code == 200, python_view.text
    assert python_view.json() == {"notes": ["one", "two"], "messages": ["one", "two"]}
    wrong_method = client.post(f"/api/ts-notes/{cid}", json={})
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "GET"
    node_view = client.get(f"/api/ts-notes/{cid}", params={"q": "x"})
    assert node_view.status_code == 200, node_view.text
    assert node_view.json() == {
        "cid": cid, "contents": ["one", "two"], "hasCheckpointer": False, "query": "x"
    }


def test_sse_frames_arrive_one_by_one(client: httpx.Client) -> None:
    arrivals: list[tuple[float, str]] = []
    with client.stream("POST", "/countdown", json={"from": 3, "pause_ms": 400}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for _event, data in sse_events(response.iter_lines()):
            arrivals.append((time.monotonic(), data))
    assert [json.loads(data) for _, data in arrivals] == [
        {"n": 3}, {"n": 2}, {"n": 1}, {"done": True}
    ]
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(arrivals)]
    assert all(gap > 0.25 for gap in gaps), gaps  # not collected and sent at the end


def _trace(server: Server, run_id: str) -> dict[str, object]:
    path = server.project / ".makers-store" / "traces.jsonl"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
            record = json.loads(line)
            if record["run_id"] == run_id:
                return record  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"no trace record for {run_id}")


def test_stop_aborts_the_run_on_another_instance(server: Server, client: httpx.Client) -> None:
    cid = f"stream-{uuid.uuid4().hex[:8]}"
    frames: list[object] = []
    with client.stream("POST", "/countdown", json={"from": 200, "pause_ms": 100},
                       headers={"makers-conversation-id": cid}) as response:
        run_id = response.headers["makers-run-id"]
        events = sse_events(response.iter_lines())
        frames.append(json.loads(next(events)[1]))
        with server.client() as other:
            stopped = other.post("/stop", json={"conversation_id": cid})
        assert stopped.status_code == 200, stopped.text
        assert stopped.json() == {
            "status": "stopped", "aborted": True, "conversation_id": cid, "run_id": run_id
        }
        started = time.monotonic()
        frames += [json.loads(data) for _, data in events]
        assert time.monotonic() - started < 5
    assert frames[-1] == {"stopped": True}
    assert len(frames) < 50
    again = client.post("/stop", json={"conversation_id": cid}).json()
    assert again["aborted"] is False and again["run_id"] is None
    record = _trace(server, run_id)
    assert record["status"] == "aborted"
    assert record["attributes"] == {"from": 200}
    spans = record["spans"]
    assert isinstance(spans, list) and spans[0]["name"] == "countdown"
    assert spans[0]["attributes"] == {"from": 200, "aborted": True}


@pytest.mark.parametrize(
    ("method", "path", "without"),
    [("POST", "/whoami", None), ("GET", "/fn/whoami", None),
     ("POST", "/whoami_py", ""), ("GET", "/fn/whoami_py", "")],
    ids=["node-agent", "node-function", "python-agent", "python-function"],
)
def test_conversation_id_without_the_header_is_null_in_node_and_empty_in_python(
    client: httpx.Client, method: str, path: str, without: str | None,
) -> None:
    # Node templates read `context.conversation_id ?? body.conversation_id`; Python's is a str.
    bare = client.request(method, path, json={})
    assert bare.status_code == 200, bare.text
    expected_type = {None: "null", "": "str"}[without]
    assert bare.json() == {"id": without, "type": expected_type}
    given = client.request(method, path, json={}, headers={"makers-conversation-id": "who-1"})
    assert given.json() == {"id": "who-1", "type": "string" if without is None else "str"}


@pytest.mark.parametrize("case", ["unbound", "limit"])
def test_bad_input_gives_the_same_named_error_in_both_languages(
    client: httpx.Client, case: str
) -> None:
    headers = {} if case == "unbound" else {"makers-conversation-id": "errors"}
    node = client.post("/bad_ts", json={"case": case}, headers=headers)
    python = client.post("/bad_py", json={"case": case}, headers=headers)
    assert node.status_code == python.status_code == 500
    assert node.json()["error"] == python.json()["error"]
    assert node.json()["error"].startswith("MemoryValidationError: ")


def test_kv_tools_and_store_errors_in_javascript(server: Server, client: httpx.Client) -> None:
    cid = f"tools-{uuid.uuid4().hex[:8]}"
    response = client.post("/toolbox", json={}, headers={"makers-conversation-id": cid})
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["fromKv"] == {"hello": "kv"}
    assert data["keys"] == ["greeting"]
    assert data["written"]["path"] == "/notes/a.txt"
    assert data["read"]["content"] == "hi"
    assert data["kvError"].startswith("MemoryValidationError: kv.set: value must be a str")
    assert data["missing"] == "MemoryNotFoundError"
    assert data["toolNames"] == 14
    assert data["ran"] == {"stdout": "hi there\n", "stderr": "", "exitCode": 0}
    assert {"b.txt", "notes"} <= set(data["listed"])
    assert data["host"] == "PlatformOnlyError"
    workspaces = server.project / ".makers-store" / "workspaces"
    assert [p.read_text() for p in workspaces.glob("*/notes/a.txt")] == ["hi"]


def test_a_route_file_that_does_not_export_a_handler_answers_500(
    tmp_path: Path,
) -> None:
    project = write_project(tmp_path / "project", {
        "agents/empty.ts": "export const nothing = 1;\n",
        "agents/broken.ts": "export async function onRequest( {\n",
    })
    with serving(project, tmp_path / "serve.log", "--store", "memory://") as running:
        with running.client() as client:
            empty = client.post("/empty", json={})
            broken = client.post("/broken", json={})
        assert empty.status_code == 500
        assert "agents/empty.ts exports no onRequest" in empty.json()["error"]
        assert broken.status_code == 500
        assert "agents/broken.ts failed to import" in broken.json()["error"]
        assert "ERROR agents/broken.ts failed to import" in running.log()


def test_recycle_reload_crash_app_and_preflight(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", NODE_LIFECYCLE)
    with serving(project, tmp_path / "serve.log", "--store", f"sqlite:///{tmp_path / 's.db'}",
                 "--recycle-every", "2", "--reload") as running, running.client() as client:
        counts = [client.post("/counter", json={}).json()["served"] for _ in range(4)]
        assert counts == [1, 2, 1, 2]  # a fresh Node worker with each fresh instance

        preflight = client.options("/counter")
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "*"

        app = client.delete("/app/users/7", params={"x": "1"})
        assert app.status_code == 200, app.text
        assert app.json() == {"method": "DELETE", "url": "/users/7?x=1"}
        assert client.get("/koa/a/b").text == "koa saw /a/b"

        slow = client.post("/slow", json={})
        assert slow.status_code == 200 and slow.json()["aborted"] is True
        assert 900 <= slow.json()["after_ms"] < 4000
        assert _trace(running, slow.headers["makers-run-id"])["status"] == "timeout"

        crashed = client.post("/crash", json={})
        assert crashed.status_code == 502, crashed.text
        assert "the Node worker stopped while handling this request" in crashed.json()["error"]
        deadline = time.monotonic() + 20  # the instance stops; a fresh one takes its place
        while (after := client.post("/counter", json={})).status_code != 200:
            assert time.monotonic() < deadline, running.log()
            time.sleep(0.2)
        assert after.headers["makers-instance-pid"] != crashed.headers["makers-instance-pid"]

        source = project / "agents" / "counter.ts"
        source.write_text(source.read_text().replace("version: 1", "version: 2"))
        deadline = time.monotonic() + 30
        while client.post("/counter", json={}).json()["version"] != 2:
            assert time.monotonic() < deadline, running.log()
            time.sleep(0.3)
        # --recycle-every 2 may start a fresh instance on the new source before
        # the reload watcher reports the change: wait for its report as well
        while "changed: agents/counter.ts" not in running.log():
            assert time.monotonic() < deadline, running.log()
            time.sleep(0.3)
    log = running.log()
    assert "the Node worker (pid" in log and "exited with code 3" in log
    assert "changed: agents/counter.ts; restarting the instances" in log


def test_the_docs_typescript_example_runs(tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "serve-node.md"
    blocks = re.findall(r"```ts\n(// (\S+\.ts)\s.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert [path for _, path in blocks] == ["agents/notes.ts"]
    project = write_project(tmp_path / "project", {path: text for text, path in blocks})
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store, "--instances", "2") as running:
        with running.client() as client:
            headers = {"makers-conversation-id": "readme"}
            client.post("/notes", json={"note": "milk"}, headers=headers)
            got = client.post("/notes", json={"note": "eggs"}, headers=headers)
    assert got.json() == {"conversation_id": "readme", "notes": ["milk", "eggs"]}


def test_a_stream_that_fails_ends_like_a_python_one(server: Server, client: httpx.Client) -> None:
    ends = {}
    for path in ("/fails", "/fails_py"):
        with client.stream("POST", path, json={}) as response:
            ends[path] = (response.headers["makers-run-id"],
                          list(sse_events(response.iter_lines())))
    for _run_id, frames in ends.values():
        assert [(event, json.loads(data)) for event, data in frames] == [
            (None, {"step": 1}), ("error", {"error": "TypeError: the model went away"})
        ]
    assert _trace(server, ends["/fails"][0])["status"] == "error"


@pytest.mark.parametrize(("stream", "stop"), [("/countdown", "/stop_py"),
                                              ("/countdown_py", "/stop")])
def test_stop_works_across_languages(
    server: Server, client: httpx.Client, stream: str, stop: str
) -> None:
    cid = f"cross-{uuid.uuid4().hex[:8]}"
    with client.stream("POST", stream, json={"from": 200, "pause_ms": 100},
                       headers={"makers-conversation-id": cid}) as response:
        run_id = response.headers["makers-run-id"]
        events = sse_events(response.iter_lines())
        next(events)
        with server.client() as other:
            stopped = other.post(stop, json={"conversation_id": cid}).json()
        assert stopped["aborted"] is True and stopped["run_id"] == run_id
        frames = [json.loads(data) for _, data in events]
    assert frames[-1] == {"stopped": True}
    assert _trace(server, run_id)["status"] == "aborted"


def test_a_client_that_leaves_aborts_the_node_run(server: Server) -> None:
    with server.client() as client, client.stream(
        "POST", "/countdown", json={"from": 200, "pause_ms": 100}
    ) as response:
        run_id = response.headers["makers-run-id"]
        next(sse_events(response.iter_lines()))
    record = _trace(server, run_id)
    assert record["status"] == "disconnected"
    spans = record["spans"]
    assert isinstance(spans, list) and spans[0]["attributes"]["aborted"] is True


def test_a_node_worker_never_outlives_its_instance(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", {
        "agents/leaky.mjs": """
            export async function onRequest() {
              Promise.reject(new Error('nobody awaits this'));  // logged, not fatal
              return Response.json({ pid: process.pid });
            }
        """,
    })
    with serving(project, tmp_path / "serve.log", "--store", "memory://") as running:
        with running.client() as client:
            first = client.post("/leaky", json={})
            second = client.post("/leaky", json={})
        assert first.json() == second.json()  # the same Node worker, still serving
        node_pid = first.json()["pid"]
        (python_pid,) = running.worker_pids()
        os.kill(python_pid, signal.SIGKILL)  # no cleanup code runs in the Python worker
        deadline = time.monotonic() + 10
        while pid_alive(node_pid):
            assert time.monotonic() < deadline, "the Node worker outlived its Python worker"
            time.sleep(0.1)
    assert "nobody awaits this" in running.log()


def test_stop_on_the_same_instance_as_the_stream(tmp_path: Path) -> None:
    files = {path: NODE_PROJECT[path] for path in ("agents/countdown.ts", "agents/stop.ts")}
    project = write_project(tmp_path / "project", files)
    with serving(project, tmp_path / "serve.log", "--store", "memory://") as running, \
            running.client() as client:
        with client.stream("POST", "/countdown", json={"from": 200, "pause_ms": 100},
                           headers={"makers-conversation-id": "one"}) as response:
            events = sse_events(response.iter_lines())
            next(events)
            started = time.monotonic()
            with running.client() as other:  # the Node thread that streams is the one asking
                stopped = other.post("/stop", json={"conversation_id": "one"})
            assert time.monotonic() - started < 2
            assert stopped.json()["aborted"] is True
            assert stopped.headers["makers-instance"] == response.headers["makers-instance"]
            assert [json.loads(data) for _, data in events][-1] == {"stopped": True}
