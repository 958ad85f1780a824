"""The adapters' tests run on tests.backends.ADAPTER_LOGIC_BACKENDS, and
those marked ``on_s3`` on ADAPTER_BACKENDS (s3 too): see tests/backends.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import ADAPTER_BACKENDS, ADAPTER_LOGIC_BACKENDS, backend_url


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "url" not in metafunc.fixturenames:
        return
    on_s3 = metafunc.definition.get_closest_marker("on_s3") is not None
    kinds = ADAPTER_BACKENDS if on_s3 else ADAPTER_LOGIC_BACKENDS
    metafunc.parametrize("url", kinds, indirect=True, ids=kinds)


@pytest.fixture
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, tmp_path)
