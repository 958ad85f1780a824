"""Agents written in the official templates' call style, for the runtime-fidelity tests.

Our own code (never template code): positional store calls, a synchronous
``abort_active_run`` read through ``result.aborted``, the positional tracer
API in try/finally, ``ctx.kv`` with ``type="text"``, and the ``_platform`` imports.
"""

from __future__ import annotations

FIDELITY = {
    "agents/chat/index.py": '''
        import asyncio

        from _platform.context import StreamResponse, sse


        async def handler(ctx):
            cid = ctx.conversation_id
            text = ctx.request.body.get("message", "")
            ctx.tracer.set_attributes({"agent": "chat", "conversation": cid})
            await ctx.store.append_message(cid, "user", text)
            signal = ctx.request.signal

            async def gen():
                sent = 0
                span = ctx.tracer.start_span("reply.stream", {"words": 400})
                try:
                    for n in range(400):
                        if signal.is_set():
                            break
                        sent += 1
                        yield sse({"n": n}, event="delta")
                        await asyncio.sleep(0.05)
                finally:
                    span.set_attributes({"sent": sent})
                    span.end()
                stopped = signal.is_set()
                await ctx.store.append_message(cid, "assistant", f"{sent} words",
                                               {"aborted": stopped})
                yield sse({"aborted": stopped, "sent": sent}, event="done")

            return StreamResponse.sse(gen())
    ''',
    "agents/chat/stop.py": '''
        async def handler(ctx):
            body = ctx.request.body
            target = body.get("conversation_id") or body.get("conversationId")
            result = ctx.utils.abort_active_run(target)
            camel = ctx.utils.abortActiveRun
            return {
                "aborted": result.aborted,
                "conversation_id": result.conversation_id or target,
                "run_id": getattr(result, "run_id", None),
                "truthy": bool(result),
                "class": type(result).__name__,
                "same_alias": camel.__func__ is type(ctx.utils).abort_active_run,
                "result": result,
            }
    ''',
    "agents/deaf.py": '''
        import asyncio


        async def handler(ctx):
            ctx.tracer.set_attributes({"ignores": "signal"})
            for n in range(600):  # never looks at ctx.request.signal
                yield {"n": n}
                await asyncio.sleep(0.05)
    ''',
    # Two runs of one conversation, on two instances, each stopping the other
    # at the same moment with the synchronous abort (a blocked event loop each).
    "agents/mutual.py": '''
        import asyncio
        import time


        async def handler(ctx):
            at = ctx.request.body["at"]

            async def gen():
                yield {"started": True}
                await asyncio.sleep(max(0.0, at - time.time()))
                began = time.monotonic()
                result = ctx.utils.abort_active_run(ctx.conversation_id)
                took = time.monotonic() - began
                try:
                    await asyncio.wait_for(ctx.request.signal.wait(), 10)
                    signalled = True
                except TimeoutError:
                    signalled = False
                yield {"took": took, "aborted": result.aborted, "signalled": signalled}

            return ctx.utils.stream_sse(gen())
    ''',
    "agents/history.py": '''
        async def handler(ctx):
            target = ctx.request.body["conversation_id"]
            messages = await ctx.store.get_messages(target, limit=20, order="asc")
            return [{"role": m.role, "content": m.content, "metadata": m.metadata}
                    for m in messages]
    ''',
    "agents/traced.py": '''
        async def handler(ctx):
            ctx.tracer.set_attributes({"user": "u-1", "plan": "free"})
            ctx.tracer.set_attribute("step_count", 2)
            span = ctx.tracer.start_span("load.context", {"source": "store"})
            try:
                span.set_attribute("items", 3)
            finally:
                span.end()
            async with ctx.tracer.start_span("model.call") as call:
                call.set_attributes({"model": "echo"})
            with ctx.tracer.start_span("post.process"):
                pass
            return {"run_id": ctx.run_id,
                    "has_record_exception": hasattr(ctx.tracer, "record_exception")}
    ''',
    "agents/kvdemo.py": '''
        import json


        async def handler(ctx):
            body = ctx.request.body
            if body.get("op") == "set":
                await ctx.kv.set(body["key"], body["value"])
                await ctx.kv.set(body["key"] + ".json", json.dumps({"v": body["value"]}))
                try:
                    await ctx.kv.set("number", 7)
                    refused = None
                except Exception as exc:
                    refused = f"{type(exc).__name__}: {exc}"
                return {"refused": refused, "keys": await ctx.kv.list()}
            return {
                "text": await ctx.kv.get(body["key"], type="text"),
                "json": await ctx.kv.get(body["key"] + ".json", type="json"),
                "missing": await ctx.kv.get("never-set", type="text"),
                "pid": __import__("os").getpid(),
            }
    ''',
    "agents/other_kv.py": '''
        async def handler(ctx):
            return {"keys": await ctx.kv.list()}
    ''',
    "agents/whoami.py": '''
        import os


        async def handler(ctx):
            try:
                await ctx.store.state.set("k", 1)
                state = "set"
            except Exception as exc:
                state = type(exc).__name__
            return {"conversation_id": ctx.conversation_id, "state": state, "pid": os.getpid()}
    ''',
    "agents/fallback.py": '''
        from _platform.context import sse


        class Opaque:
            def __str__(self):
                return "opaque-value-9"


        async def handler(ctx):
            yield sse("[DONE]", event="end")
            yield sse({"bad": Opaque()})
            yield ctx.utils.sse(Opaque(), event="again")
    ''',
    "agents/interrupted_stream.py": '''
        from langgraph.errors import GraphInterrupt


        async def handler(ctx):
            yield {"step": "asking"}
            raise GraphInterrupt(())
    ''',
    "agents/interrupted.py": '''
        from langgraph.errors import GraphInterrupt
        from langgraph.types import Interrupt


        async def handler(ctx):
            raise GraphInterrupt((Interrupt(value={"question": "approve?"}),))
    ''',
    "agents/plain.py": '''
        def handler(ctx):
            return {"plain": True}
    ''',
    "agents/broken_import.py": '''
        import a_module_that_does_not_exist_4471


        async def handler(ctx):
            return {}
    ''',
    "agents/errors.py": '''
        from _platform.memory import MemoryNotFoundError, MemoryValidationError


        async def handler(ctx):
            try:
                await ctx.store.get_messages(ctx.conversation_id or "x", limit=1000)
            except MemoryValidationError as exc:
                return {"caught": type(exc).__name__,
                        "not_found_is_key_error": issubclass(MemoryNotFoundError, KeyError)}
            return {"caught": None}
    ''',
}

#: A stream that only stops when its signal is set (for agents.timeout).
TIMEOUT = {
    "agents/slow.py": '''
        import asyncio


        async def handler(ctx):
            yield {"step": "started"}
            try:
                await asyncio.wait_for(ctx.request.signal.wait(), 30)
            except TimeoutError:
                yield {"step": "never signalled"}
                return
            yield {"step": "signalled"}
    ''',
    "agents/stubborn.py": '''
        import asyncio


        async def handler(ctx):
            await asyncio.sleep(30)
            return {"finished": True}
    ''',
    "agents/tools_info.py": '''
        async def handler(ctx):
            try:
                ran = await ctx.sandbox.commands.run("echo hi", timeout=10)
                outcome = getattr(ran, "stdout", None) or ran
            except Exception as exc:
                outcome = type(exc).__name__
            return {"framework": ctx.tools.framework, "same": ctx.tools is ctx.tools,
                    "sandbox": outcome}
    ''',
}
