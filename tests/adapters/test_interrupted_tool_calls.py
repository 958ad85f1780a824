"""An OpenAI Agents SDK session whose run was interrupted between a tool call
and its output keeps working (issue 33, item 5): ``get_items`` answers the
call as interrupted and leaves out outputs without their call, in what it
returns only; ``strict=True`` raises. A real ``Runner.run`` stopped at a tool
call (a tool that needs approval, never given) is followed by a turn that
succeeds against a fake Chat Completions server that refuses, as the real API
does, a tool call without its result. A real Claude CLI run stopped inside a
Bash call resumes from the store's transcript, which the store returns as
stored: the CLI answers the call itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI, BadRequestError

import makers_store
from makers_store import InvalidHistoryError
from makers_store.lifecycle.tool_pairing import INTERRUPTED_RESULT
from tests.serve.fake_model import FakeModel, fake_model
from tests.serve.fake_tool_model import _ToolHandler

RUN = RunConfig(tracing_disabled=True)


def function_call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "weather", "arguments": "{}"}


def output(call_id: str, text: str = "sunny") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def interrupted(call_id: str) -> dict[str, Any]:
    return output(call_id, INTERRUPTED_RESULT)


async def test_get_items_answers_interrupted_calls_and_drops_orphan_outputs(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"  # the log-once memory is the process's
    user = {"role": "user", "content": "weather?"}
    async with makers_store.open_store(url) as store:
        session = store.openai_session(sid)
        stored = [user, function_call("c1"), function_call("c2"), output("c2"), output("ghost")]
        await session.add_items(stored)
        before = [m.to_dict() for m in await store.get_messages(sid)]
        with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
            for _ in range(2):
                items = await session.get_items()
                assert items == [
                    user, function_call("c1"), interrupted("c1"), function_call("c2"), output("c2")
                ]  # fmt: skip
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 2, said  # once each, however often read
        assert any("orphan-session-call" in s and "'c1'" in s and sid in s for s in said)
        assert any("orphan-session-output" in s and "'ghost'" in s for s in said)
        assert [m.to_dict() for m in await store.get_messages(sid)] == before
        with pytest.raises(InvalidHistoryError, match="orphan-session-call"):
            await store.openai_session(sid, strict=True).get_items()
        # a limit that cuts a call off from its output is the cut's, not an orphan
        await session.clear_session()
        await session.add_items([user, function_call("c3"), output("c3"), user])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="makers_store.history_guard"):
            assert await store.openai_session(sid, strict=True).get_items(limit=2) == [user]
        assert not caplog.records


def chat_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the real Chat Completions API says about a history whose tool
    calls and results do not pair, or None."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") == "tool":
            return (
                "Invalid parameter: messages with role 'tool' must be a response to a "
                "preceeding message with 'tool_calls'."
            )
        wanted = {call["id"] for call in message.get("tool_calls") or []}
        while index < len(messages) and messages[index].get("role") == "tool":
            wanted.discard(messages[index].get("tool_call_id"))
            index += 1
        if wanted:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(wanted))}"
            )
    return None


class _ValidatingToolHandler(_ToolHandler):
    def _chat_completions(self, body: dict[str, Any]) -> None:
        problem = chat_problem(body.get("messages") or [])
        if problem is not None:
            error = {"message": problem, "type": "invalid_request_error", "param": "messages"}
            self._json(400, {"error": {**error, "code": None}})
            return
        super()._chat_completions(body)


@function_tool(needs_approval=True)
async def weather(city: str) -> str:
    """The weather in ``city``; every call waits for a person's approval."""
    return f"sunny in {city}"


async def test_a_run_stopped_at_a_tool_call_does_not_break_the_next_turn(url: str) -> None:
    sid = f"chat-{uuid.uuid4().hex[:8]}"
    with fake_model(_ValidatingToolHandler) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="fake", max_retries=0)
        try:
            await _stopped_then_next_turn(url, sid, server, client)
        finally:
            await client.close()


async def _stopped_then_next_turn(
    url: str, sid: str, server: FakeModel, client: AsyncOpenAI
) -> None:
    model = OpenAIChatCompletionsModel(model="fake", openai_client=client)
    agent = Agent(name="a", model=model, tools=[weather])
    async with makers_store.open_store(url) as store:
        session = store.openai_session(sid)
        first = await Runner.run(
            agent, 'call: weather {"city": "SZ"}', session=session, run_config=RUN
        )
        assert first.interruptions  # stopped at the call, waiting for an approval never given
        stored = [m.content for m in await store.get_messages(sid)]
        assert [item.get("type") for item in stored] == [None, "function_call"]
        # the server refuses the history as stored, as the real API does
        call_id = stored[1]["call_id"]
        raw = [
            {"role": "user", "content": stored[0]["content"]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "weather", "arguments": stored[1]["arguments"]}}]},
            {"role": "user", "content": "hello again"},
        ]  # fmt: skip
        with pytest.raises(BadRequestError, match="did not have response messages"):
            await client.chat.completions.create(model="fake", messages=raw)  # type: ignore[arg-type]
        with pytest.raises(InvalidHistoryError):
            await Runner.run(
                agent, "hello again", session=store.openai_session(sid, strict=True),
                run_config=RUN,
            )  # fmt: skip
        second = await Runner.run(agent, "hello again", session=session, run_config=RUN)
        assert second.final_output == 'turns=2 first=call: weather {"city": "SZ"} last=hello again'
        sent = server.requests[-1]["body"]["messages"]
        assert sent[2] == {
            "role": "tool",
            "tool_call_id": call_id,
            "content": INTERRUPTED_RESULT,
        }
        # stored unchanged but for the second turn's items; the doctor repairs it for good
        assert [m.content for m in await store.get_messages(sid)][:2] == stored
        assert [r.repaired async for r in store.admin.repair_history(sid)] == [True]
        third = await Runner.run(
            agent, "and now?", session=store.openai_session(sid, strict=True), run_config=RUN
        )
        assert third.final_output.endswith("last=and now?")
        assert json.dumps(server.requests[-1]["body"]["messages"]).count(INTERRUPTED_RESULT) == 1


