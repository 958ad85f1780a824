"""Each Node framework family, served at ``--instances 3`` over real HTTP.

LangGraph.js, DeepAgents (JS) and OpenAI Agents JS with human-in-the-loop
(projects in :mod:`.node_framework_projects`, written in the call styles of
the platform's Node templates) against the fake gateway of
:mod:`.fake_tool_model`, which echoes what the model was sent and plays a
tool call when asked (``call: <tool> <arguments>``). One server per family:

- three turns land on three different instances and the third is answered
  from all three user turns: memory comes from the store, not the process;
- a stop POSTed without the conversation header (as the templates' frontends
  send it) stops a slow stream on whichever instance runs it, answering
  ``aborted: true`` with that run's id; a second stop finds nothing running;
- the history cloud function (``context.request.body`` or
  ``await context.request.json()``) reads the turns back through
  ``context.agent.store.getMessages`` with the ids the client gave them;
- and what each family adds: LangGraph.js runs a platform tool and deletes
  the thread (``deleteThread``); DeepAgents keeps a ``/memories/`` file in
  ``langgraphStore`` that another conversation reads; OpenAI Agents JS stops
  for approval, keeps the ``RunState`` in ``store.state``, and another
  instance approves or rejects it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from makers_store.emulator.runtime.tools import Workspace
from tests.node.harness import PROJECT, npm_ci

from .fake_model import SLOW_CHUNK_INTERVAL_S, SLOW_CHUNKS, FakeModel, user_texts
from .fake_tool_model import fake_tool_model
from .harness import Server, serving, sse_events, stop_mid_stream, write_project
from .node_framework_projects import FAMILIES

pytestmark = pytest.mark.slow

TURNS = ("alpha", "bravo", "charlie")
USER = "user-7"


@dataclass
class Served:
    family: str
    server: Server
    model: FakeModel


@dataclass
class Turn:
    frames: list[tuple[str, dict[str, Any]]]
    headers: httpx.Headers

    @property
    def instance(self) -> str:
        return self.headers["makers-instance"]

    def reply(self) -> str:
        assert not [data for event, data in self.frames if event == "error"], self.frames
        assert self.frames[-1] == ("done", {"stopped": False}), self.frames
        return "".join(data["delta"] for event, data in self.frames if event == "text_delta")


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Served]:
    family: str = request.param
    npm_ci(PROJECT)
    root = tmp_path_factory.mktemp(f"node-{family}")
    project = write_project(root / "project", FAMILIES[family])
    (project / "node_modules").symlink_to(PROJECT / "node_modules")
    with fake_tool_model() as model:
        env = {"AI_GATEWAY_BASE_URL": model.base_url, "AI_GATEWAY_API_KEY": "sk-node-e2e"}
        args = ("--store", f"sqlite:///{root / 'store.db'}", "--instances", "3")
        with serving(project, root / "serve.log", *args, env=env) as server:
            yield Served(family, server, model)


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    with served.server.client(timeout=120) as opened:
        yield opened


def chat(client: httpx.Client, cid: str, body: dict[str, Any]) -> Turn:
    """One turn: the decoded SSE frames (event, data) and the headers."""
    frames = []
    headers = {"makers-conversation-id": cid}
    with client.stream("POST", "/chat", json={"user_id": USER, **body},
                       headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event, data in sse_events(response.iter_lines()):
            frames.append((event or "", json.loads(data)))
    # the first frame names the run: context.run_id is the makers-run-id header
    assert frames[0] == ("start", {"run_id": response.headers["makers-run-id"]}), frames
    return Turn(frames, response.headers)


def say(client: httpx.Client, cid: str, message: str, message_id: str) -> Turn:
    return chat(client, cid, {"message": message, "message_id": message_id})


def history(client: httpx.Client, cid: str) -> list[tuple[str, str, str]]:
    """(id, role, text) of each stored message, from the history cloud function."""
    response = client.post("/history", json={"conversation_id": cid, "user_id": USER})
    assert response.status_code == 200, response.text
    assert response.json()["conversation_id"] == cid
    return [(m["id"], m["role"], m["text"]) for m in response.json()["messages"]]


def sent_for(model: FakeModel, last_user_text: str) -> dict[str, Any]:
    """The latest request the model got whose last user turn starts with that text."""
    for request in reversed(model.requests):
        texts = user_texts(request["body"].get("messages") or [])
        if texts and texts[-1].startswith(last_user_text):
            return dict(request["body"])
    raise AssertionError(f"the model was never sent {last_user_text!r}")


def offered(sent: dict[str, Any]) -> set[str]:
    """The names of the tools a request offered the model."""
    return {tool["function"]["name"] for tool in sent.get("tools") or []}


def text_of(content: Any) -> str:
    """A Chat Completions content: a string or a list of text parts."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def echoed(number: int, first: str, last: str) -> str:
    return f"turns={number} first={first} last={last}"


