"""Every backend passes the public blob conformance suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from makers_store import BlobStore, open_blob_store
from makers_store.blob_conformance import CHECKS, run_blob_conformance
from tests.backends import BACKENDS, backend_url


@pytest.mark.parametrize("kind", BACKENDS)
async def test_backend_passes_conformance(kind: str, tmp_path: Path) -> None:
    counter = 0

    async def open_backend() -> BlobStore:
        nonlocal counter
        counter += 1
        return open_blob_store(backend_url(kind, tmp_path / str(counter)))

    ran = await run_blob_conformance(open_backend)
    assert ran == [fn.__name__ for fn in CHECKS]


async def test_suite_catches_a_broken_backend() -> None:
    """The suite can fail: a backend that ignores if_none_match is caught."""
    from makers_store.blob import Op, Put
    from makers_store.emulator.memory import MemoryBlobStore

    class Careless(MemoryBlobStore):
        async def run(self, program, *, write):  # type: ignore[no-untyped-def]
            def strip(op: Op) -> Op:
                return Put(op.key, op.data) if isinstance(op, Put) else op

            inner = program

            def wrapped():  # type: ignore[no-untyped-def]
                try:
                    op = next(inner)
                    while True:
                        op = inner.send((yield strip(op)))
                except StopIteration as stop:
                    return stop.value

            return await super().run(wrapped(), write=write)

    async def open_careless() -> BlobStore:
        return Careless()

    with pytest.raises(AssertionError, match="preconditions"):
        await run_blob_conformance(open_careless)
