"""``makers-store chat`` against a served scaffold (issue 23, item 15): replies
stream as they arrive, the conversation is kept, Ctrl-C mid-reply calls the
agent's stop route (or cancels) and the next line still gets an answer;
non-interactive with stdin and at a terminal. Real processes throughout."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, default_sigint, run_process
from tests.serve.harness import Server, serving, write_project

pytestmark = pytest.mark.slow

#: Words in a message that makes the echo model stream for a few seconds (0.05 s a word).
LONG = " ".join(f"w{n}" for n in range(80))


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``makers-store init``'s project, served; plus an agent with tool frames."""
    root = tmp_path_factory.mktemp("chat")
    project = root / "demo"
    made = run_process("init", str(project))
    assert made.returncode == 0, made.stderr
    write_project(project, {"agents/frames.py": FRAMES, "agents/broken_stop.py": BROKEN_STOP})
    with serving(project, root / "serve.log") as server:
        yield server


FRAMES = """
async def handler(ctx):
    async def events():
        yield ctx.utils.sse({"name": "search", "arguments": {"q": "lisbon"}}, event="tool_call")
        yield ctx.utils.sse({"text": "3 results", "is_error": False}, event="tool_result")
        yield ctx.utils.sse({"type": "ping"}, event="ping")
        yield ctx.utils.sse({"delta": "red \\x1b[31mRED\\x1b]0;title\\x07 "}, event="text_delta")
        yield ctx.utils.sse({"delta": "done"}, event="text_delta")
        yield ctx.utils.sse({"stopped": False}, event="done")

    return ctx.utils.stream_sse(events())
"""


BROKEN_STOP = """
async def handler(ctx):
    return {"error": "the stop failed"}, 500
"""


def store_of(server: Server) -> makers_store.SyncContextStore:
    return makers_store.open_sync_store(f"sqlite:///{server.project}/.makers-store/store.db")


def chat(server: Server, *args: str, input: str) -> subprocess.CompletedProcess[str]:
    return run_process("chat", *args, "--url", server.base_url, input=input, timeout=120)


def test_lines_from_stdin_keep_one_conversation(scaffold: Server) -> None:
    run = chat(scaffold, "/chat/stream", "-c", "piped", input="hello there\nagain\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        "Echo #1: hello there\nEcho #2: again (your first message was: hello there)\n"
    )
    whole = chat(scaffold, "/chat", "-c", "piped", input="third\n")  # a JSON reply, same memory
    assert whole.stdout == "Echo #3: third (your first message was: hello there)\n"
    with store_of(scaffold) as store:
        roles = [m.role for m in store.get_messages(conversation_id="piped")]
    assert roles == ["user", "assistant"] * 3


def test_a_new_conversation_each_time_unless_named(scaffold: Server) -> None:
    first = chat(scaffold, "/chat/stream", input="one\n")
    second = chat(scaffold, "/chat/stream", input="two\n")
    assert first.stdout == "Echo #1: one\n" and second.stdout == "Echo #1: two\n"
    # from a pipe the new conversation's id is said on stderr (issue 32), to go on with -c
    said = re.fullmatch(r"conversation (chat-[0-9a-f]{8}) \(-c \1 continues it\)\n", first.stderr)
    assert said, first.stderr
    again = chat(scaffold, "/chat/stream", "-c", said.group(1), input="three\n")
    assert again.stdout == "Echo #2: three (your first message was: one)\n"
    assert again.stderr == ""


def test_errors_name_the_route_and_the_exit_code_says_so(scaffold: Server) -> None:
    wrong_key = chat(scaffold, "/chat", "--body-key", "msg", input="hi\n")
    assert wrong_key.returncode == 1
    assert "error: /chat answered 400: send a JSON body like" in wrong_key.stderr
    missing = chat(scaffold, "/nowhere", input="hi\n")
    assert missing.returncode == 1 and "/nowhere answered 404" in missing.stderr
    down = run_process("chat", "/chat", "--url", "http://127.0.0.1:9", input="hi\n")
    assert down.returncode == 1 and "cannot reach http://127.0.0.1:9/chat" in down.stderr


def test_tool_frames_are_compact_and_agent_text_is_escaped(scaffold: Server) -> None:
    run = chat(scaffold, "/frames", input="go\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        '⚙ search({"q": "lisbon"})',
        "  ↳ 3 results",
        "red \\x1b[31mRED\\x1b]0;title\\x07 done",
    ]


