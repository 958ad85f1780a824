"""The runtime's pure parts: routing, .env parsing, SSE framing, option checks."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from makers_store.api.location import StoreLocation
from makers_store.emulator.runtime import listening, server, sse, wire
from makers_store.emulator.runtime.project import envfile, routes
from makers_store.emulator.runtime.project.scaffold import scaffold
from makers_store.emulator.runtime.project.templates import FILES
from makers_store.errors import MemoryValidationError

from .harness import write_project


def touch(root: Path, *names: str) -> Path:
    return write_project(root, dict.fromkeys(names, "handler = None\n"))


def test_agent_routes(tmp_path: Path) -> None:
    project = touch(
        tmp_path,
        "agents/chat/index.py",
        "agents/chat/stop.py",
        "agents/chat/_memory.py",
        "agents/chat/tools/index.py",
        "agents/_shared.py",
        "agents/__init__.py",
        "agents/solo.py",
        "agents/_private/thing.py",
        "agents/__pycache__/x.py",
        "agents/bad.name.py",
    )
    table = routes.discover(project)
    assert {(r.path, r.relative, r.module) for r in table.agents} == {
        ("/chat", "agents/chat/index.py", "_makers_agents.chat.index"),
        ("/chat/stop", "agents/chat/stop.py", "_makers_agents.chat.stop"),
        ("/chat/tools", "agents/chat/tools/index.py", "_makers_agents.chat.tools.index"),
        ("/solo", "agents/solo.py", "_makers_agents.solo"),
    }
    assert table.agent_for("/chat/").relative == "agents/chat/index.py"  # type: ignore[union-attr]
    assert table.agent_for("/chat/_memory") is None
    assert table.agent_for("/nothing") is None
    assert any("bad.name.py" in warning for warning in table.warnings)


def test_agent_file_and_folder_conflict_is_reported(tmp_path: Path) -> None:
    table = routes.discover(touch(tmp_path, "agents/chat.py", "agents/chat/index.py"))
    assert len(table.agents) == 1
    assert any("already answers /chat" in warning for warning in table.warnings)


def test_function_routes_prefer_static_then_param_then_catch_all(tmp_path: Path) -> None:
    entry = "import http.server\nclass handler(http.server.BaseHTTPRequestHandler): pass\n"
    names = (
        "cloud-functions/index.py",
        "cloud-functions/api/users/[id].py",
        "cloud-functions/api/users/me.py",
        "cloud-functions/api/users/[id]/posts.py",
        "cloud-functions/api/[[default]].py",
        "cloud-functions/api/_util.py",
    )
    table = routes.discover(write_project(tmp_path, dict.fromkeys(names, entry)))

    def resolve(path: str) -> tuple[str, dict[str, str]] | None:
        found = table.function_for(path)
        return (found[0].relative, found[1]) if found else None

    assert resolve("/") == ("cloud-functions/index.py", {})
    assert resolve("/api/users/me") == ("cloud-functions/api/users/me.py", {})
    assert resolve("/api/users/42") == ("cloud-functions/api/users/[id].py", {"id": "42"})
    assert resolve("/api/users/42/posts") == (
        "cloud-functions/api/users/[id]/posts.py",
        {"id": "42"},
    )
    assert resolve("/api/a/b") == ("cloud-functions/api/[[default]].py", {"default": "a/b"})
    assert resolve("/api") == ("cloud-functions/api/[[default]].py", {"default": ""})
    assert resolve("/api/_util") == ("cloud-functions/api/[[default]].py", {"default": "_util"})
    assert resolve("/other") is None


def test_env_files_and_precedence(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "# comment\nexport A=1\nB = two words # trailing comment\n"
        "C=\"line\\nbreak \\\"quoted\\\"\"\nD='literal \\n # kept'\nE=\n",
        encoding="utf-8",
    )
    (tmp_path / ".env.local").write_text("A=local\nF=local\n", encoding="utf-8")
    merged = envfile.project_env(tmp_path, {"F": "environ"})
    assert merged == {
        "A": "local",
        "B": "two words",
        "C": 'line\nbreak "quoted"',
        "D": "literal \\n # kept",
        "E": "",
        "F": "environ",
    }


@pytest.mark.parametrize("text", ["NOT A LINE\n", 'A="open\n', "A='open\n"])
def test_env_file_errors_name_the_line(text: str) -> None:
    with pytest.raises(MemoryValidationError, match=r"\.env:1"):
        envfile.parse_env(text)


def test_sse_frames() -> None:
    assert sse.sse({"a": 1}) == b'data: {"a": 1}\n\n'
    assert sse.sse("two\nlines", event="e", id="7", retry=100) == (
        b"event: e\nid: 7\nretry: 100\ndata: two\ndata: lines\n\n"
    )
    assert sse.to_frame(b"raw") == b"raw"
    assert sse.to_frame("data: framed\n\n") == b"data: framed\n\n"
    assert sse.to_frame("text") == b"data: text\n\n"
    assert sse.to_frame([1]) == b"data: [1]\n\n"
    with pytest.raises(ValueError, match="one line"):
        sse.sse("x", event="a\nb")
    with pytest.raises(ValueError):
        sse.to_frame({"x": float("nan")})


def test_bind_warning() -> None:
    def warning(host: str) -> str | None:
        return listening.bind_warning(host, server.SERVE_EXPOSES)

    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert warning(host) is None
    for host in ("0.0.0.0", "::", ""):
        assert "every network interface" in (warning(host) or "")
    assert "reachable" in (warning("192.168.1.5") or "")
    assert "read and write the store" in (warning("192.168.1.5") or "")


def test_prepare_validates_options(tmp_path: Path) -> None:
    project = touch(tmp_path / "p", "agents/a.py")

    def options(**changes: object) -> server.ServeOptions:
        base: dict[str, object] = {"project_dir": project, "store_url": "memory://"}
        return server.ServeOptions(**{**base, **changes})  # type: ignore[arg-type]

    with pytest.raises(MemoryValidationError, match="--instances 3"):
        server.prepare(options(instances=3))
    with pytest.raises(MemoryValidationError, match="--instances must be"):
        server.prepare(options(instances=0, store_url=None))
    with pytest.raises(MemoryValidationError, match="--recycle-every"):
        server.prepare(options(recycle_every=0))
    with pytest.raises(MemoryValidationError, match="is not a directory"):
        server.prepare(options(project_dir=tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MemoryValidationError, match="neither agents/ nor cloud-functions/"):
        server.prepare(options(project_dir=tmp_path / "empty"))
    prepared = server.prepare(options(host="0.0.0.0", reload=True))
    assert any("every network interface" in w for w in prepared.warnings)
    assert any("memory:// store is lost" in w for w in prepared.warnings)
    default = server.prepare(options(store_url=None))
    assert default.store.url == f"sqlite:///{project.resolve() / '.makers-store' / 'store.db'}"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_serve_keeps_its_data_folder_out_of_source_scans(tmp_path: Path) -> None:
    """Frontend dev servers skip what .gitignore names (Tailwind 4's scanner reloads the page
    on every change of a file it scans): git itself must call the folder's files ignored,
    with no .gitignore of the project's own; a .gitignore already in the folder is kept."""
    project = touch(tmp_path / "p", "agents/a.py")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    server.prepare(server.ServeOptions(project_dir=project, store_url="memory://"))
    data = project / ".makers-store"
    for name in ("store.db", "traces.jsonl", "workspaces/c1/notes.ts"):
        checked = subprocess.run(
            ["git", "-C", str(project), "check-ignore", "-q", str(data / name)], check=False
        )
        assert checked.returncode == 0, name
    assert subprocess.run(
        ["git", "-C", str(project), "check-ignore", "-q", str(project / "agents/a.py")],
        check=False,
    ).returncode == 1
    (data / ".gitignore").write_text("store.db\n", encoding="utf-8")
    server.prepare(server.ServeOptions(project_dir=project, store_url="memory://"))
    assert (data / ".gitignore").read_text(encoding="utf-8") == "store.db\n"


