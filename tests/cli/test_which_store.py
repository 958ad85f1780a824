"""The store you read is the one you think (issue 32, item 5), run as a user
runs it: the installed ``makers-store`` in a subprocess, through pipes, from
the folder where ``init`` made a project."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli.conftest import console_script


def run_in(folder: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in ``folder``, with no store given: the default store is chosen."""
    env = {**os.environ, "COLUMNS": "200", "XDG_DATA_HOME": str(data)}
    env.pop("MAKERS_STORE_URL", None)
    env.pop("MAKERS_STORE_DEBUG", None)
    return subprocess.run(
        [*console_script(), *args], cwd=folder, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_init_says_cd_and_a_parent_folder_names_the_project_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = run_in(tmp_path, data, "init", "demo")
    assert made.returncode == 0, made.stderr
    steps = made.stdout.split("next:\n", 1)[1].splitlines()
    assert steps[:2] == ["  cd demo", "  makers-store serve"]

    note = (
        f"note: reading the per-user store sqlite:///{data}/makers-store/store.db (no Makers "
        "project here); demo/ is a Makers project: cd demo to read its store, or --store "
        "sqlite:///demo/.makers-store/store.db\n"
    )
    listed = run_in(tmp_path, data, "conv", "list")
    assert listed.returncode == 3 and listed.stderr.startswith(note), listed.stderr
    info = run_in(tmp_path, data, "info")
    assert info.returncode == 0 and info.stderr == note
    # inside the project: its own store, and nothing to note
    inside = run_in(tmp_path / "demo", data, "info", "--json")
    assert inside.returncode == 0 and inside.stderr == ""
    assert '"reason": "inside the Makers project at ' in inside.stdout
