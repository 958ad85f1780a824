"""Cloud functions' pure parts: entry-file recognition, framework routes, the store view,
the route table ``serve`` prints."""

from __future__ import annotations

from pathlib import Path

import pytest

import makers_store
from makers_store.cli.serve import SHOWN_HELPERS, _print_routes
from makers_store.emulator.runtime.errors import NotInCloudFunctionsError
from makers_store.emulator.runtime.functions.framework_apps import route_prefix
from makers_store.emulator.runtime.functions.limits import (
    WALL_CLOCK_ENV,
    WALL_CLOCK_S,
    FunctionLimits,
)
from makers_store.emulator.runtime.functions.store import CloudFunctionStore
from makers_store.emulator.runtime.platform_choices import FUNCTION_MAX_BODY_BYTES
from makers_store.emulator.runtime.project import routes
from makers_store.emulator.runtime.project.entry_patterns import entry_in_source
from makers_store.errors import StoreError

from .harness import write_project

HANDLER = (
    "from http.server import BaseHTTPRequestHandler\n"
    "class handler(BaseHTTPRequestHandler):\n  pass\n"
)
FLASK = "from flask import Flask\napp = Flask(__name__)\n"


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        (HANDLER, "handler class"),
        ("import http.server\nclass handler(http.server.BaseHTTPRequestHandler): pass\n",
         "handler class"),
        ("class handler(Mixin, BaseHTTPRequestHandler): pass\n", "handler class"),
        (FLASK, "Flask app"),
        ("import flask\napp: flask.Flask = flask.Flask(__name__)\n", "Flask app"),
        ("from fastapi import FastAPI\napp = FastAPI(title='x')\n", "FastAPI app"),
        ("try:\n  from fastapi import FastAPI\nexcept ImportError:\n  raise\nelse:\n"
         "  app = FastAPI()\n", "FastAPI app"),
        ("from django.core.wsgi import get_wsgi_application\n"
         "application = get_wsgi_application()\n", "Django app"),
        # the template's agent-style functions: context handlers
        ("async def handler(context):\n  return {}\n", "context handler"),
        ("def handler(request):\n  return 'agent style'\n", "context handler"),
        ("if True:\n  async def handler(context): ...\n", "context handler"),
        # a documented pattern wins over a handler function
        ("def handler(c): ...\n" + FLASK, "Flask app"),
        (HANDLER + "def handler(c): ...\n", "handler class"),
        # helpers: no entry pattern
        ("class Api:\n  async def handler(self, context): ...\n", None),
        ("def build():\n  def handler(context): ...\n  return handler\n", None),
        ("handler = None\n", None),
        ("class handler(object): pass\n", None),
        ("class Handler(BaseHTTPRequestHandler): pass\n", None),
        ("app = create_app()\n", None),
        ("def build():\n  app = Flask(__name__)\n  return app\n", None),
        ("application = something_else()\n", None),
        # a file that does not parse is judged by its text (its import error shows later)
        ("class handler(BaseHTTPRequestHandler):\n  def do_GET(self)\n", "handler class"),
        ("app = Flask(__name__\n", "Flask app"),
        ("async def handler(context:\n", "context handler"),
        ("def broken(:\n", None),
    ],
)
def test_entry_patterns(source: str, kind: str | None) -> None:
    entry = entry_in_source(source)
    assert (entry and entry.label) == kind


def test_context_handlers_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from makers_store.emulator.runtime.project import entry_patterns

    monkeypatch.setattr(entry_patterns, "CONTEXT_HANDLER_ENTRY", False)
    assert entry_in_source("async def handler(context): ...\n") is None
    assert entry_in_source("async def handler(context:\n") is None
    assert entry_in_source(FLASK) is not None


def test_only_entry_files_route_and_skipped_folders_are_not_scanned(tmp_path: Path) -> None:
    files = {
        "cloud-functions/api/index.py": FLASK,
        "cloud-functions/api/db.py": "def connect(): ...\n",
        "cloud-functions/api/_private.py": HANDLER,
        "cloud-functions/hello.py": HANDLER,
        **{
            f"cloud-functions/{folder}/probe.py": HANDLER
            for folder in ("__pycache__", ".git", "node_modules", "venv", ".venv", "scripts",
                           "tests", ".pytest_cache")
        },
        "agents/tests/index.py": "async def handler(ctx):\n  return {}\n",
    }
    table = routes.discover(write_project(tmp_path, files))
    assert [(r.relative, r.entry) for r in table.functions] == [
        ("cloud-functions/api/index.py", "app"),
        ("cloud-functions/hello.py", "handler"),
    ]
    assert table.helpers == ("cloud-functions/api/db.py",)
    assert [r.path for r in table.agents] == ["/tests"]  # the skip list is cloud functions' only


