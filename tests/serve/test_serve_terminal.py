"""What ``serve`` prints on the developer's terminal (issue 23, items 3 and
13), read through pipes from a real process: no HTTP client can drive the
terminal through it, a broken route's traceback is printed once, and Ctrl-C
stops it promptly even with a Studio tab open."""

from __future__ import annotations

import http.client
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from makers_store.text import UNSAFE

from .harness import cli, free_port, write_project
from .piped import Piped

#: a file name holding U+202E, which would show the rest of its line reversed
BIDI_ROUTE = "abc\u202edef"
PROJECT = {
    "agents/broken.py": """
        import not_installed_anywhere  # fails at import

        async def handler(ctx):
            return {}
    """,
    "agents/shout.py": """
        async def handler(ctx):
            # project code logging what a client sent: a common sight
            print("got", ctx.request.body.get("message"), flush=True)
            return {"ok": True}
    """,
    f"agents/{BIDI_ROUTE}.py": """
        async def handler(ctx):
            return {}
    """,
}
#: what a client sends to colour, retitle and clear the developer's terminal
ATTACKS = ("\x1b[31mRED", "\x1b]0;pwned\x07", "\x1b[2J", "\u202eevil")


def send(port: int, request: bytes) -> bytes:
    """One raw HTTP/1.1 request (headers no client library would send), its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def post(port: int, path: str, body: str, conversation: bytes = b"c1") -> bytes:
    data = body.encode()
    return send(
        port,
        b"POST " + path.encode() + b" HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n"
        b"content-type: application/json\r\nmakers-conversation-id: " + conversation + b"\r\n"
        b"content-length: " + str(len(data)).encode() + b"\r\n\r\n" + data,
    )


def assert_safe(output: bytes) -> None:
    """No character a terminal obeys: not one ESC, BEL, U+202E... anywhere."""
    text = output.decode("utf-8")  # every byte is UTF-8 too
    found = UNSAFE.search(text.replace("\n", "").replace("\t", ""))
    assert found is None, f"raw {found.group()!r} in: {text[max(found.start() - 80, 0):][:200]!r}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Piped, int]]:
    root = tmp_path_factory.mktemp("terminal")
    made = cli("init", str(root / "demo"))
    assert made.returncode == 0, made.stderr
    write_project(root / "demo", PROJECT)
    port = free_port()
    server = Piped(["serve", str(root / "demo"), "--port", str(port), "--instances", "2"])
    try:
        server.wait_listening(port)
        server.wait_for(b"Ctrl+C stops")
        yield server, port
    finally:
        server.close()


def test_the_request_log_shows_a_clients_header_and_path_escaped(
    served: tuple[Piped, int],
) -> None:
    server, port = served
    for attack in ATTACKS:
        answer = post(port, "/chat", '{"message": "hi"}', conversation=attack.encode())
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    # a path arrives percent-decoded: %1b is an ESC, %0a a newline forging a log line
    forged = b"/x%1b%5b31m%0a12:00:00%20GET%20/forged"
    send(port, b"GET " + forged + b" HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
    server.wait_for(b"/forged -> 404")
    log = server.stderr.decode()
    for attack in ATTACKS:
        shown = attack.encode("unicode_escape").decode()  # \x1b, \u202e: as printed
        assert f"conversation={shown} " in log, log
    assert "GET /x\\x1b[31m\\n12:00:00 GET /forged -> 404" in log
    assert not re.search(r"^12:00:00 GET /forged", log, re.M)
    assert_safe(server.stdout + server.stderr)


def test_project_output_about_a_request_is_relayed_escaped(served: tuple[Piped, int]) -> None:
    server, port = served
    answer = post(port, "/shout", '{"message": "\\u001b]0;pwned\\u0007 and \\u202eevil"}')
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    server.wait_for(b"got ", stderr=False)
    relayed = rb"^\[instance \d\] got \\x1b\]0;pwned\\x07 and \\u202eevil$"
    assert re.search(relayed, server.stdout, re.M), server.text()
    assert_safe(server.stdout + server.stderr)


def test_the_route_table_is_one_safe_line_per_route(served: tuple[Piped, int]) -> None:
    server, _ = served
    lines = server.stdout.decode().splitlines()
    assert "  POST  /abc\\u202edef  agents/abc\\u202edef.py" in lines, lines
    assert all(line == line.rstrip() for line in lines), "trailing spaces"
    assert_safe(server.stdout)


def test_a_broken_route_prints_its_traceback_once(served: tuple[Piped, int]) -> None:
    """Once for the route, not once per instance and again per request."""
    server, port = served
    for _ in range(3):  # both instances take one, at least
        answer = post(port, "/broken", "{}")
        assert answer.startswith(b"HTTP/1.1 500"), answer[:200]
    said = "POST /broken: agents/broken.py failed to import: ModuleNotFoundError"
    server.wait_for(b"POST /broken -> 500", times=3)
    server.wait_for(said.encode(), times=3)
    out = server.stdout.decode() + server.stderr.decode()
    assert out.count("Traceback (most recent call last)") == 1, out
    assert out.count("import not_installed_anywhere") == 1, out
    # the other instance says it in a line, and each request names the failure
    assert re.search(
        r"^\[instance 2\] ERROR agents/broken.py failed to import \(ModuleNotFoundError: "
        r"No module named 'not_installed_anywhere'\); requests to /broken will answer 500$",
        out,
        re.M,
    ), out
    assert out.count(said) == 3, out


@pytest.mark.parametrize("tab_open", [False, True], ids=["idle", "studio-tab-open"])
def test_ctrl_c_stops_serve_within_a_second(tmp_path: Path, tab_open: bool) -> None:
    """A Studio tab keeps an event stream open: it used to hold the stop for
    the front's whole graceful period (3.8 s)."""
    made = cli("init", str(tmp_path / "demo"))
    assert made.returncode == 0, made.stderr
    port = free_port()
    server = Piped(["serve", str(tmp_path / "demo"), "--port", str(port)])
    try:
        server.wait_listening(port)
        server.wait_for(b"Ctrl+C stops")
        tab = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if tab_open:
            tab.request("GET", "/_studio/events")
            response = tab.getresponse()
            assert response.status == 200
            assert response.read1(100).startswith(b"event: ready")
        took = server.ctrl_c()
        tab.close()
    finally:
        server.close()
    assert server.process.returncode == 0, server.text()
    assert took < 1.5, f"took {took:.2f}s to stop"
    assert server.stderr.decode().splitlines()[-1].endswith(" stopped"), server.text()
    assert b"Traceback" not in server.stderr
