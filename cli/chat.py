"""``makers-store chat ROUTE``: talk to a served agent from the terminal.

Each line typed (or read from stdin when it is not a terminal) is sent as the
body templates read, ``{"message": "..."}`` (``--body-key``), with the
``makers-conversation-id`` header, so the agent keeps one conversation across
lines. A reply streamed as server-sent events is printed as it arrives: text
deltas as text, tool calls and results as one compact line each; a JSON or
text reply is printed whole. Ctrl-C during a reply asks the agent to stop (its
stop route, with the conversation named in the body and no conversation
header: a stop is not a run of the conversation, and with the header the
platform would route it to the busy instance as the conversation's next run),
or cancels the request when the agent has no stop route, and then waits for
the next line. Everything the agent sends is printed as text, control
characters escaped.

httpx comes with the ``serve`` extra; it is imported when the command runs.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .errors import CliError
from .options import examples
from .text import printable

if TYPE_CHECKING:
    import httpx

#: The header that names the conversation (the platform's, and serve's).
CONVERSATION_HEADER = "makers-conversation-id"
#: Frames that end a reply, that only keep a connection alive, and that carry a tool call.
DONE_EVENTS = frozenset({"done", "end", "complete", "completed", "finish", "finished"})
QUIET_EVENTS = frozenset({"ping", "heartbeat", "keepalive", "keep-alive"})
TOOL_EVENTS = frozenset({"tool_call", "tool_use", "tool", "function_call"})
RESULT_EVENTS = frozenset({"tool_result", "tool_output", "function_result"})
#: Keys whose string value is the text of a frame, in the order they are tried.
TEXT_KEYS = ("delta", "text", "content", "reply", "message", "output", "answer")
#: How much of a tool's arguments or result a compact line shows.
CLIP = 80
#: Seconds to wait for a server to accept a connection.
CONNECT_TIMEOUT_S = 10.0
#: Seconds a stopped agent has to end its reply before the request is cancelled.
STOP_WAIT_S = 10.0


def chat_command(
    route: Annotated[
        str,
        typer.Argument(
            metavar="ROUTE",
            help="The agent's route, e.g. /chat or /chat/stream.",
            show_default=False,
        ),
    ],
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            "-c",
            metavar="CONVERSATION_ID",
            help="The conversation to continue (default: a new one).",
        ),
    ] = None,
    url: Annotated[
        str, typer.Option("--url", metavar="URL", help="Where `makers-store serve` listens.")
    ] = "http://127.0.0.1:8088",
    body_key: Annotated[
        str,
        typer.Option(
            "--body-key", metavar="KEY", help="The body's key for each line: {KEY: line}."
        ),
    ] = "message",
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", metavar="USER_ID", help="Send user_id in every body."),
    ] = None,
    stop_route: Annotated[
        str | None,
        typer.Option(
            "--stop-route",
            metavar="ROUTE",
            help="Where Ctrl-C asks the agent to stop (default: ROUTE/stop, then the "
            "sibling stop route, then /stop; none found: the request is cancelled).",
        ),
    ] = None,
) -> None:
    """Chat with an agent `makers-store serve` runs: each line is one turn,
    replies stream as they come, Ctrl-C stops a reply. Reads stdin when it is
    not a terminal (echo hi | makers-store chat /chat)."""
    try:
        import httpx
    except ImportError:
        from makers_store.errors import missing_extra

        raise missing_extra("httpx", "serve") from None
    import secrets

    from .render import stderr

    if not route.startswith("/"):
        route = "/" + route
    cid = conversation or f"chat-{secrets.token_hex(4)}"
    session = ChatSession(
        base=url.rstrip("/"),
        route=route,
        conversation_id=cid,
        body_key=body_key,
        user_id=user,
        stop_routes=[stop_route] if stop_route else _stop_candidates(route),
    )
    interactive = sys.stdin.isatty()
    if interactive:
        hint = "" if conversation else f" (-c {cid} continues it)"
        stderr().print(
            f"conversation {cid}{hint}; Ctrl-C stops a reply, Ctrl-D (or Ctrl-C here) quits",
            style="dim",
        )
    elif not conversation:  # from a pipe: the new id, on stderr, so a script can go on
        stderr().print(f"conversation {cid} (-c {cid} continues it)")
    timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=None)
    with httpx.Client(timeout=timeout) as client:
        for line in _lines(interactive):
            if line.strip():
                session.turn(client, line)
    if session.failed and not interactive:
        raise CliError(f"{session.failed} of the turns failed")


def _stop_candidates(route: str) -> list[str]:
    """ROUTE/stop, the sibling stop route (/chat/stop for /chat/stream), /stop."""
    found = [f"{route.rstrip('/')}/stop"]
    parent = route.rstrip("/").rsplit("/", 1)[0]
    if parent:
        found.append(f"{parent}/stop")
    found.append("/stop")
    return list(dict.fromkeys(found))


def _lines(interactive: bool) -> Iterator[str]:
    """The user's lines: typed at a prompt (Ctrl-D or Ctrl-C there ends the
    chat), or read from stdin."""
    if not interactive:
        for line in sys.stdin:
            yield line.rstrip("\n").rstrip("\r")
        return
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:  # not on every platform; input() works without it
        pass
    # The prompt goes where a person looks and a pipe does not: with stdout a
    # terminal too, input() and readline draw it; else on stderr.
    on_stdout = sys.stdout.isatty()
    while True:
        try:
            if on_stdout:
                yield input("> ")
            else:
                sys.stderr.write("> ")
                sys.stderr.flush()
                yield input()
        except (EOFError, KeyboardInterrupt):
            sys.stderr.write("\n")
            return


class _Request(threading.Thread):
    """One turn's request, read on a thread of its own: the main thread only
    prints what arrives, so Ctrl-C (which Python delivers to the main thread)
    never lands inside the HTTP client, and the reply can still be read to
    its end after the agent was asked to stop."""

    def __init__(self, client: httpx.Client, url: str, body: Any, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self._client, self._url, self._body, self._headers = client, url, body, headers
        self._items: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._response: httpx.Response | None = None
        self._cancelled = threading.Event()

    def run(self) -> None:
        try:
            with self._client.stream(
                "POST", self._url, json=self._body, headers=self._headers
            ) as response:
                self._response = response
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code < 400 and kind == "text/event-stream":
                    for event, data in _events(response.iter_lines()):
                        if self._cancelled.is_set():
                            break
                        self._items.put(("frame", event, data))
                else:
                    response.read()
                    self._items.put(("whole", response.status_code, kind, response.text))
        except Exception as exc:  # shown by the main thread, unless it cancelled
            if not self._cancelled.is_set():
                self._items.put(("failed", exc))
        finally:
            self._items.put(("end",))

    def next(self, timeout: float) -> tuple[Any, ...] | None:
        try:
            return self._items.get(timeout=timeout)
        except queue.Empty:
            return None

    def cancel(self) -> None:
        """Drop the request: its connection is closed, and the agent sees that."""
        self._cancelled.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # closing under a reader may race it
                response.close()


@dataclass
class ChatSession:
    base: str
    route: str
    conversation_id: str
    body_key: str
    user_id: str | None
    stop_routes: list[str]
    failed: int = 0
    _out: Output = field(default_factory=lambda: Output())

    def turn(self, client: httpx.Client, line: str) -> None:
        """Send one line and print the reply as it arrives. Ctrl-C asks the
        agent to stop, then reads what it still sends (up to STOP_WAIT_S);
        a second Ctrl-C, or no stop route, cancels the request."""
        body: dict[str, Any] = {self.body_key: line}
        if self.user_id is not None:
            body["user_id"] = self.user_id
        headers = {
            CONVERSATION_HEADER: self.conversation_id,
            "accept": "text/event-stream, application/json;q=0.9, */*;q=0.5",
        }
        request = _Request(client, self.base + self.route, body, headers)
        request.start()
        stop_by: float | None = None
        try:
            while True:
                try:
                    item = request.next(timeout=0.1)
                    # checked on every pass: an agent that ignores the stop
                    # and keeps streaming must not hold the turn forever
                    if stop_by is not None and time.monotonic() > stop_by:
                        self._cancel(request)
                        return
                    if item is None:
                        continue
                    if item[0] == "end" or not self._show(item):
                        return
                except KeyboardInterrupt:
                    self._out.end_line()
                    if stop_by is not None or not self._stop(client):
                        self._cancel(request)
                        return
                    stop_by = time.monotonic() + STOP_WAIT_S
        finally:
            self._out.end_line()
            request.cancel()
            request.join(timeout=5)

    def _cancel(self, request: _Request) -> None:
        request.cancel()
        self._out.end_line()
        self._out.note("[cancelled]")

    def _show(self, item: tuple[Any, ...]) -> bool:
        """Print one thing the request brought; False when the reply is over."""
        if item[0] == "frame":
            return self._frame(item[1], item[2])
        if item[0] == "failed":
            import httpx

            self.failed += 1
            exc = item[1]
            why = str(exc) or type(exc).__name__
            if isinstance(exc, httpx.TransportError):
                self._out.error(f"cannot reach {self.base}{self.route}: {why} "
                                "(is `makers-store serve` running there?)")  # fmt: skip
            else:  # refused before it was sent (a conversation id no header can carry...)
                self._out.error(f"{self.route}: the request failed: {why}")
            return False
        _, status, kind, text = item
        if status >= 400:
            self.failed += 1
            self._out.error(f"{self.route} answered {status}: {_error_text(text)}")
        elif kind == "application/json":
            document = _json(text)
            shown = _text_of(document)
            self._out.text(shown if shown is not None else text)
        else:
            self._out.text(text)
        return False

    def _frame(self, event: str | None, data: str) -> bool:
        """Print one server-sent event; False when the reply is over."""
        name = (event or "").lower()
        if data.strip() == "[DONE]":
            return False
        value = _json(data)
        kind = str(value.get("type", "")).lower() if isinstance(value, dict) else ""
        if name in QUIET_EVENTS or kind in QUIET_EVENTS:
            return True
        if name == "error" or (isinstance(value, dict) and "error" in value and not name):
            self._out.end_line()
            self._out.error(f"the agent says: {_error_text(data)}")
            return True
        if name in DONE_EVENTS:
            if isinstance(value, dict) and (value.get("aborted") or value.get("stopped")):
                self._out.end_line()
                self._out.note("[stopped]")
            return False
        if name in TOOL_EVENTS or kind in TOOL_EVENTS:
            self._out.tool(_tool_line(value))
            return True
        if name in RESULT_EVENTS or kind in RESULT_EVENTS:
            self._out.tool("  ↳ " + _clip(_text_of(value) or data))
            return True
        text = _text_of(value) if value is not None else data
        if text is not None:
            self._out.text(text)
        elif name:  # a frame of the agent's own: shown, compactly
            self._out.tool(f"[{event}] {_clip(data)}")
        return True

    def _stop(self, client: httpx.Client) -> bool:
        """Ask the agent to stop: the first of the stop routes that exists
        (anything but 404 or 405), named in the body, without the conversation
        header. False when none does, or when the one that exists does not
        accept (an answer other than 2xx stopped nothing): the caller then
        cancels."""
        import httpx

        for path in self.stop_routes:
            try:
                answer = client.post(
                    self.base + path, json={"conversation_id": self.conversation_id}
                )
            except httpx.HTTPError:
                return False
            if answer.status_code not in (404, 405):
                self._out.note(f"[stopping: {path} answered {answer.status_code}]")
                return answer.is_success
        return False


class Output:
    """Replies on stdout as they arrive (text escaped for the terminal), notes
    and errors on stderr; tracks whether a line is open."""

    def __init__(self) -> None:
        self.open = False

    def text(self, text: str) -> None:
        if not text:
            return
        sys.stdout.write(printable(text))
        sys.stdout.flush()
        self.open = not text.endswith("\n")

    def end_line(self) -> None:
        if self.open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.open = False

    def tool(self, line: str) -> None:
        from .render import cell, stdout

        self.end_line()
        stdout().print(cell(line), style="dim")
        sys.stdout.flush()

    def note(self, line: str) -> None:
        from .render import stderr

        stderr().print(line, style="dim")

    def error(self, line: str) -> None:
        from .render import stderr

        stderr().print(f"error: {line}", style="red")


def _events(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """(event, data) of each server-sent event, as its blank line arrives."""
    event: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue  # a comment
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield event, "\n".join(data)


def _json(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _text_of(value: Any, depth: int = 0) -> str | None:
    """The text a frame or reply carries: a string, or the first string of
    the usual keys (``delta``, ``text``, ``reply``...), or an OpenAI chunk's
    ``choices[0].delta.content``, or an Anthropic ``delta.text``."""
    if isinstance(value, str):
        return value
    if depth > 4 or not isinstance(value, dict):
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return _text_of(choices[0].get("delta") or choices[0].get("message"), depth + 1)
    for key in TEXT_KEYS:
        found = value.get(key)
        if isinstance(found, str):
            return found
        if isinstance(found, dict):
            nested = _text_of(found, depth + 1)
            if nested is not None:
                return nested
    return None


def _tool_line(value: Any) -> str:
    """``⚙ name(arguments…)``: one line, whatever the tool call's shape."""
    if not isinstance(value, dict):
        return "⚙ " + _clip(str(value))
    function: dict[str, Any] = value["function"] if isinstance(value.get("function"), dict) else {}
    name = value.get("name") or value.get("tool") or function.get("name") or "tool"
    arguments = next(
        (value[key] for key in ("arguments", "input", "args") if key in value),
        function.get("arguments"),
    )
    if arguments is None:
        return f"⚙ {name}"
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"⚙ {name}({_clip(shown)})"


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CLIP else flat[: CLIP - 1] + "…"


def _error_text(body: str) -> str:
    value = _json(body)
    if isinstance(value, dict):
        for key in ("error", "message", "detail"):
            found = value.get(key)
            if isinstance(found, str):
                return _clip(found)
            if isinstance(found, dict) and isinstance(found.get("message"), str):
                return _clip(found["message"])
    return _clip(body) or "(no body)"


EPILOG = examples(
    "makers-store chat /chat/stream -c demo",
    "echo 'hello' | makers-store chat /chat --url http://127.0.0.1:9000",
)
