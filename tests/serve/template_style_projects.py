"""One project of agents written in the official Python templates' call styles.

Our own code (never template code), each agent using ``ctx`` the way one of
the templates does (see ``/tmp/template_survey.md`` and
``spec/platform-runtime.md``): ``asyncio.gather`` of a read and a positional
append, the old ``message_id=`` append retried on ``TypeError``, "not found"
read from an error's text, ``getattr(ctx, "env", None) or os.environ`` and an
import-time ``os.environ`` write, a stop race of ``signal.wait()`` against the
next chunk with pings, ``ctx.kv`` and a compiled graph held in module-level
singletons built by the first request, ``list_conversations`` through
``getattr``, ``state`` values wrapped as ``{"value": str}``, bytes from
``ctx.utils.sse``, the ``{"status_code", "body"}`` envelope, the tracer's
no-attribute spans ended by helpers, the starter's generic reading of
``ctx.tools.all()``, and a DeepAgents agent on the store's LangGraph adapters.

``edgeone.json`` carries the keys real templates ship: an illegal
``framework`` value and ``sandbox.timeout`` (as RAG does), ``runtime``,
``scene``, ``tags`` and ``slug`` (as EMA does).
"""

from __future__ import annotations

import json

EDGEONE = {
    "agents": {
        "framework": "openai-sdk",
        "timeout": 300,
        "sandbox": {"timeout": 300},
        "runtime": "python",
        "scene": ["process"],
        "tags": ["email", "drafts"],
        "slug": "template-styles",
    },
    "buildCommand": "npm run build",
    "outputDirectory": "dist",
}

