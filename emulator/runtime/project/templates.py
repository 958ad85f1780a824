'''The files ``makers-store init`` writes (relative path -> text).

The project runs with only ``makers-store[serve]`` installed: its code uses
the standard library. Without ``AI_GATEWAY_BASE_URL``/``AI_GATEWAY_API_KEY``
a deterministic echo model answers; with them, any OpenAI-compatible
``/chat/completions`` endpoint does.
'''

from __future__ import annotations

import json

MODEL = '''"""The model the agents talk to.

With AI_GATEWAY_BASE_URL and AI_GATEWAY_API_KEY set (environment or .env),
every call goes to the OpenAI-compatible endpoint {AI_GATEWAY_BASE_URL}/chat/completions
(model: AI_GATEWAY_MODEL, default gpt-4o-mini). Without them a deterministic
built-in echo model answers, so the project runs offline with no key.
Standard library only: urllib, run in a thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

DEFAULT_MODEL = "gpt-4o-mini"
TIMEOUT_S = 120
ECHO_DELAY_S = 0.05  # pause between streamed echo words, so streaming is visible


def _gateway(env: Mapping[str, str]) -> tuple[str, str, str] | None:
    base, key = env.get("AI_GATEWAY_BASE_URL"), env.get("AI_GATEWAY_API_KEY")
    if not base or not key:
        return None
    return base.rstrip("/"), key, env.get("AI_GATEWAY_MODEL") or DEFAULT_MODEL


def echo_reply(messages: list[dict[str, Any]]) -> str:
    """The echo model: repeats the last user message and proves it remembers the first."""
    said = [str(m["content"]) for m in messages if m["role"] == "user"]
    if not said:
        return "Echo: (nothing to echo)"
    reply = f"Echo #{len(said)}: {said[-1]}"
    if len(said) > 1:
        reply += f" (your first message was: {said[0]})"
    return reply


def _post(base: str, key: str, payload: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(payload).encode("utf-8"),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    return urllib.request.urlopen(request, timeout=TIMEOUT_S)


def _complete_blocking(base: str, key: str, model: str, messages: list[dict[str, Any]]) -> str:
    with _post(base, key, {"model": model, "messages": messages}) as response:
        data = json.load(response)
    return str(data["choices"][0]["message"]["content"] or "")


async def complete(messages: list[dict[str, Any]], env: Mapping[str, str]) -> str:
    """The model's whole answer to ``messages`` (OpenAI chat format)."""
    gateway = _gateway(env)
    if gateway is None:
        return echo_reply(messages)
    return await asyncio.to_thread(_complete_blocking, *gateway, messages)


async def stream(messages: list[dict[str, Any]], env: Mapping[str, str]) -> AsyncIterator[str]:
    """The model's answer to ``messages``, piece by piece."""
    gateway = _gateway(env)
    if gateway is None:
        words = echo_reply(messages).split(" ")
        for index, word in enumerate(words):
            await asyncio.sleep(ECHO_DELAY_S)
            yield word if index == 0 else " " + word
        return
    base, key, model = gateway
    payload = {"model": model, "messages": messages, "stream": True}
    response = await asyncio.to_thread(_post, base, key, payload)
    try:
        while True:
            raw = await asyncio.to_thread(response.readline)
            if not raw:
                break
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                break
            choices = json.loads(data).get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content")
            if piece:
                yield piece
    finally:
        await asyncio.to_thread(response.close)
'''

MEMORY = '''"""Both kinds of memory a chat needs (they do not replace each other):

- the message history (append_message / get_messages): what a UI shows again
  after a refresh; the cloud function api/history.py reads it;
- the model's context, kept in ctx.store.state: what the model reads to
  remember, on whichever instance the next turn lands.
"""

from __future__ import annotations

from typing import Any

CONTEXT_KEY = "model_context"
MAX_CONTEXT = 40  # messages the model sees, besides the system prompt
SYSTEM_PROMPT = "You are a concise, friendly assistant."


def user_message(body: Any) -> str | None:
    """The user's text from a request body like {"message": "..."}."""
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) and message.strip() else None


async def begin_turn(ctx: Any, message: str) -> list[dict[str, Any]]:
    """Record the user's message; the messages to send to the model."""
    user_id = ctx.request.body.get("user_id")
    await ctx.store.append_message(
        conversation_id=ctx.conversation_id,
        role="user",
        content=message,
        user_id=user_id if isinstance(user_id, str) and user_id else None,
    )
    context = await ctx.store.state.get(CONTEXT_KEY) or []
    context.append({"role": "user", "content": message})
    return [{"role": "system", "content": SYSTEM_PROMPT}, *context[-MAX_CONTEXT:]]


async def finish_turn(
    ctx: Any, model_input: list[dict[str, Any]], reply: str, metadata: dict[str, Any] | None = None
) -> str:
    """Record the model's reply in both memories; the reply's message id."""
    message_id = await ctx.store.append_message(
        conversation_id=ctx.conversation_id, role="assistant", content=reply, metadata=metadata
    )
    context = [m for m in model_input if m["role"] != "system"]
    context.append({"role": "assistant", "content": reply})
    await ctx.store.state.set(CONTEXT_KEY, context[-MAX_CONTEXT:])
    return message_id
'''

