"""Projects the serve tests run (relative path -> source)."""

from __future__ import annotations

SHAPES = {
    "agents/shape.py": '''
        from makers_store.emulator.runtime import StreamResponse


        async def handler(ctx):
            kind = ctx.request.body.get("kind")
            if kind == "dict":
                return {"kind": "dict", "conversation_id": ctx.conversation_id}
            if kind == "list":
                return [1, "two", {"three": 3}]
            if kind == "str":
                return "plain text"
            if kind == "bytes":
                return b"\\x00\\x01raw"
            if kind == "none":
                return None
            if kind == "tuple":
                return {"created": True}, 201
            if kind == "tuple3":
                return "accepted", 202, {"x-extra": "yes"}
            if kind == "envelope":
                return {"status_code": 418, "body": {"teapot": True}, "headers": {"x-tea": "1"}}
            if kind == "messages":
                await ctx.store.append_message(
                    conversation_id=ctx.conversation_id, role="user", content="hello"
                )
                return await ctx.store.get_messages(conversation_id=ctx.conversation_id)
            if kind == "generator":
                async def gen():
                    yield {"n": 1}
                    yield ctx.utils.sse("two", event="word")
                    yield "three"
                return gen()
            if kind == "stream_response":
                async def frames():
                    yield {"n": 1}
                    yield {"n": 2}
                return StreamResponse(frames(), headers={"x-stream": "yes"})
            if kind == "stream_sse":
                async def items():
                    for n in range(3):
                        yield {"n": n}
                return ctx.utils.stream_sse(items())
            if kind == "bad_envelope":
                return {"status_code": 200, "data": 1}
            if kind == "unencodable":
                return {"value": object()}
            return {"error": "unknown kind"}, 400
    ''',
    "agents/asyncgen.py": '''
        async def handler(ctx):
            for n in range(3):
                yield {"n": n, "run_id": ctx.run_id}
    ''',
    "agents/sync_handler.py": '''
        def handler(ctx):
            return {"sync": True, "conversation_id": ctx.conversation_id}
    ''',
    "agents/whoami.py": '''
        async def handler(ctx):
            return {
                "conversation_id": ctx.conversation_id,
                "run_id": ctx.run_id,
                "headers": ctx.request.headers,
                "query": ctx.request.query,
                "body": ctx.request.body,
                "method": ctx.request.method,
            }
    ''',
    "agents/envcheck.py": '''
        import os


        async def handler(ctx):
            return {
                "A": ctx.env.get("A"),
                "B": ctx.env.get("B"),
                "C": ctx.env.get("C"),
                "os_A": os.environ.get("A"),
                "internal": [k for k in ctx.env if k.startswith("MAKERS_SERVE")],
            }
    ''',
    "agents/platform.py": '''
        async def handler(ctx):
            before = ctx.env.get("MUTATED")
            ctx.env["MUTATED"] = "yes"  # a per-request copy: harmless
            await ctx.kv.set("seen", "1")
            return {"kv": await ctx.kv.get("seen", type="text"), "before": before,
                    "env_type": type(ctx.env).__name__}
    ''',
    "agents/traced.py": '''
        async def handler(ctx):
            with ctx.tracer.start_span("unit.step", attributes={"answer": 42}) as span:
                span.add_event("halfway")
            return {"run_id": ctx.run_id}
    ''',
    "agents/fail.py": '''
        async def handler(ctx):
            raise ValueError("deliberate failure 7731")
    ''',
    "agents/broken.py": '''
        async def handler(ctx)
            return 1
    ''',
    "agents/nohandler.py": '''
        VALUE = 1
    ''',
    "agents/gate.py": '''
        import asyncio


        async def handler(ctx):
            async def frames():
                yield {"step": "first"}
                for _ in range(400):
                    if await ctx.store.state.get("released"):
                        yield {"step": "second"}
                        return
                    await asyncio.sleep(0.05)
                yield {"step": "timeout"}
            return frames()
    ''',
    "agents/release.py": '''
        async def handler(ctx):
            await ctx.store.state.set("released", True)
            return {"released": True}
    ''',
    "agents/wait.py": '''
        import asyncio


        async def handler(ctx):
            await ctx.store.state.set("waiting", True)
            try:
                await asyncio.wait_for(ctx.request.signal.wait(), 20)
            except TimeoutError:
                return {"aborted": False}
            await ctx.store.state.set("wait_saw_signal", True)
            return {"aborted": True}
    ''',
    "agents/linger.py": '''
        import asyncio


        async def handler(ctx):
            async def frames():
                yield {"step": "started"}
                try:
                    await asyncio.wait_for(ctx.request.signal.wait(), 20)
                except TimeoutError:
                    return
                await ctx.store.state.set("saw_signal", True)
                yield {"step": "after signal"}
            return frames()
    ''',
    "agents/peek.py": '''
        async def handler(ctx):
            return await ctx.store.state.items()
    ''',
    "agents/stop.py": '''
        async def handler(ctx):
            target = ctx.request.body["conversation_id"]
            result = ctx.utils.abort_active_run(target)
            return {"aborted": result.aborted}
    ''',
    "agents/chat/index.py": '''
        from ._helper import PREFIX
        from .._shared import shout


        async def handler(ctx):
            return {"reply": shout(PREFIX + ctx.request.body["message"])}
    ''',
    "agents/chat/stop.py": '''
        async def handler(ctx):
            return {"route": "chat/stop"}
    ''',
    "agents/chat/_helper.py": '''
        PREFIX = "you said: "
    ''',
    "agents/_shared.py": '''
        def shout(text):
            return text.upper()
    ''',
    "cloud-functions/api/items/[id].py": '''
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"id": self.context.params["id"], "path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    ''',
    "cloud-functions/api/items/special.py": '''
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"static wins")
    ''',
    "cloud-functions/api/files/[[rest]].py": '''
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"rest": self.params["rest"]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    ''',
    "cloud-functions/api/echo.py": '''
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_POST(self):
                size = int(self.headers.get("Content-Length", "0"))
                data = json.loads(self.rfile.read(size))
                body = json.dumps({
                    "got": data,
                    "header": self.headers.get("X-Custom"),
                    "conversation_id": self.context.conversation_id,
                }).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    ''',
    "cloud-functions/api/messages.py": '''
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                store = self.context.agent.store
                cid = self.context.conversation_id
                messages = store.get_messages(conversation_id=cid)
                store.bind(cid).state.set("seen_by_function", len(messages))
                body = json.dumps([m.content for m in messages]).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    ''',
    "cloud-functions/api/ticker.py": '''
        import time
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for n in range(3):
                    self.wfile.write(f"data: {n}\\n\\n".encode())
                    self.wfile.flush()
                    time.sleep(0.05)
    ''',
    "cloud-functions/api/boom.py": '''
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                raise RuntimeError("function failure 5521")
    ''',
    "cloud-functions/api/silent.py": '''
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                pass
    ''',
    "cloud-functions/api/not_a_class.py": '''
        def handler(request):
            return "agents style, in the wrong folder"
    ''',
    ".env": '''
        A=from_env
        B=from_env
    ''',
    ".env.local": '''
        B=from_local
        C="from local"
    ''',
}

