"""One small Makers project per framework family, written in the call styles
of the official Python templates (positional store calls, ``result.aborted``,
``ctx.tools.all()``, ``ctx.tracer.set_attributes``, a stop route that reads
the target from the body, a history cloud function on the synchronous
store). The end-to-end tests serve each at ``--instances 3`` against the
fake gateway in :mod:`tests.serve.fake_model`.

Every project answers ``POST /chat`` (a stream of ``text_delta`` events and
a final ``done``), ``POST /chat/stop`` and ``GET /history``.
"""

from __future__ import annotations

import json

STOP = {
    "agents/chat/stop.py": '''
        async def handler(ctx):
            body = ctx.request.body if isinstance(ctx.request.body, dict) else {}
            target = body.get("conversation_id") or body.get("conversationId") or ""
            if not target:
                return {"status_code": 400, "body": {"error": "conversation_id is required"}}
            result = ctx.utils.abort_active_run(target)
            return {
                "status": "aborting" if result.aborted else "idle",
                "conversation_id": result.conversation_id or target,
                "run_id": getattr(result, "run_id", None),
                "aborted": result.aborted,
            }
    ''',
}

# What a history UI renders: user and assistant turns as text, one bubble per
# turn. OpenAI session items are grouped by the turn's run_id, as the
# platform's history views do.
HISTORY = {
    "cloud-functions/history/_render.py": '''
        def text_of(content):
            if isinstance(content, str):
                return content
            if isinstance(content, dict):
                return text_of(content.get("content"))
            if isinstance(content, list):
                return "".join(
                    block.get("text", "") for block in content if isinstance(block, dict)
                )
            return ""


        def bubbles(messages):
            out = []
            for message in messages:
                meta = message.metadata or {}
                if meta.get("agent_sdk_session") and meta.get("item_type", "message") != "message":
                    continue
                if message.role not in ("user", "assistant"):
                    continue
                text = text_of(message.content)
                turn = meta.get("run_id")
                if (
                    out and message.role == "assistant" and out[-1]["role"] == "assistant"
                    and turn and out[-1]["turn"] == turn
                ):
                    out[-1]["text"] += text
                    continue
                out.append({"role": message.role, "text": text, "turn": turn})
            return out
    ''',
    "cloud-functions/history/index.py": '''
        import json
        import os
        import sys
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import parse_qs, urlparse

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _render import bubbles


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = parse_qs(urlparse(self.path).query)
                cid = (query.get("conversation_id") or [""])[0]
                store = self.context.agent.store
                messages = store.get_messages(cid, limit=100, order="asc")
                body = json.dumps({"conversation_id": cid, "messages": bubbles(messages)})
                data = body.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
    ''',
}

_SSE_HELPER = '''
    import json


    def sse_event(event, data):
        return f"event: {event}\\ndata: {json.dumps(data, ensure_ascii=False)}\\n\\n"
'''

CHAT_COMPLETIONS = {
    **STOP,
    **HISTORY,
    "agents/_sse.py": _SSE_HELPER,
    "agents/chat/index.py": '''
        import json

        import httpx

        from .._sse import sse_event


        def tool_schemas(tools):
            schemas = []
            for tool in tools:
                name = getattr(tool, "name", None)
                params = getattr(tool, "parameters", None) or getattr(tool, "input_schema", None)
                if name:
                    schemas.append({"type": "function", "function": {
                        "name": name, "description": getattr(tool, "description", ""),
                        "parameters": params or {"type": "object", "properties": {}},
                    }})
            return schemas


        async def handler(ctx):
            cid = ctx.conversation_id
            body = ctx.request.body
            message = body.get("message") if isinstance(body, dict) else None
            ctx.tracer.set_attributes({"agent.scenario": "e2e_chat", "chat.conversation_id": cid})
            if not message:
                yield sse_event("error", {"message": "'message' is required"})
                yield sse_event("done", {})
                return
            span = ctx.tracer.start_span("session.load_and_save", {"session.conversation_id": cid})
            try:
                history = await ctx.store.get_messages(cid, limit=50, order="asc")
                await ctx.store.append_message(cid, "user", message)
                span.set_attributes({"session.history_count": len(history)})
            finally:
                span.end()
            messages = (
                [{"role": "system", "content": "You are a test agent."}]
                + ctx.store.to_openai_input(history)
                + [{"role": "user", "content": message}]
            )
            payload = {
                "model": ctx.env.get("AI_GATEWAY_MODEL") or "@makers/deepseek-v4-flash",
                "messages": messages, "stream": True, "tools": tool_schemas(ctx.tools.all()),
            }
            headers = {"Authorization": f"Bearer {ctx.env['AI_GATEWAY_API_KEY']}"}
            url = ctx.env["AI_GATEWAY_BASE_URL"].rstrip("/") + "/chat/completions"
            text, stopped = "", False
            llm = ctx.tracer.start_span("llm.request", {"llm.request.message_count": len(messages)})
            try:
                async with httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=10.0)) as client:
                    async with client.stream("POST", url, json=payload, headers=headers) as reply:
                        async for line in reply.aiter_lines():
                            if ctx.request.signal.is_set():
                                stopped = True
                                break
                            if not line.startswith("data: ") or line == "data: [DONE]":
                                continue
                            choice = json.loads(line[6:])["choices"][0]
                            delta = (choice.get("delta") or {}).get("content") or ""
                            if delta:
                                text += delta
                                yield sse_event("text_delta", {"delta": delta})
            except httpx.HTTPError as exc:
                ctx.tracer.set_attributes({"error.type": type(exc).__name__})
                yield sse_event("error", {"message": str(exc)})
            finally:
                llm.end()
            if text:
                await ctx.store.append_message(cid, "assistant", text)
            yield sse_event("done", {"stopped": stopped})
    ''',
}