CHAT = '''"""POST /chat {"message": "...", "user_id": "optional"} -> the whole reply as JSON.

Send the header makers-conversation-id to continue a conversation; the
response echoes it. Without it the agent answers 400, since it could not
remember anything (as on the platform, the conversation id is then empty).
"""

from __future__ import annotations

from typing import Any

from .._model import complete
from ._memory import begin_turn, finish_turn, user_message


async def handler(ctx: Any) -> Any:
    if not ctx.conversation_id:
        return {"error": "send the makers-conversation-id header"}, 400
    message = user_message(ctx.request.body)
    if message is None:
        return {"error": 'send a JSON body like {"message": "hello"}'}, 400
    ctx.tracer.set_attributes({"route": "chat", "conversation_id": ctx.conversation_id})
    model_input = await begin_turn(ctx, message)
    span = ctx.tracer.start_span("model.complete", {"messages": len(model_input)})
    try:
        reply = await complete(model_input, ctx.env)
    finally:
        span.end()
    message_id = await finish_turn(ctx, model_input, reply)
    return {"conversation_id": ctx.conversation_id, "reply": reply, "message_id": message_id}
'''

STREAM = '''"""POST /chat/stream {"message": "..."} -> the reply as server-sent events.

Events: "delta" frames {"text": "..."} as the model produces them, then one
"done" frame {"message_id": "...", "aborted": false}. POST /chat/stop stops a
running stream; the partial reply is kept, marked {"aborted": true}.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from .._model import stream
from ._memory import begin_turn, finish_turn, user_message


async def handler(ctx: Any) -> Any:
    if not ctx.conversation_id:
        return {"error": "send the makers-conversation-id header"}, 400
    message = user_message(ctx.request.body)
    if message is None:
        return {"error": 'send a JSON body like {"message": "hello"}'}, 400
    model_input = await begin_turn(ctx, message)
    signal = ctx.request.signal

    async def events() -> AsyncIterator[bytes]:
        parts: list[str] = []
        span = ctx.tracer.start_span("model.stream")
        try:
            async for piece in stream(model_input, ctx.env):
                if signal.is_set():
                    break
                parts.append(piece)
                yield ctx.utils.sse({"text": piece}, event="delta")
        finally:
            span.set_attributes({"pieces": len(parts), "aborted": signal.is_set()})
            span.end()
        aborted = signal.is_set()
        message_id = await finish_turn(
            ctx, model_input, "".join(parts), {"aborted": True} if aborted else None
        )
        yield ctx.utils.sse({"message_id": message_id, "aborted": aborted}, event="done")

    return ctx.utils.stream_sse(events())
'''

STOP = '''"""POST /chat/stop {"conversation_id": "..."} -> stops that conversation's running reply.

The target goes in the body, not in the header: with the header, the
platform would route this request to the busy instance (and treat it as the
conversation's new run). abort_active_run is synchronous and answers whether a
run was stopped, on whichever instance it runs.
"""

from __future__ import annotations

from typing import Any


async def handler(ctx: Any) -> Any:
    body = ctx.request.body
    target = body.get("conversation_id") if isinstance(body, dict) else None
    if not isinstance(target, str) or not target:
        return {"error": 'send a JSON body like {"conversation_id": "..."}'}, 400
    result = ctx.utils.abort_active_run(target)
    return {
        "conversation_id": result.conversation_id or target,
        "aborted": result.aborted,
        "run_id": result.run_id,
    }
'''