#: One conversation's memory kept the right way (ctx.store) and the wrong way (a global).
INSTANCES = {
    "agents/remember.py": '''
        async def handler(ctx):
            text = ctx.request.body["message"]
            await ctx.store.append_message(conversation_id=ctx.conversation_id, role="user",
                                           content=text)
            turns = (await ctx.store.state.get("turns")) or []
            turns.append(text)
            await ctx.store.state.set("turns", turns)
            meta = await ctx.store.get_conversation(conversation_id=ctx.conversation_id)
            return {"turns": turns, "message_count": meta.message_count}
    ''',
    "agents/forgetful.py": '''
        TURNS = {}


        async def handler(ctx):
            turns = TURNS.setdefault(ctx.conversation_id, [])
            turns.append(ctx.request.body["message"])
            return {"turns": list(turns)}
    ''',
    "agents/crash.py": '''
        import os


        async def handler(ctx):
            os._exit(3)
    ''',
    "agents/crash_stream.py": '''
        import asyncio
        import os


        async def handler(ctx):
            yield {"step": "before crash"}
            await asyncio.sleep(0.2)
            os._exit(4)
    ''',
    "agents/slow_stream.py": '''
        import asyncio


        async def handler(ctx):
            yield {"step": "started"}
            try:
                await asyncio.wait_for(ctx.request.signal.wait(), 20)
            except TimeoutError:
                yield {"step": "timeout"}
                return
            yield {"step": "aborted"}
    ''',
    "agents/stop.py": '''
        async def handler(ctx):
            target = ctx.request.body["conversation_id"]
            result = ctx.utils.abort_active_run(target)
            return {"aborted": result.aborted}
    ''',
    "agents/pid.py": '''
        import os


        async def handler(ctx):
            return {"pid": os.getpid()}
    ''',
}
