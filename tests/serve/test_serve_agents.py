"""``makers-store serve`` on one instance: the agents runtime over real HTTP."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import makers_store

from .harness import Server, serving, sse_events, write_project
from .projects import SHAPES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store") / "serve.db"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_path: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("shapes")
    project = write_project(root / "project", SHAPES)
    ignored = root / "ignored.db"
    with serving(
        project,
        root / "serve.log",
        "--store",
        f"sqlite:///{store_path}",
        global_args=("--store", f"sqlite:///{ignored}"),
        env={"C": "from environ"},
    ) as running:
        yield running
    assert not ignored.exists()  # serve's own --store wins over the global one


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        yield opened


def post(client: httpx.Client, path: str, body: Any = None, cid: str | None = None,
         **kwargs: Any) -> httpx.Response:
    headers = {"makers-conversation-id": cid} if cid else {}
    return client.post(path, json=body if body is not None else {}, headers=headers, **kwargs)


def shape(client: httpx.Client, kind: str) -> httpx.Response:
    return post(client, "/shape", {"kind": kind}, cid="shapes")


# --- return shapes ----------------------------------------------------------


def test_dict_list_str_bytes_none(client: httpx.Client) -> None:
    got = shape(client, "dict")
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/json"
    assert got.json() == {"kind": "dict", "conversation_id": "shapes"}
    assert shape(client, "list").json() == [1, "two", {"three": 3}]
    text = shape(client, "str")
    assert (text.status_code, text.text) == (200, "plain text")
    assert text.headers["content-type"].startswith("text/plain")
    raw = shape(client, "bytes")
    assert raw.content == b"\x00\x01raw"
    assert raw.headers["content-type"] == "application/octet-stream"
    empty = shape(client, "none")
    assert (empty.status_code, empty.content) == (204, b"")


def test_tuples_and_envelope(client: httpx.Client) -> None:
    created = shape(client, "tuple")
    assert (created.status_code, created.json()) == (201, {"created": True})
    accepted = shape(client, "tuple3")
    assert (accepted.status_code, accepted.text, accepted.headers["x-extra"]) == (
        202, "accepted", "yes"
    )
    teapot = shape(client, "envelope")
    assert (teapot.status_code, teapot.json(), teapot.headers["x-tea"]) == (
        418, {"teapot": True}, "1"
    )


def test_store_objects_encode_as_dicts(client: httpx.Client) -> None:
    got = post(client, "/shape", {"kind": "messages"}, cid=f"objects-{uuid.uuid4()}").json()
    assert [(m["role"], m["content"]) for m in got] == [("user", "hello")]
    assert got[0]["message_id"].startswith("msg_")


def read_sse(response: httpx.Response) -> list[tuple[str | None, str]]:
    return list(sse_events(response.iter_lines()))


@pytest.mark.parametrize("kind", ["generator", "stream_response", "stream_sse"])
def test_streams_are_server_sent_events(client: httpx.Client, kind: str) -> None:
    with client.stream("POST", "/shape", json={"kind": kind}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        assert "content-length" not in response.headers
        events = read_sse(response)
    expected = {
        "generator": [(None, '{"n": 1}'), ("word", "two"), (None, "three")],
        "stream_response": [(None, '{"n": 1}'), (None, '{"n": 2}')],
        "stream_sse": [(None, json.dumps({"n": n})) for n in range(3)],
    }[kind]
    assert events == expected
    if kind == "stream_response":
        assert response.headers["x-stream"] == "yes"


def test_async_generator_and_sync_handlers(client: httpx.Client) -> None:
    with client.stream("POST", "/asyncgen") as response:
        events = read_sse(response)
        run_id = response.headers["makers-run-id"]
    assert [json.loads(data) for _, data in events] == [
        {"n": n, "run_id": run_id} for n in range(3)
    ]
    got = post(client, "/sync_handler", cid="sync-1")
    assert got.json() == {"sync": True, "conversation_id": "sync-1"}


def test_results_that_cannot_be_sent_are_500(client: httpx.Client) -> None:
    bad = shape(client, "bad_envelope")
    assert bad.status_code == 500
    assert "status_code" in bad.json()["error"]
    unencodable = shape(client, "unencodable")
    assert unencodable.status_code == 500
    assert "JSON" in unencodable.json()["error"]


# --- the first frame arrives before the handler finishes -----------------------------


def test_sse_frames_are_flushed_as_produced(client: httpx.Client) -> None:
    cid = f"gate-{uuid.uuid4()}"
    with client.stream("POST", "/gate", headers={"makers-conversation-id": cid}) as response:
        events = sse_events(response.iter_lines())
        # The handler cannot finish until /release is called, which we only do
        # after the first frame has arrived: a buffered stream would hang here.
        assert json.loads(next(events)[1]) == {"step": "first"}
        assert post(client, "/release", cid=cid).json() == {"released": True}
        assert json.loads(next(events)[1]) == {"step": "second"}


# --- identity headers --------------------------------------------------------------


def test_conversation_header_is_context_and_echoed(client: httpx.Client) -> None:
    first = post(client, "/whoami", {"x": 1}, cid="conv-A", params={"q": "1"})
    second = post(client, "/whoami", {}, cid="conv-A")
    assert first.status_code == 200
    body = first.json()
    assert body["conversation_id"] == "conv-A"
    assert body["query"] == {"q": "1"}
    assert body["body"] == {"x": 1}
    assert body["method"] == "POST"
    assert body["headers"]["makers-conversation-id"] == "conv-A"
    assert all(key == key.lower() for key in body["headers"])
    assert not [key for key in body["headers"] if key.startswith("makers-internal")]
    for response in (first, second):
        assert response.headers["makers-conversation-id"] == "conv-A"
        assert response.headers["makers-run-id"] == response.json()["run_id"]
    assert first.headers["makers-run-id"] != second.headers["makers-run-id"]
    assert first.headers["makers-run-id"].startswith("run_")


def test_missing_conversation_header_gives_an_empty_id(client: httpx.Client) -> None:
    # Changed deliberately (gap row 9): the platform gives "" and no header, not a new UUID.
    response = client.post("/whoami", json={})
    assert response.json()["conversation_id"] == ""
    assert "makers-conversation-id" not in response.headers
    assert response.headers["makers-run-id"] == response.json()["run_id"]


def test_unicode_conversation_id_round_trips(client: httpx.Client) -> None:
    cid = "会话 ../ 100%"
    response = client.post(
        "/whoami", json={}, headers=[(b"makers-conversation-id", cid.encode("utf-8"))]
    )
    assert response.json()["conversation_id"] == cid
    raw = dict(response.headers.raw)[b"makers-conversation-id"]
    assert raw.decode("utf-8") == cid


def test_identity_headers_on_errors_and_functions(client: httpx.Client) -> None:
    for response in (
        client.get("/nowhere", headers={"makers-conversation-id": "c-err"}),
        client.get("/api/items/9", headers={"makers-conversation-id": "c-err"}),
        post(client, "/fail", cid="c-err"),
    ):
        assert response.headers["makers-conversation-id"] == "c-err"
        assert response.headers["makers-run-id"].startswith("run_")
        assert response.headers["makers-instance"] == "1"


# --- ctx fields ----------------------------------------------------------------------------


def test_env_precedence_and_no_internal_leak(client: httpx.Client) -> None:
    assert post(client, "/envcheck").json() == {
        "A": "from_env",  # .env
        "B": "from_local",  # .env.local beats .env
        "C": "from environ",  # the environment beats both
        "os_A": "from_env",
        "internal": [],
    }


def test_env_is_a_plain_dict_and_kv_is_real(client: httpx.Client) -> None:
    # Changed deliberately (gap rows 11, 23): ctx.env is a dict copy, ctx.kv works locally.
    for _ in range(2):
        assert post(client, "/platform").json() == {"kv": "1", "before": None, "env_type": "dict"}


def test_tracer_spans_are_logged(client: httpx.Client, server: Server) -> None:
    run_id = post(client, "/traced").json()["run_id"]

    def span_line() -> str | None:
        # The front's own request line names the run too, and may be written
        # before the worker's span line is relayed: look for the span's line.
        lines = server.log().splitlines()
        return next((ln for ln in lines if f"run={run_id}" in ln and "span unit.step" in ln), None)

    deadline = time.monotonic() + 5
    while span_line() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    line = span_line()
    assert line is not None, server.log()
    assert '"answer": 42' in line
    assert "event=halfway" in line


def test_sub_routes_and_relative_imports(client: httpx.Client) -> None:
    assert post(client, "/chat", {"message": "hi"}).json() == {"reply": "YOU SAID: HI"}
    assert post(client, "/chat/stop").json() == {"route": "chat/stop"}
    assert post(client, "/chat/", {"message": "x"}).json() == {"reply": "YOU SAID: X"}
    for private in ("/chat/_helper", "/_shared"):
        assert post(client, private).status_code == 404


# --- bad input and faults -----------------------------------------------------------------


def test_handler_exception_is_500_and_server_keeps_serving(
    client: httpx.Client, server: Server
) -> None:
    failed = post(client, "/fail")
    assert failed.status_code == 500
    assert failed.json()["error"] == "ValueError: deliberate failure 7731"
    assert failed.json()["run_id"] == failed.headers["makers-run-id"]
    assert post(client, "/sync_handler").status_code == 200
    log = server.log()
    assert "Traceback (most recent call last)" in log
    assert "ValueError: deliberate failure 7731" in log


def test_non_json_body_is_400(client: httpx.Client) -> None:
    got = client.post("/whoami", content=b"{not json", headers={"content-type": "application/json"})
    assert got.status_code == 400
    assert "not valid JSON" in got.json()["error"]
    assert client.post("/whoami", content=b"").json()["body"] == {}


def test_unknown_route_is_404_listing_nothing(client: httpx.Client) -> None:
    got = client.post("/does/not/exist")
    assert got.status_code == 404
    assert got.json() == {"error": "not found", "method": "POST", "path": "/does/not/exist"}
    for internal in ("/__makers/health", "/__makers/abort"):
        response = client.post(internal)
        assert response.status_code == 404
        assert "instance" not in response.text
    guessed = client.get("/__makers/health", headers={"makers-internal-token": "guess"})
    assert guessed.status_code == 404


def test_get_on_an_agent_is_405(client: httpx.Client) -> None:
    got = client.get("/whoami")
    assert got.status_code == 405
    assert got.headers["allow"] == "POST"


def test_import_errors_are_500_naming_the_file(client: httpx.Client) -> None:
    broken = post(client, "/broken")
    assert broken.status_code == 500
    assert "agents/broken.py failed to import: SyntaxError" in broken.json()["error"]
    missing = post(client, "/nohandler")
    assert missing.status_code == 500
    assert "agents/nohandler.py defines no `handler`" in missing.json()["error"]


def test_overlong_conversation_id_is_400(client: httpx.Client) -> None:
    got = post(client, "/whoami", cid="x" * 257)
    assert got.status_code == 400
    assert "makers-conversation-id" in got.json()["error"]


# --- abort ------------------------------------------------------------------------------


def test_abort_from_a_second_request(client: httpx.Client, server: Server) -> None:
    cid = f"abort-{uuid.uuid4()}"
    result: dict[str, Any] = {}

    def wait() -> None:
        with server.client() as other:
            result["response"] = post(other, "/wait", cid=cid)

    thread = threading.Thread(target=wait)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not post(client, "/peek", cid=cid).json().get("waiting"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        stopped = post(client, "/stop", {"conversation_id": cid}, cid="the-stopper")
        assert stopped.json() == {"aborted": True}
    finally:
        thread.join(30)
    response = result["response"]
    assert response.json() == {"aborted": True}
    assert response.headers["makers-conversation-id"] == cid
    # nothing left to abort
    assert post(client, "/stop", {"conversation_id": cid}).json() == {"aborted": False}


def test_client_disconnect_sets_the_signal(client: httpx.Client) -> None:
    cid = f"gone-{uuid.uuid4()}"
    with client.stream("POST", "/linger", headers={"makers-conversation-id": cid}) as response:
        first = next(sse_events(response.iter_lines()))
        assert json.loads(first[1]) == {"step": "started"}
    # leaving the block closed the connection mid-stream
    deadline = time.monotonic() + 10
    while not post(client, "/peek", cid=cid).json().get("saw_signal"):
        assert time.monotonic() < deadline, "the handler never saw its signal set"
        time.sleep(0.05)


def test_client_disconnect_sets_the_signal_of_a_plain_handler(server: Server) -> None:
    cid = f"gone-plain-{uuid.uuid4()}"
    with server.client(timeout=1.0) as impatient, pytest.raises(httpx.ReadTimeout):
        post(impatient, "/wait", cid=cid)
    with server.client() as client:
        deadline = time.monotonic() + 10
        while not post(client, "/peek", cid=cid).json().get("wait_saw_signal"):
            assert time.monotonic() < deadline, "the handler never saw its signal set"
            time.sleep(0.05)


# --- cloud functions -------------------------------------------------------------------


def test_function_routes_and_params(client: httpx.Client) -> None:
    item = client.get("/api/items/42?x=1")
    assert item.json() == {"id": "42", "path": "/api/items/42?x=1"}
    assert client.get("/api/items/special").text == "static wins"
    assert client.get("/api/files/a/b/c.txt").json() == {"rest": "a/b/c.txt"}
    assert client.get("/api/files").json() == {"rest": ""}
    assert client.get("/api/items").status_code == 404


def test_function_post_body_headers_and_status(client: httpx.Client) -> None:
    got = client.post(
        "/api/echo",
        json={"a": [1, 2]},
        headers={"x-custom": "yes", "makers-conversation-id": "fn-1"},
    )
    assert got.status_code == 201
    assert got.json() == {"got": {"a": [1, 2]}, "header": "yes", "conversation_id": "fn-1"}
    refused = client.put("/api/echo")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "POST"


def test_function_store_is_the_same_data_as_agents(client: httpx.Client) -> None:
    cid = f"shared-{uuid.uuid4()}"
    post(client, "/shape", {"kind": "messages"}, cid=cid)
    got = client.get("/api/messages", headers={"makers-conversation-id": cid})
    assert got.json() == ["hello"]
    assert post(client, "/peek", cid=cid).json() == {"seen_by_function": 1}


def test_function_streaming_writes(client: httpx.Client) -> None:
    with client.stream("GET", "/api/ticker") as response:
        assert "content-length" not in response.headers
        events = read_sse(response)
    assert events == [(None, "0"), (None, "1"), (None, "2")]


def test_function_exception_is_500(client: httpx.Client, server: Server) -> None:
    got = client.get("/api/boom")
    assert got.status_code == 500
    assert got.json()["error"] == "RuntimeError: function failure 5521"
    assert got.json()["run_id"] == got.headers["makers-run-id"]
    assert "RuntimeError: function failure 5521" in server.log()
    silent = client.get("/api/silent")
    assert silent.status_code == 500
    assert silent.json()["error"] == "cloud-functions/api/silent.py wrote no response"
    # Changed twice: with gap row 5 a plain `def handler` was a helper module (404);
    # now a module-level `handler` is a context handler ("functions-2" helper,
    # platform_choices.CONTEXT_HANDLER_ENTRY), answered like a non-streaming agent.
    agent_style = client.get("/api/not_a_class")
    assert (agent_style.status_code, agent_style.text) == (200, "agents style, in the wrong folder")


def test_data_lands_in_the_serve_store(client: httpx.Client, store_path: Path) -> None:
    cid = f"persisted-{uuid.uuid4()}"
    post(client, "/shape", {"kind": "messages"}, cid=cid)
    with makers_store.open_sync_store(f"sqlite:///{store_path}") as store:
        assert [m.content for m in store.get_messages(conversation_id=cid)] == ["hello"]