def test_framework_app_owns_its_subtree_below_static_routes(tmp_path: Path) -> None:
    files = {
        "cloud-functions/api/index.py": FLASK,
        "cloud-functions/api/health.py": HANDLER,
        "cloud-functions/api/[[rest]].py": HANDLER,
        "cloud-functions/other.py": HANDLER,
    }
    table = routes.discover(write_project(tmp_path, files))

    def resolve(path: str) -> str | None:
        found = table.function_for(path)
        return found[0].relative if found else None

    assert resolve("/api/health") == "cloud-functions/api/health.py"
    assert resolve("/api") == "cloud-functions/api/index.py"
    assert resolve("/api/users/7") == "cloud-functions/api/index.py"
    assert resolve("/other") == "cloud-functions/other.py"
    assert resolve("/other/below") is None
    assert not table.warnings
    flask = table.function_for("/api/x")
    assert flask is not None and flask[0].entry_attribute == "app"


def test_route_prefix_keeps_the_request_spelling() -> None:
    assert route_prefix("/api/users", 1) == "/api"
    assert route_prefix("//api//users/", 1) == "//api"
    assert route_prefix("/a/b/c", 2) == "/a/b"
    assert route_prefix("/anything", 0) == ""


def test_limits_are_the_platforms_and_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WALL_CLOCK_ENV, raising=False)
    assert FunctionLimits.for_serve(True) == FunctionLimits(6 * 1024 * 1024, 120.0)
    assert (FUNCTION_MAX_BODY_BYTES, WALL_CLOCK_S) == (6 * 1024 * 1024, 120.0)
    assert FunctionLimits.for_serve(False) == FunctionLimits(None, None)
    monkeypatch.setenv(WALL_CLOCK_ENV, "2.5")
    assert FunctionLimits.for_serve(True).wall_clock_s == 2.5
    monkeypatch.setenv(WALL_CLOCK_ENV, "soon")
    with pytest.raises(ValueError, match=WALL_CLOCK_ENV):
        FunctionLimits.for_serve(True)


def test_store_view_refuses_langgraph_and_keeps_the_rest() -> None:
    with makers_store.open_sync_store("memory://") as sync:
        view = CloudFunctionStore(sync.bind("c1"))
        for name in ("langgraph_checkpointer", "langgraph_store"):
            with pytest.raises(NotInCloudFunctionsError, match="no LangGraph adapters"):
                getattr(view, name)
            assert not hasattr(view, name)
            assert name not in dir(view)
        assert issubclass(NotInCloudFunctionsError, StoreError)
        view.append_message(conversation_id="c1", role="user", content="hi")
        view.state.set("k", 1)
        assert [m.content for m in view.get_messages(conversation_id="c1")] == ["hi"]
        assert view.state.get("k") == 1
        other = view.bind("c2")
        assert isinstance(other, CloudFunctionStore)
        assert other.conversation_id == "c2"
        assert not hasattr(other, "langgraph_store")
        assert callable(view.openai_session) and callable(view.claude_session_binding)
        unbound = view.bind(None, run_id="run_1")
        assert (unbound.conversation_id, unbound.run_id) == (None, "run_1")
        assert not hasattr(unbound, "langgraph_checkpointer")


async def test_async_store_view_is_the_same_view() -> None:
    async with makers_store.open_store("memory://") as store:
        view = CloudFunctionStore(store.bind(None, run_id="run_2"))
        with pytest.raises(NotInCloudFunctionsError, match="no LangGraph adapters"):
            _ = view.langgraph_store
        assert "langgraph_checkpointer" not in dir(view)
        await view.append_message("c1", "user", "hi")
        assert [m.content for m in await view.get_messages("c1", limit=100, order="asc")] == ["hi"]
        bound = view.bind("c1")
        assert isinstance(bound, CloudFunctionStore)
        assert await bound.state.get("missing") is None
        assert repr(bound) == "<cloud-function async store conversation_id='c1'>"


def test_route_table_names_each_entry_and_lists_helpers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "agents/chat.py": "async def handler(ctx):\n  return {}\n",
        "cloud-functions/api/index.py": FLASK,
        "cloud-functions/fast/index.py": "from fastapi import FastAPI\napp = FastAPI()\n",
        "cloud-functions/history/index.py": "async def handler(context):\n  return {}\n",
        "cloud-functions/legacy.py": HANDLER,
        "cloud-functions/_logger.py": "def create_logger(tag): ...\n",  # private: not listed
        **{f"cloud-functions/lib/h{n}.py": "X = 1\n" for n in range(SHOWN_HELPERS + 2)},
    }
    _print_routes(routes.discover(write_project(tmp_path, files)))
    lines = capsys.readouterr().out.splitlines()
    assert lines[:6] == [
        "routes",
        "  POST  /chat     agents/chat.py",
        "  ANY   /api/**   cloud-functions/api/index.py (Flask app)",
        "  ANY   /fast/**  cloud-functions/fast/index.py (FastAPI app)",
        "  ANY   /history  cloud-functions/history/index.py (context handler)",
        "  do_*  /legacy   cloud-functions/legacy.py (handler class)",
    ]
    shown = ", ".join(f"cloud-functions/lib/h{n}.py" for n in range(SHOWN_HELPERS))
    assert lines[6:] == [f"helpers (not routed: no entry pattern): {shown} and 2 more"]


def test_route_table_prints_file_names_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = write_project(tmp_path, {"cloud-functions/[bold]x.py": HANDLER})
    _print_routes(routes.discover(project))
    assert "cloud-functions/[bold]x.py (handler class)" in capsys.readouterr().out
