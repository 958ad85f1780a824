"""The development-time generators (devtools/) run from the checkout, write
only into it, and are not part of the installed package (the wheel's
contents: tests/test_packaging.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import makers_store.sync_api
from devtools import ROOT, checked_target, completions, sync_codegen


def test_they_are_not_modules_of_the_package() -> None:
    for name in ("makers_store._sync_codegen", "makers_store.cli.completions"):
        assert importlib.util.find_spec(name) is None, name


def test_they_read_and_write_the_checkout() -> None:
    assert ROOT == Path(__file__).resolve().parents[1]
    assert sync_codegen.SOURCE == ROOT / "store" / "context_store.py"
    assert sync_codegen.TARGET == Path(makers_store.sync_api.__file__)
    assert completions.DIRECTORY == ROOT / "completions"


@pytest.mark.parametrize("key", ["purelib", "platlib"])
def test_they_refuse_to_write_into_site_packages(key: str) -> None:
    inside = Path(sysconfig.get_paths()[key]) / "makers_store" / "sync_api.py"
    with pytest.raises(SystemExit, match="refusing to write"):
        checked_target(inside)
    target = Path(sysconfig.get_paths()[key]) / "makers-store-completions-probe"
    with pytest.raises(SystemExit, match="refusing to write"):
        completions.main([str(target)])
    assert not target.exists()


def test_the_sync_codegen_checks_and_runs_from_the_checkout() -> None:
    assert sync_codegen.main(["--check"]) == 0, "run: python -m devtools.sync_codegen"
    done = subprocess.run(
        [sys.executable, "-m", "devtools.sync_codegen", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
