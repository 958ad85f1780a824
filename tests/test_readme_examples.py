"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The library section's examples; agent code in the serve section runs under `serve` tests.
LIBRARY = README.split("<!-- section: intro (owner: core) -->")[1].split("<!-- section:")[0]
BLOCKS = re.findall(r"```python\n(.*?)```", LIBRARY, re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_example_runs(index: int, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text("import makers_store\n" + BLOCKS[index], encoding="utf-8")
    env = {**os.environ, "MAKERS_STORE_URL": f"sqlite:///{tmp_path}/readme.db"}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_there_are_examples() -> None:
    assert len(BLOCKS) >= 2