def test_three_turns_remember_on_three_instances(served: Served, client: httpx.Client) -> None:
    cid = f"{served.family}-memory"
    instances = []
    for number, text in enumerate(TURNS, start=1):
        turn = say(client, cid, text, f"{cid}-{number}")
        assert turn.reply() == echoed(number, TURNS[0], text)
        instances.append(turn.instance)
    assert len(set(instances)) == 3, instances
    # the cloud function reads the turns back under the client's ids
    expected = []
    for number, text in enumerate(TURNS, start=1):
        expected += [(f"{cid}-{number}", "user", text),
                     (f"{cid}-{number}-reply", "assistant", echoed(number, TURNS[0], text))]
    assert history(client, cid) == expected


def test_a_stop_without_the_header_ends_a_slow_stream(
    served: Served, client: httpx.Client
) -> None:
    cid = f"{served.family}-stop"
    body = {"message": "slow one", "message_id": f"{cid}-1", "user_id": USER}
    run = stop_mid_stream(served.server, client, cid=cid, body=body, stop_path="/chat/stop")
    assert run.stop.status_code == 200, run.stop.text
    assert run.stop.json() == {"status": "aborting", "conversation_id": cid,
                               "run_id": run.run_id, "aborted": True}
    assert run.frames[-1] == ("done", {"stopped": True}), run.frames[-3:]
    # the slow answer takes SLOW_CHUNKS * interval; the run ended well before
    assert run.seconds_after_stop < SLOW_CHUNKS * SLOW_CHUNK_INTERVAL_S / 2, run
    idle = client.post("/chat/stop", json={"conversation_id": cid}).json()
    assert idle == {"status": "idle", "conversation_id": cid, "run_id": None, "aborted": False}
    # the user's message was kept; the stopped reply was not
    assert history(client, cid) == [(f"{cid}-1", "user", "slow one")]


def test_what_the_family_adds(served: Served, client: httpx.Client) -> None:
    {"langgraph": _langgraph_tool_and_delete, "deepagents": _deepagents_memories,
     "openai-agents": _openai_approval}[served.family](served, client)


def _langgraph_tool_and_delete(served: Served, client: httpx.Client) -> None:
    cid = "langgraph-tools"
    first = say(client, cid, "alpha", f"{cid}-1")
    assert first.reply() == echoed(1, "alpha", "alpha")
    # toLangChainTools(tool): the model's files_write runs in the conversation's workspace
    wrote = say(client, cid, 'call: files_write {"path": "/notes/lg.txt", "content": "graph"}',
                f"{cid}-2")
    result = {"path": "/notes/lg.txt", "bytesWritten": 5}
    assert json.loads(wrote.reply().removeprefix("tool said: ")) == result
    workspace = Workspace.for_conversation(served.server.project, cid, "unused").root
    assert (workspace / "notes" / "lg.txt").read_text(encoding="utf-8") == "graph"
    # the next turn (another instance) is given the whole thread, tool call and result too
    assert say(client, cid, "golf", f"{cid}-3").reply() == echoed(3, "alpha", "golf")
    sent = sent_for(served.model, "golf")
    assert {"files_write", "files_read", "commands", "web_search"} <= offered(sent)
    calls = [call["function"]["name"] for m in sent["messages"] for call in m.get("tool_calls", [])]
    assert calls == ["files_write"]
    results = [m["content"] for m in sent["messages"] if m["role"] == "tool"]
    assert [json.loads(text_of(content)) for content in results] == [result]
    # delete: deleteThread and the messages; the next turn starts a new thread
    deleted = client.post("/chat", json={"action": "delete", "user_id": USER},
                          headers={"makers-conversation-id": cid})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"deleted": True, "conversation_id": cid}
    assert history(client, cid) == []
    assert say(client, cid, "delta", f"{cid}-4").reply() == echoed(1, "delta", "delta")
    assert history(client, cid) == [(f"{cid}-4", "user", "delta"),
                                     (f"{cid}-4-reply", "assistant", echoed(1, "delta", "delta"))]


