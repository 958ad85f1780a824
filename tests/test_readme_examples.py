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
