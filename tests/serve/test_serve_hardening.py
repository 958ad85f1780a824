"""The serve front under abuse: half-sent requests, too many connections, huge bodies,
a port in use, and an abort that arrives before its target run has started."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest

from makers_store.emulator.runtime.front.limits import (
    BODY_TIMEOUT_ENV,
    HEADER_TIMEOUT_ENV,
    MAX_CONNECTIONS_ENV,
)
from makers_store.emulator.runtime.platform_choices import AGENT_MAX_BODY_BYTES
from makers_store.emulator.runtime.worker.runs import ActiveRuns, Run

from .harness import cli, free_port, serving, write_project

PROJECT = {
    "agents/size.py": '''
        async def handler(ctx):
            return {"bytes": len(ctx.request.raw_body)}
    ''',
    # what it reports is decided when it starts: was it aborted before that?
    "agents/probe.py": '''
        async def handler(ctx):
            return {"signal_at_start": ctx.request.signal.is_set(), "run_id": ctx.run_id}
    ''',
    "agents/stop.py": '''
        async def handler(ctx):
            result = ctx.utils.abort_active_run(ctx.request.body["conversation_id"])
            return {"aborted": result.aborted, "run_id": result.run_id}
    ''',
}
TIMEOUT_S = 1.5
CAP = 12


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", PROJECT)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection.

    A connection closed with request bytes still unread is reset (RST): that
    is a close too.
    """
    data = b""
    try:
        while piece := sock.recv(65536):
            data += piece
    except ConnectionResetError:
        pass
    return data


def _post(port: int, path: str, body: bytes, cid: str = "") -> bytes:
    sock = _connect(port)
    head = f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n"
    head += f"makers-conversation-id: {cid}\r\n" if cid else ""
    sock.sendall(head.encode() + b"\r\n" + body)
    with sock:
        return _answer(sock)


def _json_of(answer: bytes) -> object:
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def _front_peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


LIMITS_ENV = {
    HEADER_TIMEOUT_ENV: str(TIMEOUT_S),
    BODY_TIMEOUT_ENV: str(TIMEOUT_S),
    MAX_CONNECTIONS_ENV: str(CAP),
}


@pytest.mark.slow
def test_half_sent_headers_are_evicted_or_timed_out(project: Path, tmp_path: Path) -> None:
    with serving(project, tmp_path / "serve.log", env=LIMITS_ENV) as server:
        half_open: list[socket.socket] = []
        try:
            _half_open_flood(server.port, half_open)
        finally:
            for sock in half_open:
                sock.close()


def _half_open_flood(port: int, half_open: list[socket.socket]) -> None:
    for _ in range(3 * CAP):  # past the cap: the oldest waiting ones are closed
        sock = _connect(port)
        half_open.append(sock)
        sock.sendall(b"POST /size HTTP/1.1\r\nhost: x\r\n")  # and never the blank line
    started = time.monotonic()
    assert _json_of(_post(port, "/size", b"{}")) == {"bytes": 2}
    assert time.monotonic() - started < TIMEOUT_S  # served at once, not after the timeout
    answers = [_answer(sock) for sock in half_open]
    waited = time.monotonic() - started
    evicted = [a for a in answers if a == b""]
    timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408 ")]
    assert len(evicted) >= 2 * CAP and len(evicted) + len(timed_out) == len(answers)
    assert timed_out and b"did not arrive within 1.5s" in timed_out[0]
    assert waited < TIMEOUT_S + 3
    assert _json_of(_post(port, "/size", b"[1]")) == {"bytes": 3}


@pytest.mark.slow
def test_busy_connections_past_the_cap_get_503_then_the_body_timeout(
    project: Path, tmp_path: Path
) -> None:
    # A longer body timeout than the other tests': on a loaded machine the front may
    # not have read every busy request's headers yet when the extra connection comes
    # (it is then served as a new connection and times out on its headers), so the
    # extra one is tried again while the busy ones are still inside their requests.
    env = {**LIMITS_ENV, BODY_TIMEOUT_ENV: "8"}  # under the sockets' 10 s timeout
    with serving(project, tmp_path / "serve.log", env=env) as server:
        busy: list[socket.socket] = []
        try:
            for _ in range(CAP):  # every connection inside a request: nothing to evict
                sock = _connect(server.port)
                busy.append(sock)
                sock.sendall(b"POST /size HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n{")
            time.sleep(0.5)
            answers = []
            for _ in range(4):
                with _connect(server.port) as extra:
                    answers.append(_answer(extra))
                if answers[-1].startswith(b"HTTP/1.1 503 "):
                    break
            refused = answers[-1]
            assert refused.startswith(b"HTTP/1.1 503 ") and b"too many connections" in refused
            for sock in busy:  # the body never completes: 408 after the body timeout
                answer = _answer(sock)
                assert answer.startswith(b"HTTP/1.1 408 "), answer
                assert b"no part of the request body arrived for 8s" in answer
        finally:
            for sock in busy:
                sock.close()
        assert _json_of(_post(server.port, "/size", b"{}")) == {"bytes": 2}
    assert "Traceback" not in server.log()


