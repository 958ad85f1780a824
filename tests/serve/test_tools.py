"""``ctx.tools`` / ``ctx.sandbox`` under serve, in process: the real local tools.

Each tool runs for real against a workspace in ``tmp_path``: files on disk,
subprocesses, an HTTP GET to a loopback server. Framework shapes are in
test_tools_frameworks.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from makers_store.emulator.runtime.errors import PlatformOnlyError
from makers_store.emulator.runtime.tools import (
    LocalSandbox,
    ToolArgumentError,
    ToolError,
    ToolFileNotFoundError,
    ToolsDisabledError,
    Workspace,
    build_toolkit,
    processes,
    web,
)
from makers_store.emulator.runtime.tools.catalog import SPECS
from makers_store.emulator.runtime.tools.toolkit import Toolkit
from makers_store.emulator.runtime.tools.workspace import WORKSPACES_DIR, folder_name

from .harness import pid_alive

ALL_NAMES = [
    "commands", "files_read", "files_write", "files_list", "files_exists", "files_remove",
    "files_make_dir", "browser_fetch", "browser_screenshot", "browser_click", "browser_type",
    "browser_evaluate", "code_interpreter", "web_search",
]  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.for_conversation(tmp_path / "project", "conv-1", "run_1")


@pytest.fixture
def toolkit(workspace: Workspace) -> Toolkit:
    return build_toolkit(None, workspace, True, {})


async def call(toolkit: Toolkit, name: str, **args: Any) -> Any:
    return await toolkit.get(name).execute(args)


def snapshot(path: Path) -> bytes | None:
    """The bytes of a file outside the workspace (None if absent), to see it is untouched."""
    return path.read_bytes() if path.exists() else None


def found(root: Path, name: str) -> list[Path]:
    return list(root.rglob(name))


# --- workspace ------------------------------------------------------------------


HOSTILE_IDS = [
    "../../etc", "/", ".", "..", "a/b", "a" * 256, "😀" * 256, "\x00\n\t", "\ud800x",
    "ABC", "abc", "con", "-rf", " ", "c-abc", "r-abc", "..%2F..",
]  # fmt: skip


def test_workspace_names_are_bounded_safe_and_distinct(tmp_path: Path) -> None:
    names = [folder_name(cid, "run_1") for cid in HOSTILE_IDS]
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_-]+", name), name
        assert len(name) <= 2 + 32 + 1 + 32 + 1
    # distinct even on a case-insensitive filesystem
    assert len({name.lower() for name in names}) == len(HOSTILE_IDS)
    for cid in HOSTILE_IDS:
        ws = Workspace.for_conversation(tmp_path, cid, "run_1")
        assert ws.ensure().parent == (tmp_path / WORKSPACES_DIR).resolve()
    assert folder_name("same", "run_1") == folder_name("same", "run_2")  # per conversation


def test_without_a_conversation_each_run_has_its_own_folder() -> None:
    first, second = folder_name("", "run_1"), folder_name("", "run_2")
    assert first != second
    assert first.startswith("r-") and folder_name("run_1", "x").startswith("c-")
    assert first != folder_name("run_1", "")  # a conversation named like a run


# --- files ----------------------------------------------------------------------


async def test_file_tools_round_trip(toolkit: Toolkit, workspace: Workspace) -> None:
    written = await call(toolkit, "files_write", path="/tmp/notes/a.txt", content="héllo\n")
    assert written == {"path": "/tmp/notes/a.txt", "bytesWritten": 7}
    assert (workspace.root / "tmp/notes/a.txt").read_text(encoding="utf-8") == "héllo\n"
    assert await call(toolkit, "files_read", path="tmp/notes/a.txt") == {
        "path": "tmp/notes/a.txt",
        "content": "héllo\n",
    }
    assert (await call(toolkit, "files_exists", path="/tmp/notes/a.txt"))["exists"] is True
    listing = await call(toolkit, "files_list", path="/tmp/notes")
    assert listing["entries"] == [
        {"name": "a.txt", "path": "/tmp/notes/a.txt", "type": "file", "size": 7}
    ]
    assert (await call(toolkit, "files_make_dir", path="/data/x"))["created"] is True
    assert (await call(toolkit, "files_make_dir", path="/data/x"))["created"] is False
    assert (await call(toolkit, "files_remove", path="/tmp/notes"))["removed"] is True
    assert (await call(toolkit, "files_exists", path="/tmp/notes/a.txt"))["exists"] is False
    missing = await call(toolkit, "files_read", path="/tmp/notes/a.txt")
    assert missing == {"error": "no such file or directory: /tmp/notes/a.txt"}


async def test_file_tools_are_text_only(toolkit: Toolkit, workspace: Workspace) -> None:
    (workspace.ensure() / "blob.bin").write_bytes(b"\xff\xfe\x00")
    result = await call(toolkit, "files_read", path="/blob.bin")
    assert "not UTF-8 text" in result["error"] and "base64" in result["error"]
    result = await call(toolkit, "files_write", path="/x.bin", content=[1, 2])
    assert result["error"].startswith("content must be a string")
    result = await call(toolkit, "files_write", path="/x.txt", content="\ud800")
    assert "lone surrogate" in result["error"]
    assert not (workspace.root / "x.txt").exists()


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "/../outside.txt"])
async def test_dot_dot_cannot_climb_out(toolkit: Toolkit, tmp_path: Path, path: str) -> None:
    result = await call(toolkit, "files_write", path=path, content="x")
    assert "climbs above the workspace root" in result["error"]
    assert path in result["error"]
    assert not found(tmp_path, "outside.txt")


async def test_absolute_paths_stay_inside(toolkit: Toolkit, workspace: Workspace) -> None:
    before = snapshot(Path("/etc/passwd"))
    assert await call(toolkit, "files_read", path="/etc/passwd") == {
        "error": "no such file or directory: /etc/passwd"
    }
    await call(toolkit, "files_write", path="/etc/passwd", content="mine")
    assert (workspace.root / "etc/passwd").read_text(encoding="utf-8") == "mine"
    assert snapshot(Path("/etc/passwd")) == before


async def test_symlinks_cannot_lead_out(
    toolkit: Toolkit, workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret", encoding="utf-8")
    root = workspace.ensure()
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "dangling").symlink_to(outside / "new.txt")
    for name, args in [
        ("files_read", {"path": "/link/secret.txt"}),
        ("files_write", {"path": "/link/secret.txt", "content": "overwritten"}),
        ("files_write", {"path": "/dangling", "content": "created"}),
        ("files_list", {"path": "/link"}),
        ("files_remove", {"path": "/link/secret.txt"}),
        ("commands", {"cmd": "pwd", "cwd": "/link"}),
    ]:
        result = await toolkit.get(name).execute(args)
        assert "outside the workspace through a symlink" in result["error"], (name, result)
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "secret"
    assert not (outside / "new.txt").exists()
    # a link that stays inside is followed
    (root / "tmp").mkdir()
    (root / "inner").symlink_to(root / "tmp", target_is_directory=True)
    assert (await call(toolkit, "files_write", path="/inner/ok.txt", content="ok"))[
        "bytesWritten"
    ] == 2
    assert (root / "tmp/ok.txt").read_text(encoding="utf-8") == "ok"


async def test_bad_paths_are_clear_errors(toolkit: Toolkit) -> None:
    assert (await call(toolkit, "files_read"))["error"] == (
        "path must be a non-empty string, not None"
    )
    assert "NUL" in (await call(toolkit, "files_read", path="a\x00b"))["error"]
    assert "root" in (await call(toolkit, "files_remove", path="/"))["error"]
    assert "is a directory" in (await call(toolkit, "files_read", path="/"))["error"]


# --- commands -----------------------------------------------------------------


async def test_commands_run_in_the_workspace(toolkit: Toolkit, workspace: Workspace) -> None:
    await call(toolkit, "files_make_dir", path="/sub")
    result = await call(
        toolkit, "commands", cmd='pwd; echo "$GREETING" >&2; echo made > f.txt; exit 3',
        cwd="/sub", env={"GREETING": "hi"}, timeout=10,
    )  # fmt: skip
    assert result == {
        "stdout": f"{(workspace.ensure() / 'sub')}\n",
        "stderr": "hi\n",
        "exitCode": 3,
    }
    assert (workspace.root / "sub/f.txt").read_text(encoding="utf-8") == "made\n"


async def test_commands_do_not_inherit_serve_secrets(
    toolkit: Toolkit, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AI_GATEWAY_API_KEY", "sk-secret")
    result = await call(toolkit, "commands", cmd="env")
    assert "sk-secret" not in result["stdout"]
    assert f"HOME={workspace.ensure()}\n" in result["stdout"]
    assert "PATH=" in result["stdout"]


async def test_commands_are_killed_at_their_timeout(toolkit: Toolkit) -> None:
    started = time.monotonic()
    result = await call(toolkit, "commands", cmd="echo before; sleep 30; echo after", timeout=0.5)
    assert time.monotonic() - started < 5
    assert result["stdout"] == "before\n"
    assert result["exitCode"] == processes.TIMEOUT_EXIT_CODE
    assert result["error"] == "the command ran longer than 0.5 s and was killed"


async def test_a_cancelled_command_leaves_no_process(
    toolkit: Toolkit, workspace: Workspace
) -> None:
    task = asyncio.ensure_future(
        call(toolkit, "commands", cmd="sleep 30 & echo $! > pid; wait", timeout=30)
    )
    pid_file = workspace.root / "pid"
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if not pid_alive(pid):
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"process {pid} outlived the cancelled command")


async def test_command_output_is_capped(toolkit: Toolkit, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "MAX_OUTPUT_BYTES", 1000)
    result = await call(toolkit, "commands", cmd="head -c 5000 /dev/zero | tr '\\0' x")
    assert result["stdout"].startswith("x" * 1000 + "\n[makers-store: output cut at 1000 bytes")
    assert "4000 more dropped" in result["stdout"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "cmd must be a non-empty string"),
        ({"cmd": "true", "timeout": 5000}, "timeout is in seconds and must be > 0 and <= 3600"),
        ({"cmd": "true", "timeout": "5"}, "timeout must be a number of seconds"),
        ({"cmd": "true", "env": {"A": 1}}, "env must be an object of string values"),
        ({"cmd": "true", "cwd": "/nope"}, "cwd '/nope' is not a directory"),
    ],
)
async def test_command_arguments_are_checked(
    toolkit: Toolkit, args: dict[str, Any], message: str
) -> None:
    assert message in (await toolkit.commands.execute(args))["error"]


# --- code_interpreter -----------------------------------------------------------


async def test_code_interpreter_python(toolkit: Toolkit) -> None:
    ok = await call(toolkit, "code_interpreter", language="python", code="print(6 * 7)")
    assert ok == {"results": [], "logs": {"stdout": ["42\n"], "stderr": []}, "error": None}
    failed = await call(toolkit, "code_interpreter", language="python", code="print(1)\n1/0")
    assert failed["logs"]["stdout"] == ["1\n"]
    assert failed["error"]["name"] == "ZeroDivisionError"
    assert failed["error"]["value"] == "division by zero"
    assert "Traceback" in failed["error"]["traceback"]


async def test_code_interpreter_bash_and_timeout(toolkit: Toolkit) -> None:
    ok = await call(toolkit, "code_interpreter", language="bash", code="echo $((2 + 3))")
    assert ok["logs"]["stdout"] == ["5\n"] and ok["error"] is None
    bad = await call(toolkit, "code_interpreter", language="bash", code="echo no >&2; exit 4")
    assert bad["error"] == {
        "name": "ExitError",
        "value": "exited with status 4",
        "traceback": "no\n",
    }
    slow = await call(
        toolkit, "code_interpreter", language="python", code="import time; time.sleep(30)",
        timeout=0.5,
    )  # fmt: skip
    assert slow["error"]["name"] == "TimeoutError"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
async def test_code_interpreter_javascript(toolkit: Toolkit) -> None:
    ok = await call(toolkit, "code_interpreter", language="javascript", code="console.log(2 ** 10)")
    assert ok["logs"]["stdout"] == ["1024\n"] and ok["error"] is None


async def test_code_interpreter_javascript_without_node(
    toolkit: Toolkit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = await call(toolkit, "code_interpreter", language="javascript", code="1")
    assert result["error"] == (
        "code_interpreter language 'javascript' is not available under makers-store serve, "
        "because node is not on PATH"
    )


async def test_code_interpreter_r_is_not_available(toolkit: Toolkit) -> None:
    result = await call(toolkit, "code_interpreter", language="r", code="1 + 1")
    assert result["error"].startswith(
        "code_interpreter language 'r' is not available under makers-store serve, because"
    )
    unknown = await call(toolkit, "code_interpreter", language="cobol", code="x")
    assert unknown["error"].startswith("language must be one of python, javascript, r, bash")


# --- browser, web_search --------------------------------------------------------


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("location", "/page")
            self.end_headers()
            return
        body, kind = (b"\x89PNG", "image/png") if self.path == "/img" else (
            "<h1>Grüße</h1>".encode(), "text/html; charset=utf-8"
        )  # fmt: skip
        self.send_response(404 if self.path == "/missing" else 200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # a stand-in for the WSA SearchPro API
        length = int(self.headers["content-length"])
        request = json.loads(self.rfile.read(length))
        type(self).seen.append((self.headers["authorization"], request))
        if self.headers["authorization"] != "Bearer good-key":
            answer: dict[str, Any] = {
                "Response": {"Error": {"Code": "AuthFailure", "Message": "bad key"}}
            }
        else:
            pages = [
                json.dumps({"title": f"T{i}", "url": f"https://x.test/{i}", "passage": f"p{i}",
                            "site": "x.test", "date": f"2026-01-0{i}"})
                for i in range(1, 4)
            ]  # fmt: skip
            answer = {"Response": {"Pages": pages, "RequestId": "r1"}}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    seen: list[Any] = []  # noqa: RUF012 - one list per test, reset by the fixture


@pytest.fixture
def site() -> Iterator[str]:
    _Site.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_browser_fetch_gets_text(toolkit: Toolkit, site: str) -> None:
    result = await call(toolkit, "browser_fetch", url=f"{site}/moved")
    assert result == {
        "url": f"{site}/page",
        "status": 200,
        "contentType": "text/html; charset=utf-8",
        "content": "<h1>Grüße</h1>",
        "truncated": False,
    }
    assert (await call(toolkit, "browser_fetch", url=f"{site}/missing"))["status"] == 404
    assert "not text" in (await call(toolkit, "browser_fetch", url=f"{site}/img"))["error"]
    assert (
        "http:// or https://"
        in (await call(toolkit, "browser_fetch", url="file:///etc/passwd"))["error"]
    )


async def test_browser_fetch_unreachable_is_a_result(toolkit: Toolkit, site: str) -> None:
    port = site.rsplit(":", 1)[1]
    result = await call(toolkit, "browser_fetch", url=f"http://127.0.0.1:{int(port) + 1}/")
    assert result["error"].startswith(f"GET http://127.0.0.1:{int(port) + 1}/ failed:")


@pytest.mark.parametrize(
    "name", ["browser_screenshot", "browser_click", "browser_type", "browser_evaluate"]
)
async def test_browser_interaction_is_not_available(toolkit: Toolkit, name: str) -> None:
    result = await call(toolkit, name, selector="#go")
    assert result["error"].startswith(f"{name} is not available under makers-store serve, because")


async def test_web_search_without_a_key_is_a_401_result(toolkit: Toolkit) -> None:
    result = await call(toolkit, "web_search", query="makers")
    assert result["error"].startswith("401 Unauthorized: WSA_API_KEY is not set")


async def test_web_search_request_and_results(site: str) -> None:
    results = await web.web_search(
        "makers", 2, "x.test", api_key="good-key", endpoint=f"{site}/SearchPro"
    )
    assert results == [
        {"title": f"T{i}", "href": f"https://x.test/{i}", "snippet": f"p{i}", "site": "x.test",
         "date": f"2026-01-0{i}"}
        for i in (1, 2)
    ]  # fmt: skip
    assert _Site.seen == [("Bearer good-key", {"Query": "makers", "Site": "x.test"})]
    with pytest.raises(ToolError, match="AuthFailure: bad key"):
        await web.web_search("makers", api_key="bad", endpoint=f"{site}/SearchPro")
    with pytest.raises(ToolArgumentError, match="maxResults must be a positive integer"):
        await web.web_search("makers", 0, api_key="good-key", endpoint=f"{site}/SearchPro")


# --- registry, --no-tools -------------------------------------------------------


def test_the_registry_has_the_platform_names(toolkit: Toolkit) -> None:
    assert [tool.name for tool in toolkit.all()] == ALL_NAMES
    assert [spec.name for spec in SPECS] == ALL_NAMES
    for name in ALL_NAMES:
        assert getattr(toolkit, name) is toolkit.get(name)
    assert toolkit.get("nope") is None
    assert [t.name for t in toolkit.files()] == [n for n in ALL_NAMES if n.startswith("files_")]
    assert [t.name for t in toolkit.browser()] == [n for n in ALL_NAMES if n.startswith("browser_")]
    assert toolkit.get("web_search").parameters["properties"]["maxResults"]["default"] == 5


async def test_no_tools_turns_every_tool_off(workspace: Workspace) -> None:
    for tool in build_toolkit(None, workspace, False, {}).all():
        result = await tool.execute({"cmd": "touch x", "path": "/x", "content": "x"})
        assert result == {
            "error": f"{tool.name} did not run: tools are turned off by "
            "`makers-store serve --no-tools`"
        }
    assert not workspace.root.exists()  # nothing was created
    sandbox = LocalSandbox(workspace, enabled=False)
    with pytest.raises(ToolsDisabledError, match=r"ctx.sandbox.commands.run did not run"):
        await sandbox.commands.run("touch x")
    with pytest.raises(ToolsDisabledError, match=r"ctx.sandbox.files.write did not run"):
        await sandbox.files.write("/x", "x")
    with pytest.raises(ToolsDisabledError, match=r"ctx.sandbox.run_code did not run"):
        await sandbox.run_code("print(1)")
    assert not workspace.root.exists()


async def test_debug_logging_redacts_secrets(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    debug = build_toolkit(None, workspace, True, {"MAKERS_AGENT_TOOLKIT_DEBUG": "1"})
    await debug.commands.execute(json.dumps({"cmd": "true", "env": {"API_KEY": "sk-123"}}))
    line = capsys.readouterr().err
    assert line.startswith('[makers-toolkit] commands {"cmd": "true", "env": {"API_KEY": "***"}}')
    assert "sk-123" not in line
    await build_toolkit(None, workspace, True, {}).commands.execute({"cmd": "true"})
    assert capsys.readouterr().err == ""


# --- ctx.sandbox ----------------------------------------------------------------


async def test_sandbox_shares_the_workspace_with_the_tools(
    toolkit: Toolkit, workspace: Workspace
) -> None:
    sandbox = LocalSandbox(workspace)
    await sandbox.files.write("/tmp/a.txt", "from the sandbox")
    assert (await call(toolkit, "files_read", path="/tmp/a.txt"))["content"] == "from the sandbox"
    assert await sandbox.files.exists("/tmp/a.txt") is True
    assert await sandbox.files.makeDir("/d") is True
    assert [(e.name, e.type) for e in await sandbox.files.list("/")] == [
        ("d", "dir"),
        ("tmp", "dir"),
    ]
    await sandbox.files.remove("/d")
    with pytest.raises(ToolFileNotFoundError, match="no such file or directory: /d") as raised:
        await sandbox.files.read("/d")
    assert isinstance(raised.value, FileNotFoundError)
    with pytest.raises(ToolArgumentError, match="climbs above"):
        await sandbox.files.read("../../etc/passwd")


async def test_sandbox_commands_run_both_call_styles(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox = LocalSandbox(workspace)
    keyword = await sandbox.commands.run("echo hi; exit 2", timeout=10, user="user")
    assert (keyword.stdout, keyword.stderr, keyword.exit_code, keyword.exitCode) == (
        "hi\n",
        "",
        2,
        2,
    )
    await sandbox.files.make_dir("/w")
    node_style = await sandbox.commands.run("pwd", {"cwd": "/w", "timeout": 10})
    assert node_style.stdout.strip().endswith("/w")
    # an options object is read as JavaScript reads it: an unknown key is
    # ignored, with one warning per method and key
    for _ in range(2):
        ignored = await sandbox.commands.run("pwd", {"cwdir": "/w", "timeout": 10})
        assert not ignored.stdout.strip().endswith("/w")
    warnings = [r.getMessage() for r in caplog.records if "'cwdir'" in r.getMessage()]
    assert len(warnings) == 1 and "context.sandbox.commands.run" in warnings[0]
    slow = await sandbox.commands.run("sleep 30", timeout=0.3)
    assert slow.exit_code == processes.TIMEOUT_EXIT_CODE and slow.error


async def test_sandbox_run_code(workspace: Workspace) -> None:
    sandbox = LocalSandbox(workspace)
    run = await sandbox.run_code("print('x' * 3)")
    assert (run.results, run.logs["stdout"], run.error) == ([], ["xxx\n"], None)
    node_style = await sandbox.runCode("echo $0", {"language": "bash", "timeout": 10})
    assert node_style.error is None
    with pytest.raises(ToolError, match="language 'r' is not available"):
        await sandbox.run_code("1", language="r")


async def test_sandbox_control_and_platform_only_parts(workspace: Workspace) -> None:
    sandbox = LocalSandbox(workspace)
    info = await sandbox.get_info()
    assert info["sandboxId"] == info["sandbox_id"] == f"local-{workspace.root.name}"
    assert await sandbox.getInfo() == info
    await sandbox.extend_timeout(900)
    await sandbox.extendTimeout(900)
    with pytest.raises(ToolArgumentError, match="seconds must be a positive number"):
        await sandbox.extend_timeout(-1)
    await sandbox.kill()
    with pytest.raises(PlatformOnlyError, match=r"ctx.sandbox.browser.goto is not available"):
        await sandbox.browser.goto("https://example.com")
    with pytest.raises(PlatformOnlyError, match=r"ctx.sandbox.browser.screenshot"):
        await sandbox.browser.screenshot({"fullPage": True})
    with pytest.raises(PlatformOnlyError, match=r"ctx.sandbox.get_host is not available"):
        sandbox.getHost(3000)
    with pytest.raises(PlatformOnlyError, match=r"ctx.sandbox.envd_access_token"):
        _ = sandbox.envdAccessToken
    assert getattr(sandbox.browser, "cdpUrl", None) is None  # code that probes degrades