HISTORY = '''"""GET /api/history -> recent conversations; ?conversation_id=... -> its messages.

A cloud function: a plain BaseHTTPRequestHandler whose store,
self.context.agent.store, is synchronous and holds the same data the agents
write. Optional query parameters: user_id (conversations of one user), limit.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit


class handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
        store = self.context.agent.store
        try:
            limit = int(query.get("limit", "50"))
            if "conversation_id" in query:
                cid = query["conversation_id"]
                messages = store.get_messages(conversation_id=cid, limit=limit)
                meta = store.get_conversation(conversation_id=cid)
                payload: Any = {
                    "conversation": meta.to_dict() if meta else None,
                    "messages": [m.to_dict() for m in messages],
                }
            else:
                page = store.list_conversations(limit=limit, user_id=query.get("user_id"))
                payload = {
                    "conversations": [c.to_dict() for c in page.items],
                    "next_cursor": page.next_cursor,
                }
        except ValueError as exc:
            self._send(400, {"error": str(exc)})
            return
        self._send(200, payload)

    def _send(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
'''

ENV_EXAMPLE = """# Copy to .env (or .env.local) and fill in to use a real model; without these
# the built-in echo model answers. Variables exported in your shell win over
# .env.local, which wins over .env.
# AI_GATEWAY_BASE_URL=https://api.openai.com/v1
# AI_GATEWAY_API_KEY=sk-...
# AI_GATEWAY_MODEL=gpt-4o-mini
"""

GITIGNORE = """.makers-store/
.env
.env.local
__pycache__/
"""

README = """# {name}

A Makers project made by `makers-store init`: a chat agent that remembers,
a streaming agent you can stop, and a cloud function listing history.

    makers-store serve            # http://127.0.0.1:8088, store in .makers-store/

    curl -s localhost:8088/chat -H 'makers-conversation-id: demo' -d '{{"message": "hi"}}'
    curl -s localhost:8088/chat -H 'makers-conversation-id: demo' -d '{{"message": "again"}}'
    curl -N localhost:8088/chat/stream -H 'makers-conversation-id: demo' \\
         -d '{{"message": "stream me"}}'
    curl -s localhost:8088/chat/stop -d '{{"conversation_id": "demo"}}'
    curl -s 'localhost:8088/api/history?conversation_id=demo'
    makers-store serve --instances 4   # each turn on another instance: memory still holds
    makers-store serve --seed seeds/   # every run starts with the conversations of seeds/
    makers-store snapshot save good    # later: makers-store snapshot restore good

| file | route |
|---|---|
| agents/chat/index.py | POST /chat |
| agents/chat/stream.py | POST /chat/stream (server-sent events) |
| agents/chat/stop.py | POST /chat/stop |
| agents/chat/_memory.py, agents/_model.py | private modules (never routed) |
| cloud-functions/api/history.py | GET /api/history |
| seeds/welcome.jsonl | a seed conversation, `welcome` (`makers-store export` writes more) |

Set AI_GATEWAY_BASE_URL and AI_GATEWAY_API_KEY (see .env.example) to use any
OpenAI-compatible model instead of the built-in echo model.
"""

#: ``seeds/welcome.jsonl``: one conversation as ``makers-store export`` writes
#: it, with the caller's message ids (seeding it again changes nothing).
SEED = "".join(
    json.dumps(record, separators=(",", ":")) + "\n"
    for record in (
        {"type": "header", "format": "makers-store-export", "version": 1},
        {"type": "conversation", "conversation_id": "welcome", "created_at": 1796400001000,
         "last_message_at": 1796400002000, "message_count": 2,
         "metadata": {"title": "Welcome (a seed fixture)"}, "user_ids": ["demo-user"],
         "next_seq": 2},
        {"type": "message", "conversation_id": "welcome", "message_id": "welcome-1",
         "role": "user", "content": "What can you do?", "created_at": 1796400001000,
         "metadata": None, "seq": 0},
        {"type": "message", "conversation_id": "welcome", "message_id": "welcome-2",
         "role": "assistant", "content": "I remember what was said here. Ask me something: "
         "this conversation is back as it was on every run.", "created_at": 1796400002000,
         "metadata": None, "seq": 1},
    )
)  # fmt: skip

FILES: dict[str, str] = {
    "agents/_model.py": MODEL,
    "agents/chat/_memory.py": MEMORY,
    "agents/chat/index.py": CHAT,
    "agents/chat/stream.py": STREAM,
    "agents/chat/stop.py": STOP,
    "cloud-functions/api/history.py": HISTORY,
    ".env.example": ENV_EXAMPLE,
    ".gitignore": GITIGNORE,
    "README.md": README,
    "seeds/welcome.jsonl": SEED,
}
