"""A fake model gateway on loopback that answers with what it was sent.

It speaks the two wire protocols Makers agents use: OpenAI Chat Completions
(``POST /v1/chat/completions``, the AI gateway's protocol, streamed or not)
and the Anthropic Messages API (``POST /v1/messages``, what the Claude Agent
SDK's CLI calls). Every answer is ``turns=N first=<first user text>
last=<last user text>``, so a test can tell from the reply alone whether the
model was given the conversation's earlier turns. A last user message that
contains ``slow`` is streamed as many small chunks over a few seconds, so a
test can stop it mid-stream; the server notices the client leaving.

Only the fields the agents under test read are produced; the rest of each
protocol is left out on purpose.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: How a ``slow`` answer is streamed: this many chunks, this far apart.
SLOW_CHUNKS = 60
SLOW_CHUNK_INTERVAL_S = 0.1


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or text blocks in either protocol."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return ""


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The texts of the user turns (tool results sent as user turns are skipped)."""
    texts = []
    for message in messages:
        if message.get("role") == "user":
            text = _text_of(message.get("content"))
            if text:
                texts.append(text)
    return texts


def echo(messages: list[dict[str, Any]]) -> str:
    texts = user_texts(messages)
    if not texts:
        return "turns=0"
    return f"turns={len(texts)} first={texts[0]} last={texts[-1]}"


class FakeModel:
    """The server's record of what it was asked (a test reads ``requests``)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self._lock = threading.Lock()
        self.base_url = ""

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": body})


def completion_id() -> str:
    """A Chat Completions answer's id, new each time."""
    return f"chatcmpl-{uuid.uuid4().hex[:16]}"


def _chunks(text: str, slow: bool) -> Iterator[tuple[str, float]]:
    if not slow:
        yield text, 0.0
        return
    yield text, 0.0
    for _ in range(SLOW_CHUNKS):
        yield ".", SLOW_CHUNK_INTERVAL_S


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _frame(self, data: Any, event: str | None = None) -> None:
        head = f"event: {event}\n" if event else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:
        self._json(404, {"error": {"message": f"no {self.path} here"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?", 1)[0]
        self.server.model.record(path, body)
        try:
            if path.endswith("/chat/completions"):
                self._chat_completions(body)
            elif path.endswith("/messages"):
                self._anthropic_messages(body)
            else:
                self._json(404, {"error": {"message": f"no {path} here"}})
        except (BrokenPipeError, ConnectionResetError):
            self.server.model.disconnects += 1
            self.close_connection = True

    def _chat_completions(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        text = echo(messages)
        slow = "slow" in (user_texts(messages) or [""])[-1]
        model = body.get("model", "fake")
        # one id per answer, as a real gateway gives (LangChain makes it the message's id)
        answer_id = completion_id()
        if not body.get("stream"):
            self._json(
                200,
                {
                    "id": answer_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )
            return
        self._start_stream()
        base = {"id": answer_id, "object": "chat.completion.chunk", "model": model}
        base["created"] = int(time.time())
        first = True
        for piece, pause in _chunks(text, slow):
            time.sleep(pause)
            delta: dict[str, Any] = {"content": piece}
            if first:
                delta["role"] = "assistant"
                first = False
            self._frame({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self._frame({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._frame("[DONE]")

    def _anthropic_messages(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        text = echo(messages)
        slow = "slow" in (user_texts(messages) or [""])[-1]
        model = body.get("model", "fake")
        usage = {"input_tokens": 1, "output_tokens": 1}
        if not body.get("stream"):
            self._json(
                200,
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        self._start_stream()
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        self._frame({"type": "message_start", "message": message}, "message_start")
        empty = {"type": "text", "text": ""}
        block = {"type": "content_block_start", "index": 0, "content_block": empty}
        self._frame(block, "content_block_start")
        for piece, pause in _chunks(text, slow):
            time.sleep(pause)
            delta = {"type": "text_delta", "text": piece}
            self._frame(
                {"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"
            )
        self._frame({"type": "content_block_stop", "index": 0}, "content_block_stop")
        end = {"stop_reason": "end_turn", "stop_sequence": None}
        self._frame(
            {"type": "message_delta", "delta": end, "usage": {"output_tokens": 1}}, "message_delta"
        )
        self._frame({"type": "message_stop"}, "message_stop")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: FakeModel, handler: type[_Handler] = _Handler) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.model = model


@contextmanager
def fake_model(handler: type[_Handler] = _Handler) -> Iterator[FakeModel]:
    """A running fake gateway answering with ``handler`` (a subclass may play
    more turns); ``model.base_url`` ends in ``/v1``."""
    model = FakeModel()
    server = _Server(model, handler)
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
