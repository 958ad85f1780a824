"""The agent of the human-in-the-loop test, and the worker that resumes it.

The test process runs the agent until it asks for approval and parks the
``RunState`` in the conversation's ``state``. This script, started as a fresh
process (``python openai_worker.py URL CONVERSATION LOG``), opens the same
store, restores the run with ``RunState.from_string``, approves every pending
call, finishes the run offline with a ``ScriptedModel``, and prints a JSON
report on stdout. It imports nothing from the test suite, only the installed
packages, so it sees exactly what a freshly started instance would.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, Model, RunConfig, Runner, RunState, function_tool
from agents.testing import ScriptedModel, assistant_message

import makers_store

RUN_CONFIG = RunConfig(tracing_disabled=True)
FINAL_TEXT = "The email to bob is on its way."


def make_agent(model: Model, log_path: str) -> Agent[Any]:
    """An agent whose one tool needs approval and leaves a line in ``log_path``
    each time it really runs (so a test can count executions)."""

    @function_tool(needs_approval=True)
    def send_email(to: str) -> str:
        """Send an email to someone."""
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{to}\n")
        return f"sent to {to}"

    return Agent(
        name="mailer", instructions="Send what you are asked to.", model=model, tools=[send_email]
    )


async def resume(url: str, conversation_id: str, log_path: str) -> dict[str, Any]:
    model = ScriptedModel([[assistant_message(FINAL_TEXT, item_id="msg_final")]])
    agent = make_agent(model, log_path)
    async with makers_store.open_store(url) as store:
        bound = store.bind(conversation_id)
        parked = await bound.state.get("run_state")
        state = await RunState.from_string(agent, parked)
        pending = state.get_interruptions()
        for item in pending:
            state.approve(item)
        result = await Runner.run(
            agent, state, session=store.openai_session(conversation_id), run_config=RUN_CONFIG
        )
        await bound.state.delete("run_state")
        model.assert_complete()
        return {
            "approved": [item.tool_name for item in pending],
            "final_output": result.final_output,
            "model_input": [call.input for call in model.calls],
        }


if __name__ == "__main__":
    report = asyncio.run(resume(*sys.argv[1:4]))
    print(json.dumps(report, default=str))