OPENAI_AGENTS = {
    **STOP,
    **HISTORY,
    "edgeone.json": json.dumps({"agents": {"framework": "openai-agents-sdk", "timeout": 300}}),
    "agents/_sse.py": _SSE_HELPER,
    "agents/chat/index.py": '''
        from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
        from openai import AsyncOpenAI
        from openai.types.responses import ResponseTextDeltaEvent

        from .._sse import sse_event

        set_tracing_disabled(True)


        async def handler(ctx):
            cid = ctx.conversation_id
            body = ctx.request.body if isinstance(ctx.request.body, dict) else {}
            message = body.get("message") or ""
            ctx.tracer.set_attributes({"agent.framework": "openai-agents"})
            client = AsyncOpenAI(
                base_url=ctx.env["AI_GATEWAY_BASE_URL"], api_key=ctx.env["AI_GATEWAY_API_KEY"]
            )
            model = OpenAIChatCompletionsModel(
                model=ctx.env.get("AI_GATEWAY_MODEL") or "@makers/deepseek-v4-flash",
                openai_client=client,
            )
            agent = Agent(
                name="assistant", instructions="You are a test agent.", model=model,
                tools=ctx.tools.all(),
            )
            session = ctx.store.openai_session(cid)
            result = Runner.run_streamed(agent, message, session=session)
            stopped = False
            async for event in result.stream_events():
                if ctx.request.signal.is_set():
                    result.cancel()
                    stopped = True
                    break
                if event.type == "raw_response_event" and isinstance(
                    event.data, ResponseTextDeltaEvent
                ):
                    yield sse_event("text_delta", {"delta": event.data.delta})
            yield sse_event("done", {"stopped": stopped})
    ''',
}

LANGGRAPH = {
    **STOP,
    **HISTORY,
    "edgeone.json": json.dumps({"agents": {"framework": "langgraph", "timeout": 300}}),
    "agents/_sse.py": _SSE_HELPER,
    "agents/_lib/graph.py": '''
        import json

        import httpx
        from langchain_core.messages import AIMessage
        from langgraph.config import get_stream_writer
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode


        async def call_model(state, config):
            gateway = config["configurable"]["gateway"]
            messages = [
                {"role": "user" if m.type == "human" else "assistant", "content": m.content}
                for m in state["messages"]
            ]
            payload = {"model": gateway["model"], "messages": messages, "stream": True}
            headers = {"Authorization": f"Bearer {gateway['api_key']}"}
            writer = get_stream_writer()
            text = ""
            async with httpx.AsyncClient(timeout=300.0) as client:
                url = gateway["base_url"].rstrip("/") + "/chat/completions"
                async with client.stream("POST", url, json=payload, headers=headers) as reply:
                    async for line in reply.aiter_lines():
                        if not line.startswith("data: ") or line == "data: [DONE]":
                            continue
                        delta = json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                        if delta:
                            text += delta
                            writer({"event": "text_delta", "delta": delta})
            return {"messages": [AIMessage(content=text)]}


        def route(state):
            last = state["messages"][-1]
            return "tools" if getattr(last, "tool_calls", None) else END


        def build_graph(checkpointer, store, tools):
            graph = StateGraph(MessagesState)
            graph.add_node("model", call_model)
            graph.add_node("tools", ToolNode(tools))
            graph.add_edge(START, "model")
            graph.add_conditional_edges("model", route, ["tools", END])
            graph.add_edge("tools", "model")
            return graph.compile(checkpointer=checkpointer, store=store)
    ''',
    "agents/chat/index.py": '''
        import asyncio
        import contextlib

        from .._lib.graph import build_graph
        from .._sse import sse_event

        _graph = None


        def _get_graph(ctx):
            global _graph
            if _graph is None:
                _graph = build_graph(
                    ctx.store.langgraph_checkpointer, ctx.store.langgraph_store, ctx.tools.all()
                )
            return _graph


        async def _until_stopped(signal, source):
            agen = source.__aiter__()
            stop = asyncio.ensure_future(signal.wait())
            step = None
            try:
                while True:
                    step = asyncio.ensure_future(agen.__anext__())
                    done, _ = await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
                    if stop in done:
                        return
                    try:
                        yield step.result()
                    except StopAsyncIteration:
                        return
            finally:
                stop.cancel()
                if step is not None and not step.done():
                    step.cancel()  # the graph step must finish unwinding before aclose()
                    with contextlib.suppress(BaseException):
                        await step
                await agen.aclose()


        async def handler(ctx):
            cid = ctx.conversation_id
            body = ctx.request.body or {}
            message = body.get("message") or ""
            graph = _get_graph(ctx)
            gateway = {
                "base_url": ctx.env["AI_GATEWAY_BASE_URL"],
                "api_key": ctx.env["AI_GATEWAY_API_KEY"],
                "model": ctx.env.get("AI_GATEWAY_MODEL") or "@makers/hy3-preview",
            }
            config = {"configurable": {"thread_id": cid, "gateway": gateway}}
            await ctx.store.append_message(cid, "user", message)

            async def frames():
                text = ""
                chunks = graph.astream(
                    {"messages": [("user", message)]}, config, stream_mode=["custom", "updates"]
                )
                async for mode, data in _until_stopped(ctx.request.signal, chunks):
                    if mode == "custom" and data.get("event") == "text_delta":
                        text += data["delta"]
                        yield sse_event("text_delta", {"delta": data["delta"]})
                stopped = ctx.request.signal.is_set()
                if text:
                    await ctx.store.append_message(cid, "assistant", text)
                yield sse_event("done", {"stopped": stopped})

            return ctx.utils.stream_sse(frames())
    ''',
}

