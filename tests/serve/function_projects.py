"""Cloud functions written in the official templates' call styles (our own code)."""

from __future__ import annotations

#: Seconds the fidelity server allows a cloud function (the platform's 120 s, shortened).
SHORT_WALL_CLOCK_S = 1.5

# indented like the sources below, which harness.write_project dedents
_JSON_REPLY = '''

        def reply(handler, status, payload):
            body = json.dumps(payload).encode()
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
'''

FIDELITY = {
    "agents/seed.py": '''
        async def handler(ctx):
            for text in ctx.request.body["messages"]:
                await ctx.store.append_message(
                    conversation_id=ctx.conversation_id, role="user", content=text
                )
            return {"seeded": len(ctx.request.body["messages"])}
    ''',
    "cloud-functions/history/_logger.py": '''
        import sys


        def create_logger(tag):
            def log(message):
                print(f"[{tag}] {message}", file=sys.stdout, flush=True)
            return log
    ''',
    "cloud-functions/history/render.py": '''
        # a helper module without an entry pattern: copied, never routed
        def as_rows(messages):
            return [{"role": m.role, "content": m.content} for m in messages]
    ''',
    "cloud-functions/history/index.py": '''
        import json
        import os
        import sys
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import parse_qs, urlparse

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _logger import create_logger  # noqa: E402
        from render import as_rows  # noqa: E402

        log = create_logger("history")
        ''' + _JSON_REPLY + '''

        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = parse_qs(urlparse(self.path).query)
                cid = query.get("conversation_id", [""])[0] or self.headers.get(
                    "makers-conversation-id", ""
                )
                store = self.context.agent.store
                messages = store.get_messages(conversation_id=cid, limit=50)
                log(f"history of {cid}: {len(messages)} messages")
                reply(self, 200, {"conversation_id": cid, "messages": as_rows(messages)})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                data = json.loads(self.rfile.read(length) or b"{}")
                store = self.context.agent.store
                store.delete_conversation(conversation_id=data["conversation_id"])
                reply(self, 200, {"deleted": data["conversation_id"]})
    ''',
    "cloud-functions/conversations/index.py": '''
        import json
        from http.server import BaseHTTPRequestHandler
        ''' + _JSON_REPLY + '''

        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                params = {"limit": 100, "order": "desc"}
                page = self.context.agent.store.list_conversations(**params)
                seen = []
                for item in page.items:
                    if item.conversation_id not in seen:
                        seen.append(item.conversation_id)
                reply(self, 200, {"conversations": seen})
    ''',
    "cloud-functions/lib/util.py": '''
        def handle(request):
            return "a function not named handler is no entry pattern"
    ''',
    "cloud-functions/positional.py": '''
        import json
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import parse_qs, urlparse
        ''' + _JSON_REPLY + '''

        class handler(BaseHTTPRequestHandler):
            # the templates' positional sync calls
            def do_GET(self):
                cid = parse_qs(urlparse(self.path).query)["conversation_id"][0]
                store = self.context.agent.store
                messages = store.get_messages(cid, limit=100, order="asc")
                page = store.list_conversations(limit=20, order="desc")
                reply(self, 200, {
                    "messages": [m.content for m in messages],
                    "listed": cid in [item.conversation_id for item in page.items],
                })

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                data = json.loads(self.rfile.read(length))
                store = self.context.agent.store
                if data["action"] == "clear":
                    store.clear_messages(data["conversation_id"])
                else:
                    store.delete_conversation(data["conversation_id"])
                reply(self, 200, {"done": data["action"]})
    ''',
    "cloud-functions/tests/probe.py": '''
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
    ''',
    "cloud-functions/scripts/index.py": '''
        import http.server


        class handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
    ''',
    "cloud-functions/rules.py": '''
        import json
        import http.server
        ''' + _JSON_REPLY + '''

        class handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                agent = self.context.agent
                refused = {}
                for name in ("langgraph_checkpointer", "langgraph_store"):
                    try:
                        getattr(agent.store, name)
                        refused[name] = None
                    except AttributeError as exc:
                        refused[name] = str(exc)
                kept = [
                    name for name in ("get_messages", "list_conversations", "state",
                                      "openai_session", "claude_session_store",
                                      "claude_session_binding", "delete_conversation")
                    if name in dir(agent.store)
                ]
                listed = [name for name in dir(agent.store) if name.startswith("langgraph")]
                state = None
                if agent.conversation_id:
                    agent.store.state.set("seen", True)
                    state = agent.store.state.get("seen")
                reply(self, 200, {
                    "refused": refused,
                    "hasattr": hasattr(agent.store, "langgraph_store"),
                    "bound_refused": hasattr(agent.store.bind("x"), "langgraph_checkpointer"),
                    "kept": kept,
                    "listed": listed,
                    "agent_conversation_id": agent.conversation_id,
                    "store_conversation_id": agent.store.conversation_id,
                    "store_run_id": agent.store.run_id,
                    "conversation_id": self.context.conversation_id,
                    "run_id": self.context.run_id,
                    "state": state,
                })
    ''',
    "cloud-functions/upload.py": '''
        import json
        from http.server import BaseHTTPRequestHandler
        ''' + _JSON_REPLY + '''

        class handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                reply(self, 200, {"received": len(self.rfile.read(length))})
    ''',
    "cloud-functions/slow.py": '''
        import json
        import time
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import parse_qs, urlparse

        LATE = {}
        ''' + _JSON_REPLY + '''

        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                seconds = float(parse_qs(urlparse(self.path).query)["seconds"][0])
                time.sleep(seconds)
                try:
                    reply(self, 200, {"slept": seconds})
                    LATE["write"] = "ok"
                except BrokenPipeError as exc:
                    LATE["write"] = type(exc).__name__

            def do_POST(self):
                reply(self, 200, LATE)
    ''',
    "cloud-functions/flood.py": '''
        import time
        from http.server import BaseHTTPRequestHandler
        from urllib.parse import parse_qs, urlparse

        CHUNK = b"x" * 65536


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                query = parse_qs(urlparse(self.path).query)
                chunks = int(query.get("chunks", ["0"])[0])
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if chunks:
                    for _ in range(chunks):
                        self.wfile.write(CHUNK)
                    return
                while True:  # until the time limit closes the response
                    self.wfile.write(b"tick\\n")
                    time.sleep(0.1)
    ''',
    "cloud-functions/relative/_shared.py": '''
        WORD = "relative"
    ''',
    "cloud-functions/relative/index.py": '''
        from http.server import BaseHTTPRequestHandler

        from ._shared import WORD


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = WORD.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    ''',
    "cloud-functions/api/index.py": '''
        from flask import Flask, jsonify, request

        app = Flask(__name__)


        def where():
            return {"path": request.path, "script_root": request.script_root,
                    "query": request.args.to_dict()}


        @app.get("/")
        def root():
            return jsonify(route="root", **where())


        @app.get("/users/<user_id>")
        def user(user_id):
            return jsonify(route="user", user_id=user_id, **where())


        @app.post("/history")
        def history():
            context = request.environ["makers.context"]
            cid = request.get_json()["conversation_id"]
            messages = context.agent.store.get_messages(conversation_id=cid)
            return jsonify(
                messages=[m.content for m in messages],
                agent_conversation_id=context.agent.conversation_id,
                run_id=context.run_id,
            )


        @app.get("/boom")
        def boom():
            raise RuntimeError("flask failure 7731")
    ''',
    "cloud-functions/api/status.py": '''
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"static")
    ''',
    "cloud-functions/fast/index.py": '''
        import asyncio

        from fastapi import FastAPI, Request

        app = FastAPI()


        @app.get("/items/{item_id}")
        def item(item_id: str, request: Request):
            context = request.scope["makers.context"]
            return {
                "item_id": item_id,
                "path": request.url.path,
                "root_path": request.scope["root_path"],
                "agent_conversation_id": context.agent.conversation_id,
                "has_checkpointer": hasattr(context.agent.store, "langgraph_checkpointer"),
            }


        @app.get("/")
        def root():
            return {"route": "root"}


        @app.get("/sleep")
        async def sleep(seconds: float):
            await asyncio.sleep(seconds)
            return {"slept": seconds}
    ''',
}
