"""The distribution installs one namespace, makers_store, and ships py.typed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # build from a copy: no build/ left in the tree
    for name in ("store", "emulator", "cli"):
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
        "makers_store/api.py",
        "makers_store/emulator/sqlite.py",
        "makers_store/emulator/runtime/__init__.py",
        "makers_store/emulator/runtime/tools/__init__.py",
        # served code imports `_platform`; it ships as package data, put on the workers' path
        "makers_store/emulator/runtime/shim/_platform/context.py",
        "makers_store/emulator/runtime/shim/_platform/memory.py",
        "makers_store/cli/main.py",
    ]:
        assert required in names, required
    assert not any(name.startswith(("store/", "cli/", "emulator/", "tests/")) for name in names)
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
