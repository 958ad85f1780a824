"""Fixtures every Node test shares: a store on each backend the Node tests
run on, and the test projects' npm packages, installed once a session from
their committed lock files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import makers_store
from makers_store import ContextStore
from tests.backends import BACKENDS, backend_url

from .harness import CLAUDE_PROJECT, PROJECT, npm_ci

#: S3 is left out to keep the Node tests quick; every generic store method is
#: still run from Node on S3 (``any_store`` in test_node_store.py).
NODE_BACKENDS = [kind for kind in BACKENDS if kind in ("memory", "sqlite", "postgres")]


@pytest.fixture(params=NODE_BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ContextStore]:
    async with makers_store.open_store(backend_url(request.param, tmp_path)) as opened:
        yield opened


@pytest.fixture(scope="session", autouse=True)
def npm_dependencies() -> None:
    npm_ci(PROJECT)
    npm_ci(CLAUDE_PROJECT)
