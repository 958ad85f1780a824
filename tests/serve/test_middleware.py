"""The project's middleware (``middleware.js`` / ``.ts``) under serve: real serve, real Node.

One serve answers most assertions (:data:`GUARDED`: an auth guard in front of
a Python and a Node agent, redirects, rewrites, header injection, a streamed
Response, a throwing middleware, a regular-expression matcher); a second one
runs a TypeScript middleware under --reload (string matcher, then none, so
every path); a Next.js project and a machine without Node need no Node host.
A browser signs in through a cookie-guarded page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from makers_store.emulator.runtime import wire
from makers_store.emulator.runtime.middleware.matching import Coverage, Matchers, url_pathname

from .harness import Server, cli, pid_alive, serving, write_project
from .middleware_projects import (
    GUARDED,
    NEXTJS,
    STREAM_PAUSE_MS,
    TYPESCRIPT,
    TYPESCRIPT_EVERYWHERE,
)

NODE = Path(wire.__file__).parent / "node"
COOKIE = {"cookie": "theme=dark; jwt_token=t0k3n"}


def host_pids(server: Server) -> list[int]:
    return [int(pid) for pid in re.findall(r"middleware\w*(?: \w+)*: \S+ \(pid (\d+)",
                                            server.log())]


def wait_for_log(server: Server, text: str, within_s: float = 10.0) -> None:
    """Wait until ``text`` is in the log (the host's output is relayed apart from answers)."""
    deadline = time.monotonic() + within_s
    while text not in server.log():
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{server.log()}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("guarded")
    project = write_project(root / "project", GUARDED)
    with serving(project, root / "serve.log") as server:
        yield server
    assert host_pids(server) and not any(pid_alive(pid) for pid in host_pids(server))


def test_the_auth_guard_answers_401_without_the_cookie_and_lets_the_agents_run_with_it(
    guarded: Server,
) -> None:
    with guarded.client() as client:
        for path in ("/chat", "/nodechat"):
            refused = client.post(path, json={})
            assert refused.status_code == 401, refused.text
            assert refused.json() == {"error": "sign in first"}
            assert "makers-instance" not in refused.headers  # no agent ran
        python = client.post("/chat", json={}, headers=COOKIE)
        node = client.post("/nodechat", json={}, headers=COOKIE)
    assert python.status_code == 200, python.text
    # next({headers}) sets request headers for the agent, from context.clientIp and context.env
    assert python.json() == {"agent": "python", "user": "user-42", "client_ip": "127.0.0.1",
                             "greeting": "hello from .env"}
    assert node.json() == {"agent": "node", "user": "user-42"}
    # the platform's helper also adds next()'s headers to the response
    assert python.headers["x-user-id"] == "user-42"
    wait_for_log(guarded, "POST /chat -> 401 (answered by the middleware)")


def test_redirects_are_307_unless_a_status_is_given(guarded: Server) -> None:
    with guarded.client() as client:
        default = client.get("/redirect/default")
        moved = client.get("/redirect/301")
    assert (default.status_code, default.headers["location"]) == (307, "/elsewhere")
    assert moved.status_code == 301
    assert moved.headers["location"] == f"{guarded.base_url}/elsewhere"


def test_rewrites_serve_another_path_unseen_by_the_client(guarded: Server) -> None:
    with guarded.client() as client:
        agent = client.post("/rewrite/agent", json={})
        function = client.get("/rewrite/function")
        away = client.get("/rewrite/away")
    assert agent.json() == {"agent": "echo", "path": "/echo", "user": None}
    assert function.json() == {"path": "/api/where", "from": "rewrite", "user": None}
    assert away.status_code == 502
    assert "https://example.com/x" in away.json()["error"]


def test_next_with_request_headers_reaches_a_cloud_function_and_adds_response_headers(
    guarded: Server,
) -> None:
    with guarded.client() as client:
        answer = client.get("/pass", headers={"x-user-id": "forged"})
    # next({request: {headers}}) replaced the client's; geo is {} locally, as in the CLI
    assert answer.json() == {"user": "passed", "geo": "{}", "urlInfo": "/pass"}
    wait_for_log(guarded, "a promise given to waitUntil failed (GET /pass)")
    assert answer.headers["x-middleware-saw"] == "GET"
    assert "x-middleware-next" not in answer.headers
    assert answer.headers["set-cookie"] == "seen=1; Path=/"


def test_matchers_path_patterns_regular_expressions_and_paths_not_covered(
    guarded: Server,
) -> None:
    with guarded.client() as client:
        assert client.get("/re/123").status_code == 418  # '^/re/\\d+$'
        assert client.get("/re/abc").status_code == 404  # not covered: the routes answer
        assert client.get("/look/1").status_code == 418  # tested by the host, in JavaScript
        assert client.get("/look/x").status_code == 404
        assert client.post("/chat/any/depth", json={}).status_code == 401  # '/chat/:path*'
        assert client.post("/echo", json={}).json()["user"] is None  # covered by no entry
        # the platform tests the expression without the "i" flag: case counts
        assert client.post("/CHAT", json={}).status_code == 404
        # dot segments cannot slip a guarded path past the matcher
        assert client.post("/x/%2e%2e/chat", json={}).status_code == 401


def test_a_streamed_response_arrives_piece_by_piece(guarded: Server) -> None:
    started = time.perf_counter()
    arrivals: list[tuple[float, bytes]] = []
    with guarded.client() as client, client.stream("GET", "/stream") as answer:
        assert answer.status_code == 200
        for piece in answer.iter_raw():
            arrivals.append((time.perf_counter() - started, piece))
    assert b"".join(piece for _, piece in arrivals) == b"first\nsecond\n"
    first_at = next(at for at, piece in arrivals if b"first" in piece)
    assert first_at < STREAM_PAUSE_MS / 1000 * 0.75, arrivals
    assert arrivals[-1][0] >= STREAM_PAUSE_MS / 1000 * 0.9


def test_a_middleware_that_throws_is_logged_and_the_request_goes_on(guarded: Server) -> None:
    with guarded.client() as client:
        answer = client.get("/throw")
    assert (answer.status_code, answer.text) == (200, "the route ran")
    wait_for_log(guarded, "middleware.js threw on GET /throw")
    wait_for_log(guarded, "Error: the middleware broke")


def test_node_built_ins_draw_one_warning(guarded: Server) -> None:
    warnings = [line for line in guarded.log().splitlines()
                if "may not run on the platform" in line]
    assert len(warnings) == 1, warnings
    assert "'path'" in warnings[0] and "process.exit" in warnings[0]


def test_a_host_that_dies_is_reported_and_started_again(guarded: Server) -> None:
    with guarded.client() as client:
        crashed = client.get("/crash")
        assert crashed.status_code == 502  # refused, not let through
        assert client.post("/chat", json={}).status_code == 401  # waits for the new host
        assert client.post("/chat", json={}, headers=COOKIE).json()["user"] == "user-42"
    wait_for_log(guarded, "exited with code 7")
    wait_for_log(guarded, "middleware running again: middleware.js")


def test_a_typescript_middleware_reloads_when_it_changes(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", TYPESCRIPT)
    with serving(project, tmp_path / "serve.log", "--reload") as server, server.client() as client:
        only = client.get("/only")
        assert (only.status_code, only.text) == (203, "typescript saw /only")
        assert client.post("/echo", json={}).json() == {"agent": "echo", "path": "/echo"}
        first = host_pids(server)
        (project / "src" / "middleware.ts").write_text(TYPESCRIPT_EVERYWHERE, encoding="utf-8")
        deadline = time.monotonic() + 30
        while client.post("/echo", json={}).status_code != 202:
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.2)
        assert client.get("/only").text == "everywhere now"
        (project / "src" / "middleware.ts").write_text("export const broken = ;\n",
                                                       encoding="utf-8")
        deadline = time.monotonic() + 30
        while "the previous middleware keeps running" not in server.log():
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.2)
        assert client.get("/anything").status_code == 202
        (project / "src" / "middleware.ts").unlink()
        deadline = time.monotonic() + 30
        while client.post("/echo", json={}).status_code != 200:
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.2)
        wait_for_log(server, "no middleware any more")
    pids = host_pids(server)
    assert len(pids) == 2 and not any(pid_alive(pid) for pid in [*first, *pids])


