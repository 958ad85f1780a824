"""Multi-instance simulation, recycling, crashes, cross-instance abort, clean shutdown."""

from __future__ import annotations

import itertools
import json
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from .harness import Server, cli, pid_alive, serving, sse_events, write_project
from .projects import INSTANCES

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", INSTANCES)


def turn(client: httpx.Client, path: str, cid: str, message: str) -> httpx.Response:
    response = client.post(path, json={"message": message}, headers={"makers-conversation-id": cid})
    assert response.status_code == 200, response.text
    return response


def test_eight_instances_store_remembers_and_globals_break(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store, "--instances", "8") as server:
        assert len(server.worker_pids()) == 8
        with server.client() as client:
            served_by: list[str] = []
            for n in range(1, 101):
                response = turn(client, "/remember", "kept", f"turn {n}")
                served_by.append(response.headers["makers-instance"])
                assert response.json() == {
                    "turns": [f"turn {i}" for i in range(1, n + 1)],
                    "message_count": n,
                }
            assert set(served_by) == {str(i) for i in range(1, 9)}
            assert all(a != b for a, b in itertools.pairwise(served_by))

            remembered = []
            for n in range(1, 101):
                got = turn(client, "/forgetful", "lost", f"turn {n}").json()["turns"]
                remembered.append(len(got))
            # each instance only saw every eighth turn: the global "memory" is wrong
            # for every turn after the first
            assert remembered[0] == 1
            assert all(count < n for n, count in enumerate(remembered, start=1) if n > 1)
            assert max(remembered) <= 13


def test_recycle_every_replaces_workers(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--recycle-every", "3"
    ) as server, server.client() as client:
        instances, counts, pids = [], [], set()
        for n in range(1, 9):
            response = turn(client, "/forgetful", "c", f"turn {n}")
            instances.append(response.headers["makers-instance"])
            pids.add(response.headers["makers-instance-pid"])
            counts.append(len(response.json()["turns"]))
        assert instances == ["1", "1", "1", "2", "2", "2", "3", "3"]
        assert counts == [1, 2, 3, 1, 2, 3, 1, 2]
        assert len(pids) == 3
        kept = [len(turn(client, "/remember", "d", f"t{n}").json()["turns"]) for n in range(1, 5)]
        assert kept == [1, 2, 3, 4]
    assert "retires: served 3 requests (--recycle-every)" in server.log()


def test_crashed_worker_is_replaced_and_its_request_fails_cleanly(
    project: Path, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store) as server:
        with server.client() as client:
            before = client.post("/pid", json={}).json()["pid"]
            crashed = client.post("/crash", json={}, headers={"makers-conversation-id": "x"})
            assert crashed.status_code == 502
            assert crashed.json() == {
                "error": "instance 1 exited while handling this request",
                "instance": 1,
            }
            assert crashed.headers["makers-conversation-id"] == "x"
            assert crashed.headers["makers-run-id"].startswith("run_")
            after = client.post("/pid", json={})
            assert after.status_code == 200
            assert after.json()["pid"] != before
            assert after.headers["makers-instance"] == "2"

            with client.stream("POST", "/crash_stream") as response:
                events = list(sse_events(response.iter_lines()))
            assert json.loads(events[0][1]) == {"step": "before crash"}
            assert events[-1][0] == "error"
            assert "stopped in the middle of the response" in json.loads(events[-1][1])["error"]
            assert client.post("/pid", json={}).headers["makers-instance"] == "3"
        assert not pid_alive(before)
    assert "instance 1 (pid" in server.log() and "exited after" in server.log()


def test_abort_reaches_a_run_on_another_instance(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--instances", "2"
    ) as server, server.client() as client:
        cid = f"abort-{uuid.uuid4()}"
        with client.stream(
            "POST", "/slow_stream", headers={"makers-conversation-id": cid}
        ) as response:
            events = sse_events(response.iter_lines())
            assert json.loads(next(events)[1]) == {"step": "started"}
            running_on = response.headers["makers-instance"]
            # the same conversation's next request goes to the other instance
            stop = client.post(
                "/stop",
                json={"conversation_id": cid},
                headers={"makers-conversation-id": cid},
            )
            assert stop.headers["makers-instance"] != running_on
            assert stop.json() == {"aborted": True}
            assert json.loads(next(events)[1]) == {"step": "aborted"}


def test_memory_store_refuses_many_instances(project: Path) -> None:
    result = cli("serve", str(project), "--store", "memory://", "--instances", "2", "--port", "0")
    assert result.returncode != 0
    assert "--instances 2" in result.stderr
    assert "memory://" in result.stderr


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_stops_everything(project: Path, tmp_path: Path, stop_signal: int) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store, "--instances", "2") as server:
        pids = server.worker_pids()
        assert len(pids) == 2
        # an open stream must not keep serve from stopping
        result: dict[str, Any] = {}

        def stream() -> None:
            try:
                with server.client() as client, client.stream("POST", "/slow_stream") as response:
                    for line in response.iter_lines():
                        result.setdefault("lines", []).append(line)
            except httpx.HTTPError as exc:
                result["error"] = exc

        thread = threading.Thread(target=stream)
        thread.start()
        deadline = time.monotonic() + 10
        while not result.get("lines") and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        assert server.stop(stop_signal) == 0
        assert time.monotonic() - started < 15
        thread.join(20)
    assert not any(pid_alive(pid) for pid in pids)
    assert server.log().rstrip().endswith("stopped")


def test_killed_front_takes_its_workers_along(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    server = Server(project, tmp_path / "serve.log", ("--store", store, "--instances", "2"), (), {})
    try:
        server.wait_ready()
        pids = server.worker_pids()
        assert len(pids) == 2
    finally:
        server.stop(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    server.assert_no_workers_left(within_s=0)
