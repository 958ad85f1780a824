"""Shared fixtures: every backend the store runs on, made fresh per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

import makers_store
from makers_store.clock import FixedClock, counting_suffixes
from tests.backends import BACKENDS, backend_url

# The benchmark scripts are run, not collected (tests/test_benchmark_smoke.py runs them).
collect_ignore = ["bench"]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)


@pytest.fixture
def make_store(url: str) -> Callable[[], makers_store.ContextStore]:
    def make() -> makers_store.ContextStore:
        return makers_store.open_store(url, clock=FixedClock(), ids=counting_suffixes())

    return make


@pytest.fixture
async def store(
    make_store: Callable[[], makers_store.ContextStore],
) -> AsyncIterator[makers_store.ContextStore]:
    async with make_store() as opened:
        yield opened