def test_a_nextjs_projects_middleware_is_left_to_nextjs(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", NEXTJS)
    with serving(project, tmp_path / "serve.log") as server, server.client() as client:
        assert client.post("/echo", json={}).json() == {"agent": "echo"}
    log = server.log()
    assert log.count("a Next.js project's middleware is Next.js's own") == 1
    assert not host_pids(server)


def test_a_middleware_without_node_stops_serve_with_one_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", {
        "middleware.js": "export function middleware() {}\n",
        "agents/echo.py": "async def handler(ctx):\n    return {}\n",
    })
    done = cli("serve", str(project), "--port", "0",
               env={"PATH": "/nonexistent", "MAKERS_STORE_NODE": ""})
    assert done.returncode != 0
    assert "Node.js is needed to run middleware.js" in done.stderr
    assert "it may guard the app" in done.stderr


def test_the_front_and_the_host_agree_on_the_wire() -> None:
    text = (NODE / "middleware_host.mjs").read_text(encoding="utf-8")
    constants = dict(re.findall(r"^const (\w+) = '([^']*)';$", text, re.MULTILINE))
    assert constants["SETTINGS_ENV"] == wire.MIDDLEWARE_SETTINGS_ENV
    assert constants["READY_MARKER"].encode() == wire.MIDDLEWARE_READY_MARKER
    assert constants["DECISION_HEADER"].encode() == wire.MIDDLEWARE_DECISION_HEADER
    assert constants["TOKEN_HEADER"] == wire.TOKEN_HEADER
    assert constants["RUN_PATH"] == wire.MIDDLEWARE_RUN_PATH
    assert f"const LOAD_FAILED = {wire.MIDDLEWARE_LOAD_FAILED};" in text