@pytest.mark.slow
def test_bodies_stream_through_the_front_and_oversized_ones_are_refused_unread(
    project: Path, tmp_path: Path
) -> None:
    with serving(project, tmp_path / "serve.log", "--store", "memory://") as server:
        before = _front_peak_kb(server.process.pid)
        size = 48 * 1024 * 1024
        body = b'"' + b"a" * (size - 2) + b'"'
        assert _json_of(_post(server.port, "/size", body)) == {"bytes": size}
        # buffered whole (as before), this body took the front's peak up by ~200 MB
        assert _front_peak_kb(server.process.pid) - before < 20_000

        sock = _connect(server.port)
        head = f"POST /size HTTP/1.1\r\nhost: x\r\ncontent-length: {AGENT_MAX_BODY_BYTES + 1}\r\n"
        sock.sendall(head.encode() + b"\r\n")  # no body sent: refused from the length alone
        with sock:
            refused = _answer(sock)
        assert refused.startswith(b"HTTP/1.1 413 ")
        assert _json_of(refused) == {
            "error": f"the request body is larger than {AGENT_MAX_BODY_BYTES} bytes, serve's limit"
        }

        sock = _connect(server.port)  # a chunked body is streamed (chunked) to the worker
        sock.sendall(b"POST /size HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
                     b"connection: close\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n")
        with sock:
            assert _json_of(_answer(sock)) == {"bytes": 5}


@pytest.mark.slow
@pytest.mark.parametrize("instances", ["1", "2"])
def test_abort_before_the_target_run_has_started_still_stops_it(
    project: Path, tmp_path: Path, instances: str
) -> None:
    """The target's body is still arriving (the front has dispatched it, the worker
    has not started the run) when the stop comes: it must still be stopped."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    log = tmp_path / "serve.log"
    with serving(project, log, "--store", store, "--instances", instances) as server:
        target = _connect(server.port)
        body = b'{"message": "hi"}'
        head = "POST /probe HTTP/1.1\r\nhost: x\r\nmakers-conversation-id: w\r\n"
        head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        target.sendall(head.encode() + body[:5])
        time.sleep(0.5)  # the front dispatches as soon as the headers are in
        stop = _json_of(_post(server.port, "/stop", b'{"conversation_id": "w"}', cid="w"))
        target.sendall(body[5:])
        with target:
            probe = _json_of(_answer(target))
    assert isinstance(stop, dict) and isinstance(probe, dict)
    assert probe["signal_at_start"] is True
    assert stop == {"aborted": True, "run_id": probe["run_id"]}


def test_pending_aborts_apply_at_start_and_skip_finished_runs() -> None:
    async def scenario() -> None:
        runs = ActiveRuns()
        done = Run("c", "run_done")
        runs.start(done)
        runs.finish(done)
        aborted = runs.abort("c", except_run="run_me",
                             dispatched={"run_later": 5.0, "run_done": 1.0, "run_me": 2.0})
        assert [(a.run_id, a.started) for a in aborted] == [("run_later", 5.0)]
        later = Run("c", "run_later")
        runs.start(later)
        assert later.signal.is_set() and later.reason == "aborted"
        other = Run("c", "run_other")
        runs.start(other)  # not named by the abort: untouched
        assert not other.signal.is_set()

    asyncio.run(scenario())


def test_port_in_use_fails_before_the_route_table(project: Path) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        result = cli("serve", str(project), "--port", str(port))
    assert result.returncode != 0
    assert f"port {port} is already in use" in result.stderr and "--port" in result.stderr
    assert "routes" not in result.stdout and "/probe" not in result.stdout


@pytest.mark.slow
def test_banner_names_the_real_host(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store, "--host", "0.0.0.0") as server:
        pass
    log = server.log()
    assert f"serving http://0.0.0.0:{server.port} (every interface; from this machine " \
        f"http://127.0.0.1:{server.port})" in log
    assert "--host 0.0.0.0 listens on every network interface" in log
