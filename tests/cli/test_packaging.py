"""Packaging claims, checked (issue 12, items 20 to 22): the declared typer
floor runs the CLI, the dev extra resolves with current pip without
backtracking into ancient sdists, and --help imports nothing heavy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from tests.cli.conftest import REPO

#: The oldest typer the CLI runs on (it has typer._click, used by cli/errors.py),
#: and the release before it, on which the CLI cannot start.
TYPER_FLOOR = "0.26.0"
BELOW_FLOOR = "0.25.1"


def declared(name: str, group: str | None = None) -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = (
        project["dependencies"] if group is None else project["optional-dependencies"][group]
    )
    return [r for r in requirements if re.match(rf"{re.escape(name)}\b", r)]


def test_the_declared_typer_floor_is_the_tested_one() -> None:
    assert declared("typer") == [f"typer>={TYPER_FLOOR.removesuffix('.0')}"]


def pip_or_skip(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0 and re.search(r"(?i)connection|resolve host|network", done.stderr):
        pytest.skip(f"the package index is unreachable: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_the_cli_runs_on_the_typer_floor(tmp_path: Path, url: str) -> None:
    target = tmp_path / "floor"
    pip_or_skip("install", "--quiet", "--no-deps", "--target", str(target), f"typer=={TYPER_FLOOR}")
    env = {**os.environ, "PYTHONPATH": str(target), "COLUMNS": "200"}
    env.pop("MAKERS_STORE_DEBUG", None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "makers_store.cli.main", *args],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip

    probe = subprocess.run(
        [sys.executable, "-c", "import typer; print(typer.__version__)"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == TYPER_FLOOR
    assert cli("--help").returncode == 0
    assert cli("--version").stdout.startswith("makers-store ")
    made = cli("--store", url, "msg", "append", "c1", "--role", "user", "--content", "hi")
    assert made.returncode == 0, made.stderr
    assert "c1" in cli("--store", url, "conv", "list").stdout
    usage = cli("--store", url, "conv", "list", "--limit", "x")
    assert (
        usage.returncode == 2 and usage.stderr.startswith("error: ") and "--limit" in usage.stderr
    )
    missing = cli("--store", url, "conv", "show", "nope")
    assert (missing.returncode, missing.stderr) == (3, "error: conversation 'nope' not found\n")


@pytest.mark.slow
def test_the_release_below_the_floor_cannot_run_the_cli(tmp_path: Path) -> None:
    target = tmp_path / "below"
    pip_or_skip("install", "--quiet", "--no-deps", "--target", str(target), f"typer=={BELOW_FLOOR}")
    done = subprocess.run(
        [sys.executable, "-m", "makers_store.cli.main", "--help"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert done.returncode == 1 and "cannot import name '_click'" in done.stderr


def test_the_dev_extra_bounds_boto3_to_aiobotocores_botocore() -> None:
    # moto requires any boto3, aiobotocore pins botocore: unbounded, pip 26
    # backtracks through moto's extras (issue 12, item 20).
    (boto3,) = declared("boto3", "dev")
    assert "<" in boto3 and ">=" in boto3


@pytest.mark.slow
def test_the_dev_extra_resolves_with_current_pip(tmp_path: Path) -> None:
    """What CI can run: a dry-run resolution with the newest pip, in a scratch
    venv, of a copy of the project (the work tree is left alone)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    for package in ("store", "emulator", "cli"):
        shutil.copytree(
            REPO / package, project / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    env_dir = tmp_path / "venv"
    # No ensurepip (5 s of the bundled pip's install): this pip puts the newest
    # pip into the scratch venv (pip --python, since pip 22.3)
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    pip_or_skip("--python", python, "install", "--quiet", "--upgrade", "pip")
    done = pip_or_skip(
        "install", "--dry-run", "--ignore-installed", "-e", f"{project}[dev]", python=python
    )
    assert "Would install" in done.stdout
    assert "looking at multiple versions" not in done.stdout + done.stderr
    assert ".tar.gz" not in done.stdout  # no sdist: every pick has a wheel
