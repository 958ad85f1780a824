"""The project's frontend on serve's port: a real dev server, a built site, Vite's hot reload.

A dev server (``frontend_projects.DEV_SERVER``, a Node script named by
``scripts.dev``) takes what no agent or cloud function takes: HTTP relayed
both ways as it comes, WebSocket upgrades spliced, its output in serve's log.
Its crash leaves the agents served; serve stopping by SIGTERM, SIGINT or
SIGKILL leaves no process of its group. A built ``outputDirectory`` is
served with the platform's 404 rules. A real Vite dev server's hot reload
reaches a page open in Chromium through serve's port alone.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .frontend_projects import DEV_SERVER_PROJECT, STATIC_PROJECT
from .harness import Server, cli, pid_alive, serving, write_project

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
VITE_PROJECT = HERE / "vite-project"
needs_node = pytest.mark.skipif(shutil.which("npx") is None, reason="needs Node.js and npm")


def eventually(check: Callable[[], bool], within_s: float = 15.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


@pytest.fixture
def dev_project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project", DEV_SERVER_PROJECT)


# --- a WebSocket client, by hand (the front splices bytes: nothing is hidden) ----------


def ws_connect(port: int, path: str, headers: dict[str, str]) -> tuple[socket.socket, str]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        piece = sock.recv(1)
        assert piece, head
        head += piece
    return sock, head.decode()


def ws_send(sock: socket.socket, text: str) -> None:
    payload = text.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)


def ws_receive(sock: socket.socket) -> tuple[int, str]:
    def exactly(count: int) -> bytes:
        data = b""
        while len(data) < count:
            piece = sock.recv(count - len(data))
            assert piece, "the socket closed"
            data += piece
        return data

    first, length = exactly(2)
    return first & 0x0F, exactly(length & 0x7F).decode()


# --- a dev server ----------------------------------------------------------------------


def test_dev_server_answers_what_no_route_takes(dev_project: Path, tmp_path: Path) -> None:
    with serving(dev_project, tmp_path / "serve.log") as server, server.client() as client:
        page = client.get("/")
        assert page.status_code == 200 and "dev page GET /" in page.text
        assert not [name for name in page.headers if name.startswith("makers-")]
        agent = client.post("/chat", json={})
        assert agent.json()["agent"] == "chat" and "makers-run-id" in agent.headers
        assert client.get("/api/hello").text == "function answered"
        # an agent takes POST only: a page of that path is the frontend's
        assert "dev page GET /chat" in client.get("/chat").text
        # Next.js RSC and hot-reload requests go to the frontend whatever the routes say
        assert "dev page POST /chat?_rsc=1" in client.post("/chat?_rsc=1").text
        assert "dev page POST /chat?x=hmr" in client.post("/chat?x=hmr").text

        own = f"http://127.0.0.1:{server.port}"
        echo = client.post(
            "/echo?q=1", content=b"sent up",
            headers={"origin": own, "referer": own + "/page", "makers-internal-run-id": "x"},
        ).json()
        dev_port = int(echo["headers"]["host"].split(":")[1])
        assert echo["headers"]["host"] == f"localhost:{dev_port}"
        assert echo["headers"]["origin"] == f"http://localhost:{dev_port}"
        assert echo["headers"]["referer"] == f"http://localhost:{dev_port}/page"
        assert echo["headers"]["x-forwarded-for"] == "127.0.0.1"
        assert "makers-internal-run-id" not in echo["headers"]
        assert echo["method"] == "POST" and echo["url"] == "/echo?q=1"
        assert echo["body"] == "sent up" and echo["args"] == ["--mode", "test"]
        foreign = client.get("/echo", headers={"origin": "http://elsewhere.test"}).json()
        assert foreign["headers"]["origin"] == "http://elsewhere.test"  # not ours to vouch for

        def upload() -> Iterator[bytes]:
            yield b"chunked "
            yield b"upload"

        assert client.post("/echo", content=upload()).json()["body"] == "chunked upload"
        moved = client.get("/redirect")
        assert moved.headers["location"] == f"{own}/landing?from=redirect"

        # streamed as the dev server writes it: piece by piece, 300 ms apart
        arrivals: list[tuple[float, bytes]] = []
        with client.stream("GET", "/slow") as response:
            for piece in response.iter_raw():
                arrivals.append((time.monotonic(), piece))
        assert b"".join(piece for _, piece in arrivals) == (
            b"piece 0\npiece 1\npiece 2\npiece 3\nend\n"
        )
        assert len(arrivals) >= 4 and arrivals[-1][0] - arrivals[0][0] > 0.8
        # a client that leaves mid-answer: the dev server's connection is closed too
        with client.stream("GET", "/slow?pieces=100") as response:
            assert next(response.iter_raw()) == b"piece 0\n"
        eventually(lambda: "[frontend] slow answer abandoned" in server.log())

        # a WebSocket both ways, its subprotocol negotiated by the dev server
        sock, head = ws_connect(server.port, "/ws?token=1",
                                {"Origin": own, "Sec-WebSocket-Protocol": "chat, other"})
        with sock:
            assert head.startswith("HTTP/1.1 101 "), head
            assert "Sec-WebSocket-Protocol: chat" in head
            dev_origin = f"localhost:{dev_port}"
            assert ws_receive(sock) == (1, f"hello http://{dev_origin} {dev_origin}")
            for text in ("ping", "pong"):
                ws_send(sock, text)
                assert ws_receive(sock) == (1, f"echo {text}")
        # the page still answers on the same port after the socket is gone
        assert client.get("/").status_code == 200
    log = server.log()
    lines = log.splitlines()
    assert lines[0] == (
        f"app http://127.0.0.1:{server.port}/ (frontend: npx node dev-server.mjs --mode test "
        "(package.json scripts.dev))"
    ), log
    # its output, prefixed, with serve's port as the one to open
    assert f"[frontend] dev server listening on http://localhost:{server.port}/" in lines, log


def test_dev_server_crash_leaves_the_agents_served(dev_project: Path, tmp_path: Path) -> None:
    # its first start fails as when another program takes its port meanwhile: started again;
    # it listens late: the first page load waits for it
    env = {"DEV_TAKEN_ONCE": str(tmp_path / "taken"), "DEV_LISTEN_DELAY_MS": "1500"}
    with serving(dev_project, tmp_path / "serve.log", env=env) as server, server.client() as client:
        assert client.get("/").status_code == 200
        assert "was taken meanwhile; starting it again" in server.log()
        assert client.get("/crash").text == "bye"
        eventually(lambda: "exited with code 3" in server.log())
        gone = client.get("/")
        assert gone.status_code == 502
        assert gone.json() == {
            "error": "Bad Gateway", "message": "Frontend dev server is temporarily unavailable"
        }
        assert client.post("/chat", json={}).json()["agent"] == "chat"
    assert len(re.findall("exited with code", server.log())) == 1


def test_reload_routes_a_new_agent_past_the_frontend(dev_project: Path, tmp_path: Path) -> None:
    with serving(dev_project, tmp_path / "serve.log", "--reload") as server:
        with server.client() as client:
            pid = client.get("/echo").json()["pid"]
            assert "dev page POST /added" in client.post("/added", json={}).text
            write_project(dev_project, {"agents/added.py": """
                async def handler(ctx):
                    return "a new agent"
            """})
            eventually(lambda: client.post("/added", json={}).text == "a new agent")
            # the frontend's own files change nothing; its dev server is never restarted
            write_project(dev_project, {"src/app.js": "export const x = 1;\n"})
            time.sleep(1.5)
            assert client.get("/echo").json()["pid"] == pid


def _group_of(pid: int) -> list[int]:
    """Every live process in ``pid``'s process group."""
    group = os.getpgid(pid)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == group and pid_alive(int(entry)):
                    found.append(int(entry))
            except ProcessLookupError:
                pass
    return found


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_frontend_process_outlives_serve(
    dev_project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    server = Server(dev_project, tmp_path / "serve.log", (), (), {})
    try:
        server.wait_ready()
        with server.client() as client:
            dev_pid = client.get("/echo").json()["pid"]
        group = _group_of(dev_pid)
        assert dev_pid in group and len(group) >= 2  # npx (the leader) and node
        assert os.getpgid(dev_pid) != os.getpgid(server.process.pid)  # a group of its own
        server.stop(stop)
        deadline = time.monotonic() + 8
        while any(pid_alive(pid) for pid in group) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in group if pid_alive(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"frontend processes outlived serve ({stop.name}): {left}"
    finally:
        server.stop(signal.SIGKILL)
        for pid in server.worker_pids():  # a SIGKILLed serve cannot stop its workers itself
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_no_frontend_option_and_init_projects(dev_project: Path, tmp_path: Path) -> None:
    with serving(dev_project, tmp_path / "off.log", "--no-frontend") as server:
        with server.client() as client:
            assert client.get("/").status_code == 404
            assert "makers-run-id" in client.get("/").headers  # a worker's answer, as before
            assert client.post("/chat", json={}).status_code == 200
    assert not re.search(r"\[frontend\]|frontend:|^app http", server.log(), re.M), server.log()

    assert cli("init", str(tmp_path / "fresh")).returncode == 0
    with serving(tmp_path / "fresh", tmp_path / "init.log") as server:
        with server.client() as client:
            assert client.get("/").status_code == 404
            assert "makers-run-id" in client.get("/").headers
    assert not re.search(r"\[frontend\]|frontend:|^app http", server.log(), re.M), server.log()


def test_missing_node_modules_is_one_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", {
        "package.json": '{"scripts": {"dev": "vite"}, "devDependencies": {"vite": "6.3.5"}}',
        "agents/chat.py": "async def handler(ctx):\n    return 'agent here'\n",
    })
    with serving(project, tmp_path / "serve.log") as server, server.client() as client:
        assert client.post("/chat", json={}).text == "agent here"
        assert client.get("/").status_code == 404
    lines = [line for line in server.log().splitlines() if "npm install" in line]
    assert lines == [
        "warning: the frontend (npx vite) needs its npm packages and node_modules/ is missing: "
        f"run `npm install` in {project}, then restart serve (the agents are served meanwhile)"
    ], server.log()


