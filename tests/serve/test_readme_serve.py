"""docs/serve-python.md: its example project is served as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .harness import serving, sse_events, write_project

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "serve-python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def project_files() -> dict[str, str]:
    files = {}
    for block in BLOCKS:
        first = block.splitlines()[0]
        found = re.match(r"# (\S+\.py)\s", first)
        assert found, f"a serve example must start with '# <path>.py': {first!r}"
        files[found.group(1)] = block
    return files


def test_readme_example_project_runs(tmp_path: Path) -> None:
    files = project_files()
    assert set(files) == {
        "agents/notes.py",
        "agents/countdown.py",
        "cloud-functions/api/notes/[cid].py",
    }
    project = write_project(tmp_path / "project", files)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    with serving(
        project, tmp_path / "serve.log", "--store", store, "--instances", "2"
    ) as server, server.client() as client:
        headers = {"makers-conversation-id": "readme"}
        client.post("/notes", json={"note": "milk"}, headers=headers)
        got = client.post("/notes", json={"note": "eggs"}, headers=headers).json()
        assert got == {"conversation_id": "readme", "notes": ["milk", "eggs"]}
        with client.stream("POST", "/countdown") as response:
            events = [json.loads(data) for _, data in sse_events(response.iter_lines())]
        assert events == [{"n": 3}, {"n": 2}, {"n": 1}]
        assert client.get("/api/notes/readme").json() == ["milk", "eggs"]