TEMPLATE_STYLES = {
    "edgeone.json": json.dumps(EDGEONE),
    ".env": "TEMPLATE_DOTENV=from-dotenv-file\n",
    "agents/_log.py": '''
        from datetime import datetime, timezone


        def log(tag, text):
            stamp = datetime.now(timezone.utc).isoformat()
            print(f"[{tag}][{stamp}] {text}", flush=True)
    ''',
    "agents/_rounds.py": '''
        def answer_round(span, prior, text):
            """Ends the span it was handed, whatever happens (the caller does not)."""
            try:
                turn = sum(1 for item in prior if item.get("role") == "user") + 1
                span.set_attributes({"llm.turn": turn})
                return f"turn {turn}: {text}"
            finally:
                span.end()
    ''',
    # starter style: read and append concurrently, positional calls, spans
    "agents/chat/index.py": '''
        import asyncio

        from .._log import log
        from .._rounds import answer_round


        async def handler(ctx):
            cid = ctx.conversation_id
            body = ctx.request.body
            text = body.get("message") if isinstance(body, dict) else None
            ctx.tracer.set_attributes({"agent.scenario": "template_turn", "chat.ok": bool(text)})
            if not text:
                return {"status_code": 400, "body": {"error": "message is required"}}
            store = ctx.store
            history, _ = await asyncio.gather(
                store.get_messages(cid, limit=50, order="asc"),
                store.append_message(cid, "user", text),
            )
            prior = store.to_openai_input(history)
            build = ctx.tracer.start_span("tools.build")
            try:
                names = [tool.name for tool in ctx.tools.all()]
            finally:
                build.end()
            tool_span = ctx.tracer.start_span(f"tool.{names[0]}", {"tool.count": len(names)})
            tool_span.end()
            round_span = ctx.tracer.start_span("llm.request.round_1", {"llm.prior": len(prior)})
            reply = answer_round(round_span, prior, text)
            await store.append_message(cid, "assistant", reply)
            log("chat", f"answered {cid}")
            return {"reply": reply, "prior": prior, "run_id": ctx.run_id}
    ''',
    # the starter's history route: record_exception is not on the platform's tracer
    "agents/history_errors.py": '''
        async def handler(ctx):
            try:
                await ctx.store.get_messages(ctx.conversation_id, limit=500, order="asc")
            except Exception as exc:
                ctx.tracer.set_attributes({"error.type": type(exc).__name__})
                ctx.tracer.record_exception(exc)
                raise
            return {"unexpected": "no error"}
    ''',
    # an older Claude starter passed message_id= and retried without it
    "agents/legacy_append.py": '''
        async def handler(ctx):
            cid = ctx.conversation_id
            try:
                stored = await ctx.store.append_message(cid, "user", "hello", message_id="mine-1")
                path = "message_id accepted"
            except TypeError as exc:
                stored = await ctx.store.append_message(cid, "user", "hello")
                path = f"retried after TypeError: {exc}"
            listed = [m.message_id for m in await ctx.store.get_messages(cid)]
            return {"path": path, "stored": stored, "listed": listed}
    ''',
    # the email assistant reads "not found" from the error text
    "agents/missing.py": '''
        from _platform.memory import MemoryNotFoundError


        def verdict(exc):
            return "not found" if "not found" in str(exc).lower() else f"other: {exc}"


        async def handler(ctx):
            store = ctx.store
            out = {}
            try:
                await store.delete_conversation(ctx.conversation_id)
                out["delete_conversation"] = "ok"
            except Exception as exc:
                out["delete_conversation"] = verdict(exc)
            try:
                await store.update_conversation(ctx.conversation_id, {"title": "x"})
                out["update_conversation"] = "updated"
            except MemoryNotFoundError as exc:
                out["update_conversation"] = verdict(exc)
            mid = await store.append_message(ctx.conversation_id, "user", "soon gone")
            await store.delete_message(mid)
            for name, again in (
                ("delete_message", lambda: store.delete_message(mid)),
                ("update_message", lambda: store.update_message(mid, content="late")),
            ):
                try:
                    await again()
                    out[name] = "no error"
                except MemoryNotFoundError as exc:
                    out[name] = verdict(exc)
            return out
    ''',
    # env read the templates' ways, and an import-time os.environ write
    "agents/env_probe.py": '''
        import os

        from dotenv import load_dotenv

        os.environ["SSL_CERT_FILE"] = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/cert.pem"
        os.environ["TEMPLATE_IMPORT_MARK"] = "written-at-import"
        load_dotenv()
        BASE_URL_AT_IMPORT = os.getenv("AI_GATEWAY_BASE_URL", "")


        async def handler(ctx):
            source = getattr(ctx, "env", None) or os.environ
            key = (source.get("AI_GATEWAY_API_KEY") or "").strip()
            copy = dict(ctx.env or {})
            copy["AI_GATEWAY_API_KEY"] = "changed-in-a-copy"
            seen_before = ctx.env.get("LEAK_PROBE")
            ctx.env["LEAK_PROBE"] = ctx.run_id
            return {
                "key": key,
                "base_url_same": BASE_URL_AT_IMPORT == ctx.env.get("AI_GATEWAY_BASE_URL"),
                "dotenv_in_ctx": ctx.env.get("TEMPLATE_DOTENV"),
                "dotenv_in_os": os.getenv("TEMPLATE_DOTENV"),
                "import_mark": os.environ.get("TEMPLATE_IMPORT_MARK"),
                "seen_before": seen_before,
            }
    ''',
    # the Claude starter's stop race: signal.wait() against the next chunk, pings
    "agents/pinged.py": '''
        import asyncio


        async def slow_words():
            for n in range(100):
                await asyncio.sleep(0.5)
                yield n


        async def handler(ctx):
            signal = getattr(ctx.request, "signal", None) or asyncio.Event()
            if getattr(signal, "is_set", lambda: False)():
                return
            source = slow_words().__aiter__()
            stopped = asyncio.create_task(signal.wait())
            step = None
            try:
                while True:
                    if step is None:
                        step = asyncio.ensure_future(source.__anext__())
                    done, _ = await asyncio.wait(
                        {step, stopped}, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
                    )
                    if stopped in done:
                        yield ctx.utils.sse("[CANCELLED]", event="cancelled")
                        return
                    if not done:
                        yield ctx.utils.sse({"type": "ping"}, event="ping")
                        continue
                    try:
                        word = step.result()
                    except StopAsyncIteration:
                        break
                    step = None
                    yield ctx.utils.sse({"n": word}, event="word")
                yield ctx.utils.sse("[DONE]", event="end")
            finally:
                stopped.cancel()
                if step is not None and not step.done():
                    step.cancel()
    ''',
    # the email assistant's stop: target from either body key, else the header
    "agents/stop.py": '''
        async def handler(ctx):
            body = ctx.request.body if isinstance(ctx.request.body, dict) else {}
            target = body.get("conversationId") or body.get("conversation_id")
            target = target or ctx.conversation_id
            utils = getattr(ctx, "utils", None)
            result = utils.abort_active_run(target) if utils else None
            aborted = getattr(result, "aborted", False) if result else False
            run_id = getattr(result, "run_id", None) if result else None
            return {"aborted": aborted, "conversationId": target, "runId": run_id}
    ''',
    # the email assistant's kv provider, held in a module-level singleton
    "agents/drafts.py": '''
        import inspect
        import json
        import os

        _provider = None


        async def _maybe_await(value):
            return await value if inspect.isawaitable(value) else value


        class DraftProvider:
            def __init__(self, kv, built_by):
                self.kv = kv
                self.built_by = built_by

            async def read(self, key):
                try:
                    return await _maybe_await(self.kv.get(key, type="text"))
                except TypeError:
                    return await _maybe_await(self.kv.get(key))

            async def save(self, draft_id, text):
                await _maybe_await(self.kv.set(f"drafts:{draft_id}", json.dumps({"text": text})))
                index = json.loads(await self.read("drafts:_index") or "[]")
                if draft_id not in index:
                    index.append(draft_id)
                await _maybe_await(self.kv.set("drafts:_index", json.dumps(index)))


        def get_provider(env, kv, run_id):
            global _provider
            if _provider is None:
                _provider = DraftProvider(kv, run_id)
            return _provider


        async def handler(ctx):
            provider = get_provider(ctx.env, getattr(ctx, "kv", None), ctx.run_id)
            body = ctx.request.body
            if body.get("op") == "save":
                await provider.save(body["id"], body["text"])
            raw = await provider.read(f"drafts:{body['id']}")
            return {
                "draft": json.loads(raw) if raw else None,
                "index": json.loads(await provider.read("drafts:_index") or "[]"),
                "singleton_is_older": provider.built_by != ctx.run_id,
                "pid": os.getpid(),
            }
    ''',
    # the quiz template's graph singleton, compiled from the first request's store
    "agents/graph_chat.py": '''
        import os

        from langchain_core.messages import AIMessage
        from langgraph.config import get_store
        from langgraph.graph import END, START, MessagesState, StateGraph

        _graph = None
        _built_for = None


        async def answer(state, config):
            thread = config["configurable"]["thread_id"]
            turns = sum(1 for m in state["messages"] if m.type == "human")
            await get_store().aput(("notes", thread), "last", {"turns": turns})
            return {"messages": [AIMessage(content=f"{thread}: {turns} turns")]}


        def _get_graph(ctx):
            global _graph, _built_for
            if _graph is None:
                graph = StateGraph(MessagesState)
                graph.add_node("answer", answer)
                graph.add_edge(START, "answer")
                graph.add_edge("answer", END)
                _graph = graph.compile(
                    checkpointer=ctx.store.langgraph_checkpointer, store=ctx.store.langgraph_store
                )
                _built_for = ctx.conversation_id
            return _graph


        async def handler(ctx):
            body = ctx.request.body or {}
            graph = _get_graph(ctx)
            config = {"configurable": {"thread_id": ctx.conversation_id}}
            if body.get("op") == "forget":
                await ctx.store.delete_conversation(ctx.conversation_id)
                state = await graph.aget_state(config)
                note = await ctx.store.langgraph_store.aget(("notes", ctx.conversation_id), "last")
                return {"messages_left": len(state.values.get("messages", [])),
                        "note": note.value if note else None}
            out = await graph.ainvoke({"messages": [("user", body["message"])]}, config)
            return {"reply": out["messages"][-1].content, "built_for": _built_for,
                    "pid": os.getpid()}
    ''',
    # the Claude starter's conversation list, through getattr and keyword filters
    "agents/conversations.py": '''
        import asyncio


        async def handler(ctx):
            store = ctx.store
            body = ctx.request.body
            user = body["user_id"]
            if body.get("op") == "seed":
                for n, cid in enumerate(body["ids"]):
                    await store.append_message(
                        conversation_id=cid, role="user", content=f"hello {n}", user_id=user
                    )
                    await store.update_conversation(cid, {"title": f"title {n}"})
                    await asyncio.sleep(0.01)  # distinct last_message_at, a stable order
                return {"seeded": len(body["ids"])}
            lister = getattr(store, "list_conversations", None) or getattr(
                store, "listConversations"
            )
            params = {"user_id": user, "limit": 2, "order": "desc"}
            for cursor in ("after", "before"):
                if body.get(cursor):
                    params[cursor] = body[cursor]
            page = await lister(**params)
            seen, items = set(), []
            for meta in page.items:
                if meta.conversation_id in seen:
                    continue
                seen.add(meta.conversation_id)
                items.append({
                    "id": meta.conversation_id,
                    "title": (meta.metadata or {}).get("title"),
                    "times_ok": meta.created_at <= meta.last_message_at,
                    "count": meta.message_count,
                })
            return {"items": items, "next_cursor": page.next_cursor,
                    "previous_cursor": page.previous_cursor}
    ''',
    # the persistence template's HITL state: a str or {"value": str}
    "agents/hitl_state.py": '''
        async def handler(ctx):
            if not ctx.conversation_id:
                return {"status_code": 400, "body": {"error": "conversation id header missing"}}
            state = getattr(ctx.store, "state")
            body = ctx.request.body
            if body["op"] == "set":
                await state.set(body["key"], body["value"])
            elif body["op"] == "delete":
                await state.delete(body["key"])
            raw = await state.get(body["key"])
            value = raw.get("value") if isinstance(raw, dict) else raw
            return {"raw": raw, "value": value}
    ''',
    # the email assistant's history: to_dict() first, __dict__ as its fallback
    "agents/history_dicts.py": '''
        async def handler(ctx):
            cid = ctx.conversation_id
            if ctx.request.body.get("op") == "seed":
                for n in range(25):
                    role = "user" if n % 2 == 0 else "assistant"
                    await ctx.store.append_message(cid, role, f"m{n}", {"n": n})
            messages = await ctx.store.get_messages(cid)
            rows = []
            for message in messages:
                to_dict = getattr(message, "to_dict", None)
                rows.append(to_dict() if callable(to_dict) else dict(message.__dict__))
            return {"count": len(rows), "first": rows[0], "last": rows[-1]}
    ''',
    # the quiz/email style: a plain async def returning ctx.utils.stream_sse(gen())
    "agents/paused.py": '''
        async def frames(ctx):
            frame = ctx.utils.sse("[PAUSED]", event="paused")
            yield ctx.utils.sse({"stage": "review", "bytes": isinstance(frame, bytes)},
                                event="progress")
            yield frame
            yield ctx.utils.sse("[DONE]", event="end")


        async def handler(ctx):
            return ctx.utils.stream_sse(frames(ctx))
    ''',
    "agents/conflict.py": '''
        async def handler(ctx):
            if ctx.request.body.get("as_text"):
                return {"status_code": 503, "body": "the model is busy"}
            return {"status_code": 409, "body": {"error": "draft already sent", "code": "SENT"}}
    ''',
    # the starter's generic reading of ctx.tools.all() (no legal framework set)
    "agents/tools_generic.py": '''
        import inspect


        def field(item, key):
            return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


        def wants_kwargs(fn):
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                return False
            if any(p.kind is p.VAR_KEYWORD for p in params):
                return True
            required = [p for p in params if p.default is p.empty
                        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            return len(required) > 1


        async def call(fn, args):
            result = fn(**args) if wants_kwargs(fn) else fn(args)
            return await result if inspect.isawaitable(result) else result


        async def handler(ctx):
            registry = getattr(ctx, "tools", None)
            if registry is None or not hasattr(registry, "all"):
                return {"tools": None}
            items = registry.all()
            if inspect.isawaitable(items):
                raise RuntimeError("ctx.tools.all() returned an awaitable")
            found = {}
            for item in items or []:
                name = field(item, "name") or field(field(item, "function") or {}, "name")
                fn = field(item, "execute") or field(item, "handler") or field(item, "invoke")
                schema = (field(item, "parameters") or field(item, "inputSchema")
                          or field(item, "input_schema"))
                if name and callable(fn):
                    found[name] = (fn, schema)
            text = ctx.request.body["text"]
            wrote = await call(found["files_write"][0], {"path": "/tmp/pas.txt", "content": text})
            read = await call(found["files_read"][0], {"path": "/tmp/pas.txt"})
            ran = await call(found["commands"][0], {"cmd": "cat tmp/pas.txt"})
            return {
                "names": list(found),
                "styles": sorted({"kwargs" if wants_kwargs(fn) else "dict"
                                  for fn, _ in found.values()}),
                "write_required": found["files_write"][1].get("required"),
                "wrote": wrote, "read": read, "ran": ran,
            }
    ''',
    # the OpenAI starter catches CancelledError and yields once more in finally
    "agents/stubborn_stream.py": '''
        import asyncio


        async def handler(ctx):
            cancelled = False
            try:
                for n in range(600):  # never looks at the signal
                    yield ctx.utils.sse({"n": n}, event="word")
                    await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                cancelled = True
            finally:
                yield ctx.utils.sse({"cancelled": cancelled}, event="final")
    ''',
    "agents/explodes.py": '''
        async def handler(ctx):
            yield ctx.utils.sse({"step": 1}, event="progress")
            raise RuntimeError("exploded after one frame 3391")
    ''',
    # DeepAgents on the store's LangGraph adapters, a module-level singleton
    "agents/deep/index.py": '''
        from deepagents import create_deep_agent
        from langchain_anthropic import ChatAnthropic

        _agent = None


        def _get_agent(ctx):
            global _agent
            if _agent is None:
                model = ChatAnthropic(
                    model="claude-fake", base_url=ctx.env["ANTHROPIC_BASE_URL"],
                    api_key=ctx.env["AI_GATEWAY_API_KEY"].strip(), max_retries=0, timeout=60,
                )
                _agent = create_deep_agent(
                    model=model, tools=[], system_prompt="You are a test agent.",
                    checkpointer=ctx.store.langgraph_checkpointer,
                    store=ctx.store.langgraph_store,
                )
            return _agent


        async def handler(ctx):
            cid = ctx.conversation_id
            text = (ctx.request.body or {}).get("message") or ""
            agent = _get_agent(ctx)

            async def frames():
                reply = ""
                chunks = agent.astream(
                    {"messages": [{"role": "user", "content": text}]},
                    {"configurable": {"thread_id": cid}}, stream_mode="messages",
                )
                async for chunk, meta in chunks:
                    if meta.get("langgraph_node") == "model" and chunk.text:
                        reply += chunk.text
                        yield ctx.utils.sse({"delta": chunk.text}, event="text_delta")
                yield ctx.utils.sse({"reply": reply}, event="done")

            return ctx.utils.stream_sse(frames())
    ''',
}
