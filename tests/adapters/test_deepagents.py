"""DeepAgents end to end on one SQLite file: a scripted tool-calling model
writes a file through a ``StoreBackend`` (so it lands in
``store.langgraph_store``), then calls a tool that needs human approval; the
run stops at the interrupt. A *new* store object over the same file and a new
agent resume it with the reviewer's decision, and the tool runs exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import StoreBackend
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.types import Command

import makers_store
from makers_store import ContextStore

NAMESPACE = ("filesystem",)
THREAD = {"configurable": {"thread_id": "agent-thread-1"}}


class ScriptedChatModel(BaseChatModel):
    """Answers each model call with the next scripted message; tools bound
    to it change nothing (the script already names the calls)."""

    script: list[AIMessage]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self.script[self.calls]
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=message)])


def tool_call(name: str, args: dict[str, Any], call_id: str) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


DEPLOYS: list[str] = []


def deploy(target: str) -> str:
    """Deploy the notes to ``target`` (needs a human's approval)."""
    DEPLOYS.append(target)
    return f"deployed to {target}"


def make_agent(store: ContextStore, script: list[AIMessage]) -> Any:
    return create_deep_agent(
        model=ScriptedChatModel(script=script),
        tools=[deploy],
        checkpointer=store.langgraph_checkpointer,
        store=store.langgraph_store,
        backend=StoreBackend(namespace=lambda _runtime: NAMESPACE),
        interrupt_on={"deploy": True},
    )


FIRST_RUN = [
    AIMessage(
        content="",
        tool_calls=[
            tool_call("write_file", {"file_path": "/notes.md", "content": "ship it"}, "c1")
        ],
    ),
    AIMessage(content="", tool_calls=[tool_call("deploy", {"target": "prod"}, "c2")]),
]
AFTER_RESUME = [AIMessage(content="Deployed the notes.")]


def interrupts_of(result: dict[str, Any]) -> list[Any]:
    return list(result.get("__interrupt__", []))


async def test_interrupt_restart_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    DEPLOYS.clear()

    async with makers_store.open_store(url) as first:
        agent = make_agent(first, FIRST_RUN)
        result = await agent.ainvoke({"messages": [("user", "write notes, then deploy")]}, THREAD)
        (pending,) = interrupts_of(result)
        assert pending.value["action_requests"][0]["name"] == "deploy"
        assert DEPLOYS == []
        first.langgraph_store.close()

    async with makers_store.open_store(url) as second:  # a new process, in effect
        agent = make_agent(second, AFTER_RESUME)
        state = await agent.aget_state(THREAD)
        assert state.next  # still waiting for the reviewer
        result = await agent.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
        assert not interrupts_of(result)
        assert result["messages"][-1].content == "Deployed the notes."
        assert DEPLOYS == ["prod"]

        lg = second.langgraph_store
        item = await lg.aget(NAMESPACE, "/notes.md")
        assert item is not None and item.value["content"] == "ship it"
        assert [i.key for i in await lg.asearch(NAMESPACE)] == ["/notes.md"]
        tool_results = {m.tool_call_id: m.content for m in result["messages"] if m.type == "tool"}
        assert tool_results["c2"] == "deployed to prod"
        lg.close()


def test_sync_agent_uses_the_store_through_its_portal(tmp_path: Path) -> None:
    """The same flow with ``invoke``: StoreBackend then calls the store's
    synchronous methods, which run on the store's private loop thread."""
    url = f"sqlite:///{tmp_path}/agent.db"
    DEPLOYS.clear()
    store = makers_store.open_store(url)
    try:
        agent = make_agent(store, [*FIRST_RUN, *AFTER_RESUME])
        result = agent.invoke({"messages": [("user", "write notes, then deploy")]}, THREAD)
        assert len(interrupts_of(result)) == 1
        result = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
        assert DEPLOYS == ["prod"]
        item = store.langgraph_store.get(NAMESPACE, "/notes.md")
        assert item is not None and item.value["content"] == "ship it"
    finally:
        store.langgraph_store.close()
        asyncio.run(store.close())
