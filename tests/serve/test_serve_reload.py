"""``--reload``: edits, new routes, broken code and .env changes are picked up."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from .harness import serving, write_project

pytestmark = pytest.mark.slow


def eventually(check: Callable[[], bool], within_s: float = 20.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "the change was not picked up"
        time.sleep(0.1)


def test_reload_restarts_on_source_and_env_changes(tmp_path: Path) -> None:
    project = write_project(
        tmp_path / "project",
        {
            "agents/version.py": """
                async def handler(ctx):
                    return {"v": 1, "flavor": ctx.env.get("FLAVOR")}
            """,
            ".env": "FLAVOR=plain\n",
        },
    )
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(project, tmp_path / "serve.log", "--store", store, "--reload") as server:
        with server.client() as client:

            def version() -> httpx.Response:
                return client.post("/version", json={})

            assert version().json() == {"v": 1, "flavor": "plain"}
            first_pid = version().headers["makers-instance-pid"]

            write_project(project, {"agents/version.py": """
                async def handler(ctx):
                    return {"v": 2, "flavor": ctx.env.get("FLAVOR")}
            """})
            eventually(lambda: version().json().get("v") == 2)
            assert version().headers["makers-instance-pid"] != first_pid

            write_project(project, {"agents/added.py": """
                async def handler(ctx):
                    return "new route"
            """})
            eventually(lambda: client.post("/added", json={}).status_code == 200)
            assert client.post("/added", json={}).text == "new route"

            write_project(project, {"agents/version.py": "async def handler(ctx)\n"})
            eventually(lambda: version().status_code == 500)
            assert "SyntaxError" in version().json()["error"]
            # the restarted worker reported it as it started, before any request
            assert "ERROR agents/version.py failed to import" in server.log()
            write_project(project, {"agents/version.py": """
                async def handler(ctx):
                    return {"v": 3, "flavor": ctx.env.get("FLAVOR")}
            """})
            eventually(lambda: version().status_code == 200)

            (project / ".env").write_text("FLAVOR=spicy\n", encoding="utf-8")
            eventually(lambda: version().json() == {"v": 3, "flavor": "spicy"})
    log = server.log()
    assert "changed: agents/version.py; restarting the instances" in log
    assert "/added" in log  # the route table was printed again