def test_relative_sqlite_urls_become_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    location = server.absolute_store_url(StoreLocation("sqlite:///rel/x.db?synchronous=full", "r"))
    assert location.url == f"sqlite:///{tmp_path / 'rel' / 'x.db'}?synchronous=full"
    assert server.absolute_store_url(StoreLocation("memory://", "r")).url == "memory://"


def test_scaffold_refuses_to_overwrite(tmp_path: Path) -> None:
    written = scaffold(tmp_path / "app")
    assert {p.relative_to(tmp_path / "app").as_posix() for p in written} == set(FILES)
    with pytest.raises(MemoryValidationError, match="--force"):
        scaffold(tmp_path / "app")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(MemoryValidationError, match="not a directory"):
        scaffold(tmp_path / "file")


def test_scaffold_templates_compile() -> None:
    for relative, text in FILES.items():
        if relative.endswith(".py"):
            compile(text, relative, "exec")


def test_the_front_listens_with_nagle_off_on_every_connection() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto says TCP; without
    it each kept-alive response waited ~40 ms for the client's delayed ACK."""
    import asyncio
    import socket

    listener = listening.bind("127.0.0.1", 0)

    async def accept_one() -> int:
        accepted: asyncio.Queue[int] = asyncio.Queue()

        async def on_client(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            await accepted.put(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        listener.listen()
        served = await asyncio.start_server(on_client, sock=listener)
        async with served:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            value = await asyncio.wait_for(accepted.get(), 5)
            writer.close()
            return value

    assert listener.proto == socket.IPPROTO_TCP
    assert asyncio.run(accept_one()) != 0


def test_the_node_worker_spells_the_wire_as_python_does() -> None:
    """``node/worker.mjs`` and ``node/respond.mjs`` cannot import ``wire.py``: their
    copies of its names are checked here instead."""
    node = Path(wire.__file__).parent / "node"

    def constants(name: str) -> dict[str, str]:
        text = (node / name).read_text(encoding="utf-8")
        return dict(re.findall(r"^const (\w+) = '([^']*)';$", text, re.MULTILINE))

    worker, respond = constants("worker.mjs"), constants("respond.mjs")
    assert worker["SETTINGS_ENV"] == wire.NODE_SETTINGS_ENV
    assert worker["READY_MARKER"].encode() == wire.NODE_READY_MARKER
    assert worker["META_HEADER"].encode() == wire.NODE_META_HEADER
    assert worker["TOKEN_HEADER"] == wire.TOKEN_HEADER
    assert worker["ABORT_PATH"] == wire.ABORT_PATH
    assert worker["OUTCOME_HEADER"].encode() == respond["OUTCOME_HEADER"].encode()
    assert respond["OUTCOME_HEADER"].encode() == wire.NODE_OUTCOME_HEADER
    assert f"process.env.{wire.NODE_RPC_ENV}" in (node / "worker.mjs").read_text(encoding="utf-8")