def _matchers(matcher: object) -> Matchers:
    """The host's own matcher list for ``matcher``, as Node computes it."""
    module = json.dumps((NODE / "middleware_matcher.mjs").as_uri())
    script = (
        f"import {{ normalizeMatcher }} from {module};"
        f"process.stdout.write(JSON.stringify(normalizeMatcher({json.dumps(matcher)})));"
    )
    done = subprocess.run([os.environ.get("MAKERS_STORE_NODE") or "node", "--input-type=module",
                           "-e", script], capture_output=True, text=True, timeout=30, check=True)
    return Matchers(json.loads(done.stdout))


@pytest.mark.parametrize(
    ("matcher", "covered", "not_covered"),
    [
        (None, ["/", "/a/b", "/a/"], ["//a"]),  # every route by default ('/:path*')
        ([], ["/x"], []),
        ("*", ["/", "//a"], []),
        ("/about", ["/about", "/about/"], ["/about/x", "/About", "/aboutx"]),
        (["/chat/:path*", "/stop/:id"], ["/chat", "/chat/a/b", "/stop/1"], ["/stop", "/x"]),
        ({"source": "/user/:id(\\d+)"}, ["/user/12"], ["/user/ab"]),
        ("/file{.:ext}?", ["/file", "/file.txt"], ["/files"]),
        ("/api/.*", ["/api/x", "/v1/api/x"], ["/apix"]),  # not a pattern: an unanchored regex
        ("^/user/\\d+$", ["/user/7"], ["/user/7/x"]),
        ("^/(?<lang>en|fr)/\\k<lang>$", ["/en/en"], ["/en/fr"]),  # JS syntax, in Python
        ("(unbalanced", ["(unbalanced"], ["/unbalanced"]),  # JS cannot compile it: equality
    ],
)
def test_each_matcher_form_covers_what_the_platform_covers(
    matcher: object, covered: list[str], not_covered: list[str]
) -> None:
    matchers = _matchers(matcher)
    for path in covered:
        assert matchers.covers(path.encode()) is Coverage.YES, (matcher, path)
    for path in not_covered:
        assert matchers.covers(path.encode()) is Coverage.NO, (matcher, path)


def test_an_expression_only_javascript_reads_is_left_to_the_host() -> None:
    # a lookbehind of varying width: JavaScript compiles it, Python's re does not
    assert _matchers("^/(?<=/a+)b$").covers(b"/ab") is Coverage.ASK


def test_paths_are_tested_as_the_url_parser_sees_them() -> None:
    assert url_pathname(b"/a/./b/../c") == "/a/c"
    assert url_pathname(b"/a/%2E%2e/b") == "/b"
    assert url_pathname(b"/a/..") == "/"
    assert url_pathname(b"/a\\b") == "/a/b"
    assert url_pathname(b'/{x}"') == "/%7Bx%7D%22"
    assert url_pathname("/é".encode()) == "/%C3%A9"


def test_a_browser_signs_in_through_the_cookie_guarded_page(guarded: Server) -> None:
    from playwright.sync_api import sync_playwright

    from tests.studio.conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{guarded.base_url}/app")
            assert page.url == f"{guarded.base_url}/login"  # redirected: no cookie yet
            page.click("#sign-in")
            page.wait_for_url(f"{guarded.base_url}/app")
            page.wait_for_function(
                "document.getElementById('who').textContent === 'signed in as user-42'",
                timeout=10_000,
            )
        finally:
            browser.close()


def test_the_files_and_names_the_platform_takes(tmp_path: Path) -> None:
    from makers_store.emulator.runtime.project.middleware_file import find_middleware, uses_nextjs

    project = write_project(tmp_path, {"src/proxy.ts": "export function proxy() {}\n"})
    assert find_middleware(project) == project / "src" / "proxy.ts"
    write_project(tmp_path, {"src/middleware.js": "export function middleware() {}\n"})
    assert find_middleware(project) == project / "src" / "middleware.js"  # the names first
    write_project(tmp_path, {"proxy.js": "export function proxy() {}\n"})
    assert find_middleware(project) == project / "proxy.js"  # then ./ before src/
    assert not uses_nextjs(project)  # src/ alone is not Next.js
    write_project(tmp_path, {"package.json": '{"devDependencies": {"next": "15"}}'})
    assert uses_nextjs(project)  # next beside src/
    assert uses_nextjs(write_project(tmp_path / "other", {"next.config.mjs": "export default {}"}))


def test_a_middleware_that_cannot_load_stops_serve(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", {
        "middleware.ts": "export const notAFunction = 1;\n",
        "agents/echo.py": "async def handler(ctx):\n    return {}\n",
    })
    done = cli("serve", str(project), "--port", "0")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "[middleware] middleware: middleware.ts exports no function named middleware" in output
    assert "the middleware middleware.ts cannot be loaded" in output
    assert "instance 1 ready" not in output  # before any worker started