CLAUDE_AGENT_SDK = {
    **STOP,
    **HISTORY,
    "edgeone.json": json.dumps(
        {"agents": {"framework": "claude-agent-sdk", "timeout": 300, "sandbox": {"timeout": 300}}}
    ),
    "agents/_sse.py": _SSE_HELPER,
    "agents/chat/index.py": '''
        import os

        from claude_agent_sdk import (
            AssistantMessage,
            ClaudeAgentOptions,
            StreamEvent,
            TextBlock,
            create_sdk_mcp_server,
            project_key_for_directory,
            query,
        )

        from .._sse import sse_event

        CLI_ENV = (
            "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "IS_SANDBOX",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY",
        )


        async def handler(ctx):
            cid = ctx.conversation_id or ""
            body = ctx.request.body if isinstance(ctx.request.body, dict) else {}
            message = body.get("message") or ""
            ctx.tracer.set_attributes({"agent.framework": "claude-agent-sdk"})
            store = ctx.store
            await store.append_message(cid, "user", message)
            sessions = store.claude_session_store()
            session_id = await store.claude_session_binding(cid)
            key = {"project_key": project_key_for_directory(os.getcwd()), "session_id": session_id}
            resume = session_id if await sessions.load(key) else None
            bundle = ctx.tools.to_claude_mcp_server("edgeone", {"always_load": True})
            server = create_sdk_mcp_server(name=bundle.name, tools=bundle.tools)
            env = {name: ctx.env[name] for name in CLI_ENV if name in ctx.env}
            env["CLAUDE_CONFIG_DIR"] = ctx.env["CLAUDE_CONFIG_DIR"]
            env["CLAUDE_CODE_TMPDIR"] = "/tmp"
            options = ClaudeAgentOptions(
                model="claude-e2e", system_prompt="You are a test agent.", cwd=os.getcwd(),
                tools=[], allowed_tools=list(bundle.allowed_tools),
                permission_mode="bypassPermissions", max_turns=3, env=env,
                include_partial_messages=True, session_store=sessions,
                mcp_servers={bundle.name: server},
                session_id=None if resume else session_id, resume=resume,
            )
            text, stopped, streamed = "", False, False
            async for msg in query(prompt=message, options=options):
                if ctx.request.signal.is_set():
                    stopped = True
                    break
                if isinstance(msg, StreamEvent):
                    event = msg.event
                    if event.get("type") == "content_block_delta":
                        delta = event.get("delta", {}).get("text", "")
                        if delta:
                            streamed = True
                            text += delta
                            yield sse_event("text_delta", {"delta": delta})
                elif isinstance(msg, AssistantMessage) and not streamed:
                    for block in msg.content:
                        if isinstance(block, TextBlock):
                            text += block.text
                            yield sse_event("text_delta", {"delta": block.text})
            if text:
                await store.append_message(cid, "assistant", text)
            yield sse_event("done", {"stopped": stopped})
    ''',
}

FAMILIES = {
    "chat_completions": CHAT_COMPLETIONS,
    "openai_agents": OPENAI_AGENTS,
    "langgraph": LANGGRAPH,
    "claude_agent_sdk": CLAUDE_AGENT_SDK,
}