class Reader:
    """A child's stdout or stderr, read as it comes (raw reads, with a deadline)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.seen = fd, b""

    def until(self, needle: bytes, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"no {needle!r} in time; got {self.seen!r}"
            chunk = os.read(self.fd, 65536)
            assert chunk, f"closed before {needle!r}; got {self.seen!r}"
            self.seen += chunk
        return time.monotonic()


@contextmanager
def piped_child(server: Server, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``makers-store chat`` with its stdin, stdout and stderr on pipes; killed
    and its pipes closed whatever happens."""
    env = {k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"}
    child = subprocess.Popen(
        [*console_script(), "chat", *args, "--url", server.base_url],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=default_sigint,  # a suite run with SIGINT ignored still interrupts its child
    )  # fmt: skip
    try:
        yield child
    finally:
        close(child)


def close(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.kill()
    child.wait()
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def test_replies_stream_and_ctrl_c_stops_one_then_the_chat_goes_on(scaffold: Server) -> None:
    with piped_child(scaffold, "/chat/stream", "-c", "stopped") as child:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        out, err = Reader(child.stdout.fileno()), Reader(child.stderr.fileno())
        child.stdin.write(f"{LONG}\n".encode())
        child.stdin.flush()
        first = out.until(b"Echo #1: w0")
        out.until(b" w5 ")
        assert time.monotonic() - first < 3  # arriving word by word, not at the end
        child.send_signal(signal.SIGINT)
        err.until(b"[stopping: /chat/stop answered 200]")  # the sibling stop route
        err.until(b"[stopped]")  # the agent ended its reply, marked aborted
        child.stdin.write(b"after\n")
        child.stdin.flush()
        out.until(b"Echo #2: after (your first message was: " + LONG.encode() + b")\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0, err.seen
    with store_of(scaffold) as store:
        messages = store.get_messages(conversation_id="stopped")
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    partial = messages[1]
    assert partial.metadata == {"aborted": True}  # the agent was stopped, and kept its part
    assert isinstance(partial.content, str) and partial.content.startswith("Echo #1: w0")
    assert len(partial.content) < len(f"Echo #1: {LONG}")
    assert b"w79" not in out.seen.split(b"\n")[0]  # the first reply stopped early


@pytest.mark.parametrize(
    ("stop_route", "note"),
    [
        ("/no", None),  # no such route
        # a stop route that exists but answers 5xx stopped nothing: waiting for
        # the agent to end its reply would wait for the whole reply
        ("/broken_stop", b"[stopping: /broken_stop answered 500]"),
    ],
)
def test_ctrl_c_cancels_the_request_when_no_stop_route_takes_it(
    scaffold: Server, stop_route: str, note: bytes | None
) -> None:
    cid = "cancelled" + stop_route.replace("/", "-")
    with piped_child(scaffold, "/chat/stream", "-c", cid, "--stop-route", stop_route) as child:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        out, err = Reader(child.stdout.fileno()), Reader(child.stderr.fileno())
        child.stdin.write(f"{LONG}\n".encode())
        child.stdin.flush()
        out.until(b"Echo #1: w0")
        child.send_signal(signal.SIGINT)
        if note is not None:
            err.until(note)
        err.until(b"[cancelled]", timeout=10)
        child.stdin.write(b"next\n")
        child.stdin.close()
        out.until(b": next\n")  # answered (the cancelled turn never reached its memory)
        assert child.wait(timeout=60) == 0, err.seen
    assert b"w79" not in out.seen


def test_at_a_terminal_it_prompts_and_ctrl_d_quits(scaffold: Server) -> None:
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"}
    child = subprocess.Popen(
        [*console_script(), "chat", "/chat/stream", "--url", scaffold.base_url],
        stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    assert child.stdout is not None
    terminal, out = Reader(master), Reader(child.stdout.fileno())
    try:
        terminal.until(b"> ")
        assert b"conversation chat-" in terminal.seen and b"(-c chat-" in terminal.seen
        os.write(master, b"hi\n")
        out.until(b"Echo #1: hi\n")
        terminal.until(b"> ", timeout=30)
        os.write(master, b"\x04")  # Ctrl-D
        assert child.wait(timeout=60) == 0
    finally:
        os.close(master)
        close(child)


def test_without_httpx_it_names_the_extra(tmp_path: Path) -> None:
    program = (
        "import sys; sys.modules['httpx'] = None\n"
        "from makers_store.cli.main import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "chat", "/chat"], input="hi\n", capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == (
        "error: httpx is not installed; install it with: pip install 'makers-store[serve]'\n"
    )
