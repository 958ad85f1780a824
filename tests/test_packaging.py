"""The distribution installs one namespace, makers_store, and ships py.typed;
the development-time generators (devtools/) stay out of it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # build from a copy: no build/ left in the tree
    # devtools/ and completions/ too: the configuration, not the copy, keeps them out
    for name in ("store", "emulator", "cli", "devtools", "completions"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("makers_store-*.whl")
    return built


def test_wheel_holds_only_makers_store(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"makers_store", next(t for t in tops if t.endswith(".dist-info"))}
    for required in [
        "makers_store/py.typed",
        "makers_store/context_store.py",
        "makers_store/api/conversation_store.py",
        # every room of the library (pyproject's package list names each)
        "makers_store/_core/runner.py",
        "makers_store/lifecycle/fork.py",
        "makers_store/maintenance/admin.py",
        "makers_store/adapters/claude/sessions.py",
        "makers_store/adapters/openai/sessions.py",
        "makers_store/adapters/langgraph/store.py",
        "makers_store/emulator/memory/backend.py",
        "makers_store/emulator/postgres/units.py",
        "makers_store/emulator/s3/requests.py",
        "makers_store/emulator/sqlite/backend.py",
        "makers_store/emulator/runtime/__init__.py",
        "makers_store/emulator/runtime/tools/__init__.py",
        # served code imports `_platform`; it ships as package data, put on the workers' path
        "makers_store/emulator/runtime/shim/_platform/context.py",
        "makers_store/emulator/runtime/shim/_platform/memory.py",
        "makers_store/cli/main.py",
        # the Studio works offline: its pages, stylesheet and script ship
        "makers_store/emulator/studio/app.py",
        "makers_store/emulator/studio/templates/base.html",
        "makers_store/emulator/studio/templates/conversation.html",
        "makers_store/emulator/studio/static/studio.css",
        "makers_store/emulator/studio/static/studio.js",
    ]:
        assert required in names, required
    assert not any(
        name.startswith(("store/", "cli/", "emulator/", "tests/", "devtools/")) for name in names
    )
    # every file of the three folders ships: each module (a package left out of
    # pyproject's `packages` would not), the Node bridge's Node side, the Studio's
    # pages, py.typed (package data: a glob missing from `package-data` would not)
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-dir"]
    for package, folder in folders.items():
        for path in (ROOT / folder).rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            shipped = "/".join([*package.split("."), *path.relative_to(ROOT / folder).parts])
            assert shipped in names, shipped
    # the generators run from a checkout (python -m devtools.sync_codegen / .completions)
    for dev_only in ("makers_store/_sync_codegen.py", "makers_store/cli/completions.py"):
        assert dev_only not in names, dev_only
    assert not any("completions" in name.split("/")[-1] for name in names), names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "makers-store = makers_store.cli.main:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )


def test_regular_install_imports(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import makers_store, makers_store.emulator.sqlite, makers_store.emulator.memory;"
        "assert makers_store.__file__.startswith(sys.argv[1]), makers_store.__file__;"
        "s = makers_store.open_sync_store('memory://');"
        "print(s.append_message(conversation_id='c', role='user', content='x')); s.close()"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(target)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("msg_")


def test_editable_install_maps_the_three_folders() -> None:
    import makers_store
    import makers_store.cli
    import makers_store.emulator

    assert Path(makers_store.__file__).parent == ROOT / "store"
    assert Path(makers_store.emulator.__file__).parent == ROOT / "emulator"
    assert Path(makers_store.cli.__file__).parent == ROOT / "cli"


def test_the_installed_cli_installs_its_own_completion(wheel: Path, tmp_path: Path) -> None:
    """Without the generators, the installed program still sets up Tab
    completion for the shell (typer's ``--install-completion``)."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(target),
        "HOME": str(home),
        "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1",
    }
    probe = "import makers_store.cli.main as m, sys; print(m.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert where.stdout.startswith(str(target))
    done = subprocess.run(
        [sys.executable, "-m", "makers_store.cli.main", "--install-completion", "bash"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    installed = list((home / ".bash_completions").glob("makers-store*"))
    assert installed and "_MAKERS_STORE_COMPLETE" in installed[0].read_text()
