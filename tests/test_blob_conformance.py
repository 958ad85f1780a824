"""Every backend keeps every rule of the public blob conformance suite, each reported on its own
(``test_backend_keeps_the_rule[sqlite-preconditions]``), and the suite itself can fail."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from makers_store import BlobStore, open_blob_store
from makers_store.blob_conformance import (
    CHECKS,
    RULES,
    BlobStoreTests,
    Check,
    run_blob_conformance,
    run_blob_rule,
)
from makers_store.blob_ops import Op, Program, Put
from makers_store.emulator.memory.backend import MemoryBlobStore
from tests.backends import BACKENDS, backend_url

ROOT = Path(__file__).resolve().parents[1]


def opener(kind: str, tmp_path: Path) -> Callable[[], Awaitable[BlobStore]]:
    """Fresh, empty backends of ``kind``, one per call."""
    counter = 0

    async def open_backend() -> BlobStore:
        nonlocal counter
        counter += 1
        return open_blob_store(backend_url(kind, tmp_path / str(counter)))

    return open_backend


@pytest.mark.parametrize("rule", CHECKS, ids=[fn.__name__ for fn in CHECKS])
@pytest.mark.parametrize("kind", BACKENDS)
async def test_backend_keeps_the_rule(kind: str, rule: Check, tmp_path: Path) -> None:
    assert await run_blob_rule(rule, opener(kind, tmp_path)) == rule.__name__


class Careless(MemoryBlobStore):
    """A backend that ignores if_match / if_none_match on put."""

    async def run(self, program: Program[object], *, write: bool) -> object:
        def strip(op: Op) -> Op:
            return Put(op.key, op.data) if isinstance(op, Put) else op

        def wrapped() -> Program[object]:
            try:
                op = next(program)
                while True:
                    op = program.send((yield strip(op)))
            except StopIteration as stop:
                return stop.value

        return await super().run(wrapped(), write=write)


async def open_careless() -> BlobStore:
    return Careless()


async def test_the_plain_entry_point_runs_every_rule_in_order() -> None:
    async def open_memory() -> BlobStore:
        return MemoryBlobStore()

    assert await run_blob_conformance(open_memory) == [fn.__name__ for fn in CHECKS]
    assert list(RULES) == [fn.__name__ for fn in CHECKS]


async def test_the_plain_entry_point_names_the_first_broken_rule() -> None:
    with pytest.raises(AssertionError, match=r"^preconditions: if_none_match on an existing key"):
        await run_blob_conformance(open_careless)


async def test_each_rule_says_for_itself_whether_a_backend_keeps_it() -> None:
    broken = []
    for name in RULES:
        try:
            await run_blob_rule(name, open_careless)
        except AssertionError as exc:
            assert str(exc).startswith(f"{name}: ")
            broken.append(name)
    # the failed conditional write inside a program is not thrown into it either
    assert broken == ["preconditions", "programs_run_as_units"]


def test_the_pytest_base_class_has_one_test_per_rule() -> None:
    tests = [name for name in vars(BlobStoreTests) if name.startswith("test_")]
    assert tests == [f"test_{fn.__name__}" for fn in CHECKS]
    for fn in CHECKS:
        assert fn.__doc__, f"rule {fn.__name__} says what it checks"
        assert getattr(BlobStoreTests, f"test_{fn.__name__}").__doc__ == fn.__doc__


class TestMemoryBackendThroughTheBaseClass(BlobStoreTests):
    """How a third-party backend uses the suite under pytest (here the memory backend)."""

    async def open_backend(self) -> BlobStore:
        return MemoryBlobStore()


@pytest.mark.slow
def test_under_pytest_a_broken_backend_fails_only_the_rules_it_breaks(tmp_path: Path) -> None:
    (tmp_path / "test_careless.py").write_text(
        "import pytest\n"
        "from makers_store.blob_conformance import BlobStoreTests\n"
        "from tests.test_blob_conformance import Careless\n\n"
        "@pytest.mark.asyncio\n"
        "class TestCareless(BlobStoreTests):\n"
        "    async def open_backend(self):\n"
        "        return Careless()\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-c", os.devnull,
         "--rootdir", str(tmp_path), str(tmp_path / "test_careless.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    failed = sorted(re.findall(r"^FAILED \S+::TestCareless::(\w+)", done.stdout, re.MULTILINE))
    assert failed == ["test_preconditions", "test_programs_run_as_units"], done.stdout
    assert f"{len(CHECKS) - 2} passed" in done.stdout, done.stdout
