"""The official templates' ways of using ``ctx``, served at ``--instances 3`` (issue 11).

Each agent in :mod:`.template_style_projects` is our own code in one
template's call style; each test names the style it holds to. Rotation
sends each request of a conversation to the next instance, so anything
that must persist is read back from another process.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from makers_store.emulator.runtime.server import ServeOptions

from .fake_model import fake_model
from .harness import Server, cli, serving, sse_events, write_project
from .template_style_projects import TEMPLATE_STYLES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("template-styles")
    project = write_project(root / "project", TEMPLATE_STYLES)
    store = f"sqlite:///{root / 'store.db'}"
    with fake_model() as model:
        env = {
            "AI_GATEWAY_BASE_URL": model.base_url,
            "AI_GATEWAY_API_KEY": " sk-template ",
            "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1"),
        }
        args = ("--store", store, "--instances", "3")
        with serving(project, root / "serve.log", *args, env=env) as running:
            yield running


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(timeout=60) as opened:
        yield opened


def post(
    client: httpx.Client, path: str, body: Any = None, cid: str | None = None
) -> httpx.Response:
    headers = {"makers-conversation-id": cid} if cid else {}
    return client.post(path, json={} if body is None else body, headers=headers)


def eventually(check: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def trace_of(server: Server, run_id: str) -> dict[str, Any]:
    path = server.project / ".makers-store" / "traces.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        record: dict[str, Any] = json.loads(line)
        if record["run_id"] == run_id:
            return record
    raise AssertionError(f"no trace of {run_id}")


# --- store call styles -----------------------------------------------------------------


def test_gathered_read_and_positional_append_remember_across_instances(
    client: httpx.Client, server: Server
) -> None:
    cid = f"turns-{uuid.uuid4()}"
    instances, runs = set(), []
    for number, text in enumerate(("alpha", "bravo", "charlie"), start=1):
        got = post(client, "/chat", {"message": text}, cid)
        assert got.status_code == 200, got.text
        instances.add(got.headers["makers-instance"])
        earlier = [item["content"] for item in got.json()["prior"] if item["role"] == "user"]
        # gathered: the read may or may not already see this turn's append
        assert earlier in (
            ["alpha", "bravo", "charlie"][: number - 1],
            ["alpha", "bravo", "charlie"][:number],
        )
        assert got.json()["reply"].endswith(f": {text}")
        runs.append(got.json()["run_id"])
    assert len(instances) == 3
    history = post(client, "/history_dicts", {}, cid).json()
    assert history["count"] == 6  # no append lost or doubled by the concurrent read
    assert post(client, "/chat", {}, cid).status_code == 400  # the envelope, no message

    record = trace_of(server, runs[-1])
    assert record["attributes"] == {"agent.scenario": "template_turn", "chat.ok": True}
    spans = {span["name"]: span for span in record["spans"]}
    assert list(spans) == ["tools.build", "tool.commands", "llm.request.round_1"]
    assert spans["tools.build"]["attributes"] == {}
    assert all(span["duration_ms"] is not None for span in record["spans"])  # all ended
    assert spans["llm.request.round_1"]["attributes"]["llm.turn"] in (3, 4)
    # the template logger's lines reach serve's output with the instance prefix
    eventually(lambda: re.search(rf"\[instance \d\] \[chat\]\[[^]]+\] answered {cid}", server.log())
               is not None)


def test_a_template_passing_message_id_keeps_its_own_id(client: httpx.Client) -> None:
    # The template falls back to a plain append on TypeError (older runtimes);
    # the store takes the caller's id, so the first call succeeds.
    got = post(client, "/legacy_append", {}, f"legacy-{uuid.uuid4()}").json()
    assert got == {"path": "message_id accepted", "stored": "mine-1", "listed": ["mine-1"]}


def test_not_found_errors_say_not_found(client: httpx.Client) -> None:
    got = post(client, "/missing", {}, f"missing-{uuid.uuid4()}").json()
    assert got == {
        "delete_conversation": "ok",  # deleting what is not there is no error
        "update_conversation": "not found",
        "delete_message": "not found",
        "update_message": "not found",
    }


def test_list_conversations_through_getattr_with_cursors(client: httpx.Client) -> None:
    user = f"u-{uuid.uuid4()}"
    ids = [f"{user}-c{n}" for n in range(3)]
    assert post(client, "/conversations", {"op": "seed", "user_id": user, "ids": ids}).json() == {
        "seeded": 3
    }
    first = post(client, "/conversations", {"user_id": user}).json()
    assert [(i["id"], i["title"], i["count"]) for i in first["items"]] == [
        (ids[2], "title 2", 1), (ids[1], "title 1", 1)
    ]
    assert all(item["times_ok"] for item in first["items"])
    assert isinstance(first["next_cursor"], str)
    second = post(client, "/conversations", {"user_id": user, "after": first["next_cursor"]})
    assert [i["id"] for i in second.json()["items"]] == [ids[0]]
    assert second.json()["next_cursor"] is None
    back = second.json()["previous_cursor"]
    assert isinstance(back, str)
    again = post(client, "/conversations", {"user_id": user, "before": back}).json()
    assert [i["id"] for i in again["items"]] == [ids[2], ids[1]]


def test_state_holds_a_str_and_a_wrapped_value_across_instances(client: httpx.Client) -> None:
    cid = f"hitl-{uuid.uuid4()}"
    asked = {"raw": "approve?", "value": "approve?"}
    calls = [
        ({"op": "set", "key": "pending", "value": "approve?"}, asked),
        ({"op": "get", "key": "pending"}, asked),
        ({"op": "set", "key": "pending", "value": {"value": "edit"}},
         {"raw": {"value": "edit"}, "value": "edit"}),
        ({"op": "get", "key": "pending"}, {"raw": {"value": "edit"}, "value": "edit"}),
        ({"op": "delete", "key": "pending"}, {"raw": None, "value": None}),
        ({"op": "delete", "key": "pending"}, {"raw": None, "value": None}),  # idempotent
    ]
    instances = set()
    for body, expected in calls:
        got = post(client, "/hitl_state", body, cid)
        assert got.json() == expected, body
        instances.add(got.headers["makers-instance"])
    assert len(instances) == 3  # state persists, unlike kv
    refused = post(client, "/hitl_state", {"op": "get", "key": "pending"})
    assert refused.status_code == 400
    assert refused.json() == {"error": "conversation id header missing"}


def test_messages_to_dict_and_the_default_page_of_twenty(client: httpx.Client) -> None:
    cid = f"dicts-{uuid.uuid4()}"
    got = post(client, "/history_dicts", {"op": "seed"}, cid).json()
    assert got["count"] == 20  # get_messages(cid): limit 20, oldest first
    first, last = got["first"], got["last"]
    assert set(first) == {"message_id", "role", "content", "created_at", "metadata"}
    assert (first["role"], first["content"], first["metadata"]) == ("user", "m0", {"n": 0})
    assert (last["role"], last["content"]) == ("assistant", "m19")
    assert first["message_id"] < last["message_id"] and first["created_at"] <= last["created_at"]


# --- env ---------------------------------------------------------------------------------


def test_env_read_through_getattr_and_written_at_import(client: httpx.Client) -> None:
    answers = [post(client, "/env_probe").json() for _ in range(4)]
    for got in answers:
        assert got == {
            "key": "sk-template",  # stripped, as the templates do
            "base_url_same": True,  # os.environ at import holds what ctx.env holds
            "dotenv_in_ctx": "from-dotenv-file",
            "dotenv_in_os": "from-dotenv-file",
            "import_mark": "written-at-import",
            "seen_before": None,  # a handler's write to ctx.env does not reach the next request
        }


# --- signal, stop, kv, singletons ---------------------------------------------------------


def test_signal_wait_task_raced_with_pings_is_stopped(client: httpx.Client) -> None:
    cid = f"ping-{uuid.uuid4()}"
    seen: list[tuple[str | None, str]] = []
    stops: list[dict[str, Any]] = []
    first_word = threading.Event()
    with client.stream("POST", "/pinged", json={}, headers={"makers-conversation-id": cid}) as got:
        run_id = got.headers["makers-run-id"]

        def stop_after_first_word() -> None:
            assert first_word.wait(20)
            stops.append(client.post("/stop", json={"conversationId": cid}).json())

        stopper = threading.Thread(target=stop_after_first_word)
        stopper.start()
        started = time.monotonic()
        for event, data in sse_events(got.iter_lines()):
            seen.append((event, data))
            if event == "word":
                first_word.set()
        stopper.join(20)
    assert time.monotonic() - started < 10  # 100 slow words would take 50 s
    events = [event for event, _ in seen]
    assert events.index("ping") < events.index("word")  # pinged while the source was silent
    assert seen[-1] == ("cancelled", "[CANCELLED]")
    assert stops == [{"aborted": True, "conversationId": cid, "runId": run_id}]
    idle = client.post("/stop", json={"conversation_id": cid}).json()
    assert idle == {"aborted": False, "conversationId": cid, "runId": None}


def test_a_stream_that_catches_its_cancellation_sends_its_last_frame(
    client: httpx.Client, server: Server
) -> None:
    cid = f"stubborn-{uuid.uuid4()}"
    headers = {"makers-conversation-id": cid}
    with client.stream("POST", "/stubborn_stream", json={}, headers=headers) as got:
        run_id = got.headers["makers-run-id"]
        frames = sse_events(got.iter_lines())
        assert next(frames)[0] == "word"
        stopped = time.monotonic()
        assert client.post("/stop", json={"conversation_id": cid}).json()["aborted"] is True
        rest = list(frames)
    assert time.monotonic() - stopped < 8  # cancelled after the grace period
    assert rest[-1] == ("final", '{"cancelled": true}')
    assert trace_of(server, run_id)["status"] == "aborted"
    assert "ignored GeneratorExit" not in server.log()
    assert post(client, "/conflict").status_code == 409  # the instance serves on


def test_kv_captured_in_a_singleton_serves_later_requests(client: httpx.Client) -> None:
    saved = post(client, "/drafts", {"op": "save", "id": "d1", "text": "hello bob"})
    assert saved.json()["draft"] == {"text": "hello bob"}
    assert saved.json()["singleton_is_older"] is False  # this request built it
    home = saved.headers["makers-instance"]
    by_instance: dict[str, dict[str, Any]] = {}
    for _ in range(6):  # no header: round-robin, so each instance answers
        got = post(client, "/drafts", {"id": "d1"})
        by_instance.setdefault(got.headers["makers-instance"], got.json())
    assert by_instance[home]["draft"] == {"text": "hello bob"}
    assert by_instance[home]["index"] == ["d1"]
    assert by_instance[home]["singleton_is_older"] is True
    others = [v for k, v in by_instance.items() if k != home]
    assert len(others) == 2 and all(v["draft"] is None for v in others)  # per process


def test_graph_singleton_from_the_first_request_serves_other_conversations(
    client: httpx.Client,
) -> None:
    tag = uuid.uuid4().hex[:8]
    a, b = f"graph-a-{tag}", f"graph-b-{tag}"
    replies: dict[str, list[str]] = {a: [], b: []}
    borrowed = 0
    for _ in range(3):
        for cid in (a, b):
            got = post(client, "/graph_chat", {"message": "next"}, cid).json()
            replies[cid].append(got["reply"])
            borrowed += got["built_for"] != cid
    assert replies == {cid: [f"{cid}: {n} turns" for n in (1, 2, 3)] for cid in (a, b)}
    assert borrowed >= 3  # most turns ran on a graph compiled for another conversation
    forgotten = post(client, "/graph_chat", {"op": "forget"}, b).json()
    # delete_conversation removes the thread's checkpoints but keeps LangGraph Store items
    assert forgotten == {"messages_left": 0, "note": {"turns": 3}}
    assert post(client, "/graph_chat", {"message": "again"}, b).json()["reply"] == f"{b}: 1 turns"


# --- responses, sse, tracer ---------------------------------------------------------------


def test_utils_sse_bytes_through_stream_sse_from_a_plain_async_def(client: httpx.Client) -> None:
    with client.stream("POST", "/paused", json={}) as got:
        assert got.headers["content-type"].startswith("text/event-stream")
        raw = got.read()
    assert raw == (
        b'event: progress\ndata: {"stage": "review", "bytes": true}\n\n'
        b"event: paused\ndata: [PAUSED]\n\n"
        b"event: end\ndata: [DONE]\n\n"
    )


def test_status_code_envelope(client: httpx.Client) -> None:
    conflict = post(client, "/conflict")
    assert (conflict.status_code, conflict.json()) == (
        409, {"error": "draft already sent", "code": "SENT"}
    )
    busy = post(client, "/conflict", {"as_text": True})
    assert (busy.status_code, busy.text) == (503, "the model is busy")


def test_record_exception_is_absent_as_on_the_platform(
    client: httpx.Client, server: Server
) -> None:
    got = post(client, "/history_errors", {}, f"errors-{uuid.uuid4()}")
    assert got.status_code == 500
    assert got.json()["error"].startswith("AttributeError:")
    assert "record_exception" in got.json()["error"]
    record = trace_of(server, got.headers["makers-run-id"])
    assert record["status"] == "error"
    assert record["attributes"] == {"error.type": "MemoryValidationError"}


def test_a_stream_that_raises_ends_with_an_error_frame(client: httpx.Client) -> None:
    with client.stream("POST", "/explodes", json={}) as got:
        assert got.status_code == 200
        events = list(sse_events(got.iter_lines()))
    assert events == [
        ("progress", '{"step": 1}'),
        ("error", '{"error": "RuntimeError: exploded after one frame 3391"}'),
    ]


# --- tools, edgeone.json --------------------------------------------------------------------


def test_starter_style_generic_tools_round_trip(client: httpx.Client) -> None:
    got = post(client, "/tools_generic", {"text": "generic text"}, f"tools-{uuid.uuid4()}").json()
    assert len(got["names"]) == 14
    assert {"commands", "files_write", "files_read", "code_interpreter"} <= set(got["names"])
    assert got["styles"] == ["dict"]  # every callable takes one args dict
    assert set(got["write_required"]) == {"path", "content"}
    assert got["read"]["content"] == "generic text"
    assert "generic text" in json.dumps(got["ran"])


def test_template_edgeone_keys_are_accepted(server: Server) -> None:
    log = server.log()
    assert "framework generic (not set ('openai-sdk' is unknown))" in log
    assert "agents.timeout 300s" in log
    # runtime, scene, tags, slug, sandbox.timeout and the build command: ignored without a
    # word; outputDirectory is the frontend's (no dev command here) and is not built yet
    warnings = [line for line in log.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, warnings
    assert "edgeone.json outputDirectory 'dist' does not exist yet" in warnings[0], warnings
    assert "agents.framework 'openai-sdk'" in warnings[1], warnings


# --- DeepAgents --------------------------------------------------------------------------------


def deep_turn(client: httpx.Client, cid: str, text: str) -> tuple[str, str]:
    headers = {"makers-conversation-id": cid}
    with client.stream("POST", "/deep", json={"message": text}, headers=headers) as got:
        assert got.status_code == 200, got.read()
        frames = [(event, json.loads(data)) for event, data in sse_events(got.iter_lines())]
        instance = got.headers["makers-instance"]
    assert frames[-1][0] == "done", frames
    deltas = "".join(data["delta"] for event, data in frames if event == "text_delta")
    assert deltas == frames[-1][1]["reply"]
    return deltas, instance


def test_deep_agent_on_the_store_remembers_across_instances(client: httpx.Client) -> None:
    cid = f"deep-{uuid.uuid4()}"
    first, on_first = deep_turn(client, cid, "alpha")
    second, on_second = deep_turn(client, cid, "bravo")
    assert first == "turns=1 first=alpha last=alpha"
    assert second == "turns=2 first=alpha last=bravo"  # the checkpointer carried turn one
    assert on_first != on_second


# --- the dev server's port -----------------------------------------------------------------------


def test_default_port_is_the_platforms_8088(tmp_path: Path) -> None:
    assert ServeOptions(project_dir=tmp_path).port == 8088
    shown = cli("serve", "--help", env={"COLUMNS": "200"})
    assert shown.returncode == 0 and "8088" in shown.stdout
