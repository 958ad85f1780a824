"""The adapters' tests run on tests.backends.ADAPTER_BACKENDS."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import ADAPTER_BACKENDS, backend_url


@pytest.fixture(params=ADAPTER_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)
