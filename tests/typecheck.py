"""Run mypy --strict on the installed package layout.

setuptools maps store/, emulator/ and cli/ onto makers_store,
makers_store.emulator and makers_store.cli; mypy cannot follow that mapping,
so this lays the same tree out with symlinks in a temporary directory and
checks ``-p makers_store`` there, and ``-p devtools`` (the generators).
Usage: ``python tests/typecheck.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = {"emulator": "emulator", "cli": "cli"}


def build_tree(target: Path) -> Path:
    package = target / "makers_store"
    package.mkdir()
    for entry in (ROOT / "store").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, source in SUBPACKAGES.items():
        (package / name).symlink_to(ROOT / source)
    (target / "devtools").symlink_to(ROOT / "devtools")  # the generators, checked as strictly
    return package


def run_mypy() -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="makers-typecheck-") as tmp:
        build_tree(Path(tmp))
        env = {**os.environ, "MYPYPATH": tmp}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--cache-dir",
                str(ROOT / ".mypy_cache"),
                "-p",
                "makers_store",
                "-p",
                "devtools",
            ],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        result.stdout = result.stdout.replace(tmp + "/makers_store/", "")
        return result


if __name__ == "__main__":
    outcome = run_mypy()
    print(outcome.stdout, end="")
    print(outcome.stderr, end="", file=sys.stderr)
    sys.exit(outcome.returncode)
