"""The Python examples of the README and of the docs pages run as written.

Agent code on the serve pages (``docs/serve-python.md``, ``docs/serve-node.md``)
is a project's files, not a script: tests/serve/ serves it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVED = {"serve-python.md", "serve-node.md"}
PAGES = [
    ROOT / "README.md",
    *sorted(page for page in (ROOT / "docs").glob("*.md") if page.name not in SERVED),
]
BLOCKS = {
    f"{page.relative_to(ROOT)}-{index}": block
    for page in PAGES
    for index, block in enumerate(
        re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    )
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_python_example_runs(name: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text("import makers_store\n" + BLOCKS[name], encoding="utf-8")
    env = {**os.environ, "MAKERS_STORE_URL": f"sqlite:///{tmp_path}/readme.db"}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_there_are_examples() -> None:
    pages = {name.rsplit("-", 1)[0] for name in BLOCKS}
    assert {"docs/library.md", "docs/adapters.md"} <= pages
    assert sum(name.startswith("docs/library.md") for name in BLOCKS) >= 4


#: The pages whose examples a reader copies and runs as they are.
COPIED = ("README.md", "docs/lifecycle.md", "docs/library.md")


@pytest.mark.parametrize("name", sorted(n for n in BLOCKS if n.startswith(COPIED)))
def test_example_runs_alone_twice_without_a_store_given(name: str, tmp_path: Path) -> None:
    """As a reader runs it (issue 32): the block alone (its own imports), with
    no $MAKERS_STORE_URL, in a fresh folder, and again in the same folder: it
    does not fail on what its first run left, and the README's and
    lifecycle.md's examples name their own store file (library.md's first
    shows the zero-config default on purpose)."""
    script = tmp_path / "example.py"
    script.write_text(BLOCKS[name], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "MAKERS_STORE_URL"}
    env["XDG_DATA_HOME"] = str(tmp_path / "per-user")  # where the default store would go
    for attempt in ("first", "again"):
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, (attempt, result.stderr)
    if not name.startswith("docs/library.md"):
        assert not (tmp_path / "per-user" / "makers-store").exists(), "wrote the per-user store"