def _deepagents_memories(served: Served, client: httpx.Client) -> None:
    note = "# Plan\\nread the sources"
    wrote = say(client, "deep-writer",
                f'call: write_file {{"file_path": "/memories/plan.md", "content": "{note}"}}',
                "deep-writer-1")
    assert wrote.reply() == "tool said: Successfully wrote to '/memories/plan.md'"
    # the platform's tools as the template picks them: web_search only, beside DeepAgents' own
    tools = offered(sent_for(served.model, "call: write_file"))
    assert "web_search" in tools and "write_file" in tools and "files_write" not in tools
    # another conversation (another thread) of the same user reads it from langgraphStore,
    # twice: on two instances, so at least once in another process than the writer's
    reads = [say(client, "deep-reader", 'call: read_file {"file_path": "/memories/plan.md"}',
                 f"deep-reader-{number}") for number in (1, 2)]
    assert reads[0].instance != reads[1].instance
    for read in reads:
        assert read.reply().startswith("tool said: "), read.frames
        assert "# Plan" in read.reply() and "read the sources" in read.reply(), read.reply()
    # a file outside /memories/ is kept in its thread's state: another thread has none,
    # its own thread reads it on its next turn (on another instance)
    draft = say(client, "deep-writer", 'call: write_file {"file_path": "/draft.md", '
                '"content": "first draft"}', "deep-writer-2")
    assert draft.reply() == "tool said: Successfully wrote to '/draft.md'"
    missing = say(client, "deep-reader", 'call: read_file {"file_path": "/draft.md"}',
                  "deep-reader-3").reply()
    assert missing == "tool said: Error: File '/draft.md' not found", missing
    again = say(client, "deep-writer", 'call: read_file {"file_path": "/draft.md"}',
                "deep-writer-3")
    assert again.instance != draft.instance
    assert again.reply().startswith("tool said: ") and "first draft" in again.reply()


def _openai_approval(served: Served, client: httpx.Client) -> None:
    refund = 'call: issue_refund {"order": "A-1", "amount": 5}'
    for decision, answer in (("approve", "tool said: refunded 5 on A-1"),
                             ("reject", "tool said: Tool execution was not approved.")):
        cid = f"openai-{decision}"
        asked = say(client, cid, refund, f"{cid}-1")
        assert asked.reply() == ""
        assert offered(sent_for(served.model, refund)) == {"issue_refund"}
        assert ("approval_required", {"tools": [
            {"name": "issue_refund", "arguments": '{"order": "A-1", "amount": 5}'}]}
                ) in asked.frames
        # while the run waits, a new message is refused
        waiting = client.post("/chat", json={"message": "hello"},
                              headers={"makers-conversation-id": cid})
        assert waiting.status_code == 409, waiting.text
        # the next request, on another instance, restores the RunState and decides
        decided = chat(client, cid, {"action": decision, "message_id": f"{cid}-2"})
        assert decided.instance != asked.instance
        assert decided.reply() == answer
        # the run is finished: the conversation goes on from its whole history
        after = say(client, cid, "thanks", f"{cid}-3")
        assert after.reply() == echoed(2, refund, "thanks")
        assert history(client, cid) == [
            (f"{cid}-1", "user", refund), (f"{cid}-2-reply", "assistant", answer),
            (f"{cid}-3", "user", "thanks"), (f"{cid}-3-reply", "assistant", after.reply())]
    nothing = client.post("/chat", json={"action": "approve"},
                          headers={"makers-conversation-id": "openai-approve"})
    assert nothing.status_code == 409 and nothing.json() == {"error": "nothing awaits approval"}