# --- the Claude Agent SDK: the CLI answers the call itself ----------------------


def anthropic_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the real Messages API says when a turn's tool_use blocks are not
    answered by the very next user turn's tool_result blocks, or None."""
    uses: set[str] = set()
    for message in messages:
        blocks = message["content"] if isinstance(message["content"], list) else []
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if uses - results:
            return (
                "messages: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(sorted(uses - results))}"
            )
        if results - uses:
            return "messages: unexpected `tool_use_id` found in `tool_result` blocks"
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    return None


#: The call the fake model makes on the first request of a session: a long
#: Bash command, during which the test stops the run.
SLOW_CALL = {"type": "tool_use", "id": "toolu_slow1", "name": "Bash", "input": {}}
SLOW_COMMAND = {"command": "python3 -c 'import time; time.sleep(120)'", "description": "wait"}


class _ValidatingClaudeHandler(_ToolHandler):
    def _anthropic_messages(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        problem = anthropic_problem(messages)
        if problem is not None:
            error = {"type": "invalid_request_error", "message": problem}
            self._json(400, {"type": "error", "error": error})
            return
        if "slow please" not in json.dumps(messages) or any(
            m["role"] == "assistant" for m in messages
        ):
            super()._anthropic_messages(body)
            return
        self._start_stream()
        usage = {"input_tokens": 1, "output_tokens": 1}
        message = {
            "id": "msg_slow",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        delta = {"type": "input_json_delta", "partial_json": json.dumps(SLOW_COMMAND)}
        stop = {"stop_reason": "tool_use", "stop_sequence": None}
        for event, data in [
            ("message_start", {"message": message}),
            ("content_block_start", {"index": 0, "content_block": SLOW_CALL}),
            ("content_block_delta", {"index": 0, "delta": delta}),
            ("content_block_stop", {"index": 0}),
            ("message_delta", {"delta": stop, "usage": {"output_tokens": 1}}),
            ("message_stop", {}),
        ]:
            self._frame({"type": event, **data}, event)


async def test_a_claude_run_stopped_in_a_tool_resumes_from_the_store(tmp_path: Path) -> None:
    """The Claude session load returns the transcript as stored: the CLI that
    resumes from it answers an unanswered tool_use itself before calling the
    model, so the store adds nothing (two answers would break the turn)."""
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from claude_agent_sdk import project_key_for_directory as project_key

    cwd = tmp_path / "project"
    cwd.mkdir()
    with fake_model(_ValidatingClaudeHandler) as server:
        env = {
            "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "sk-fake",
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        }
        async with makers_store.open_store(f"sqlite:///{tmp_path}/store.db") as store:
            sessions = store.claude_session_store()
            sid = await store.claude_session_binding("chat")
            key = {"project_key": project_key(cwd), "session_id": sid}
            options: dict[str, Any] = {
                "cwd": str(cwd), "env": env, "session_store": sessions, "model": "claude-e2e",
                "max_turns": 3, "permission_mode": "bypassPermissions", "allowed_tools": ["Bash"],
            }  # fmt: skip

            async def first_turn() -> None:
                prompt = ClaudeAgentOptions(session_id=sid, **options)
                async for _ in query(prompt="slow please", options=prompt):
                    pass

            run = asyncio.ensure_future(first_turn())
            for _ in range(300):  # until the model made the call, then stop the run in it
                if server.requests or run.done():
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.5)  # the CLI starts the command
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            stored = await sessions.load(key) or []
            contents = [json.dumps(e["message"]["content"]) for e in stored if "message" in e]
            assert any("toolu_slow1" in c and "tool_use" in c for c in contents)
            assert not any("tool_result" in c for c in contents)  # the call has no result

            resumed = ClaudeAgentOptions(resume=sid, **options)
            got = [m async for m in query(prompt="hello again", options=resumed)]
            assert isinstance(got[-1], ResultMessage) and not got[-1].is_error
            assert (got[-1].result or "").endswith("last=hello again")
            sent = server.requests[-1]["body"]["messages"]
            assert anthropic_problem(sent) is None
            answered = [
                b for m in sent if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_slow1"
            ]  # fmt: skip
            assert len(answered) == 1  # by the CLI, once