# --- a built site ------------------------------------------------------------------------


def test_static_output_directory_with_the_platform_404_rules(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", STATIC_PROJECT)
    (tmp_path / "secret.txt").write_text("outside")
    with serving(project, tmp_path / "serve.log") as server, server.client() as client:
        index = client.get("/")
        assert (index.status_code, index.headers["content-type"]) == (200, "text/html")
        assert "the index" in index.text
        assert client.get("/about.html").text == "<p>about</p>"
        script = client.get("/assets/app.js?v=2")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert client.post("/chat", json={}).json()["agent"] == "chat"
        # not a file: 404 with index.html's body (no 404.html yet)
        for path in ("/nowhere", "/assets", "/../secret.txt", "/%2e%2e/secret.txt"):
            missing = client.get(path)
            assert (missing.status_code, missing.text) == (404, index.text), path
        (project / "dist" / "404.html").write_text("<p>no such page</p>")
        assert client.get("/nowhere").text == "<p>no such page</p>"
        (project / "dist" / "404.html").unlink()
        (project / "dist" / "index.html").unlink()
        page = client.get("/nowhere")
        assert page.status_code == 404 and "404 Not Found" in page.text
        assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert server.log().splitlines()[0] == (
        f"app http://127.0.0.1:{server.port}/ (frontend: the files of dist "
        "(edgeone.json outputDirectory))"
    )


# --- a real Vite dev server, in Chromium -------------------------------------------------


@needs_node
def test_vite_hot_reload_reaches_an_open_page(tmp_path: Path) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import sync_playwright

    from tests.node.harness import npm_ci
    from tests.studio.conftest import CHROMIUM, CHROMIUM_ARGS

    npm_ci(VITE_PROJECT)
    project = tmp_path / "vite"
    shutil.copytree(VITE_PROJECT, project, ignore=shutil.ignore_patterns("node_modules"))
    (project / "node_modules").symlink_to(VITE_PROJECT / "node_modules")
    with serving(project, tmp_path / "serve.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            console: list[str] = []
            connected = threading.Event()

            def seen(message: object) -> None:
                text = str(getattr(message, "text", ""))
                console.append(text)
                if "[vite] connected" in text:
                    connected.set()

            page.on("console", seen)
            message = page.locator("#message")
            page.goto(server.base_url + "/")
            message.filter(has_text="page ready").wait_for(timeout=20_000)
            # Sync Playwright delivers events only while one of its calls runs: waiting
            # on the Event alone would not see a "connected" logged after "page ready"
            # (it looked like a socket that never connected, about one load in three).
            deadline = time.monotonic() + 10
            while not connected.is_set() and time.monotonic() < deadline:
                page.wait_for_timeout(100)
            assert connected.is_set(), (console, server.log()[-3000:])
            page.click("#ask")  # the page calls the agent on its own origin
            page.locator("#reply").filter(has_text="hello vite").wait_for(timeout=10_000)
            page.evaluate("window.kept = 'no full reload'")

            # Written again if no update came: on a loaded machine Vite's file watcher
            # may still be scanning the project when the first write lands, and drop
            # it (seen once in a full run); what is tested is the update's way through
            # serve's port, not the watcher's start.
            red = "getComputedStyle(document.getElementById('message')).color === 'rgb(255, 0, 0)'"
            for attempt in range(3):
                (project / "src" / "style.css").write_text(
                    f"/* {attempt} */\n#message {{ color: rgb(255, 0, 0); }}\n"
                )
                try:
                    page.wait_for_function(red, timeout=5_000)
                    break
                except PlaywrightTimeoutError:
                    continue
            assert page.evaluate(red), (console, server.log()[-3000:])
            assert page.evaluate("window.kept") == "no full reload"  # a hot update, in place
            # the socket went through serve's port: Vite did not fall back to its own
            assert not [text for text in console if "failed to connect" in text], console
        finally:
            browser.close()


# --- reading the project, and the routing rules (no server) ------------------------------


def test_the_frontend_is_found_as_the_platform_finds_it(tmp_path: Path) -> None:
    from makers_store.emulator.runtime.project.frontend import (
        DevCommand,
        StaticSite,
        find_frontend,
        missing_tool,
    )

    def found(files: dict[str, str]) -> object:
        project = tmp_path / str(len(list(tmp_path.iterdir())))
        return find_frontend(write_project(project, files))

    scripts = '{"scripts": {"dev": "vite  --open", "start": "node server.js"}}'
    assert found({"package.json": scripts}) == DevCommand(
        ("npx", "vite", "--open"), "package.json scripts.dev"
    )
    assert found({"package.json": '{"scripts": {"start": "next start"}}'}) == DevCommand(
        ("npx", "next", "start"), "package.json scripts.start"
    )
    both = {"package.json": scripts, "edgeone.json": '{"devCommand": "npm run serve"}'}
    assert found(both) == DevCommand(("npm", "run", "serve"), "edgeone.json devCommand")
    # no dev or start script: the platform's command reads "npx undefined", which means none
    assert found({"package.json": '{"scripts": {"build": "vite build"}}'}) is None
    site = found({"edgeone.json": '{"outputDirectory": "out"}'})
    assert isinstance(site, StaticSite) and site.configured == "out"
    assert found({"agents/chat.py": "async def handler(ctx):\n    return 1\n"}) is None

    project = write_project(tmp_path / "tools", {"package.json": "{}"})
    assert missing_tool(project, DevCommand(("npx", "node", "x.js"), "")) is None
    assert "`no-such-program-here`, which is not on PATH" in (
        missing_tool(project, DevCommand(("no-such-program-here",), "")) or ""
    )
    # no packages declared, but a tool npx would fetch from the registry
    problem = missing_tool(project, DevCommand(("npx", "vite"), "package.json scripts.dev"))
    assert problem is not None and "neither in node_modules/.bin nor on PATH" in problem
    assert "run `npm install`" in problem
    itself = missing_tool(project, DevCommand(("npx", "edgeone", "pages", "dev"), "x"))
    assert itself is not None and "starts a dev server of agents" in itself


def test_hot_reload_and_rsc_requests_are_the_frontends() -> None:
    from makers_store.emulator.runtime.front.frontend import is_hmr, is_rsc

    for target in ("/_next/webpack-hmr?id=1", "/__vite_hmr", "/socket.io/?EIO=4", "/x/hmr"):
        assert is_hmr(target, websocket=False), target
    assert is_hmr("/_hmr_ws", websocket=True)
    assert not is_hmr("/page?_rsc=abc&hmr=1", websocket=False)
    assert not is_hmr("/?token=abc", websocket=True)  # Vite's socket: not on the CLI's list
    assert is_rsc("_rsc=1x") and is_rsc("a=1&_rsc=2") and not is_rsc("a_rsc=1")
