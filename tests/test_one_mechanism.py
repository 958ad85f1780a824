"""One mechanism each (issue 31): where the store once had a copy beside the
one mechanism, a test shows the copy's work now goes through the one.

- ``append_messages`` with caller ids is one batched unit: one meta write on
  a transactional backend (the batch intent's two without transactions), as
  a batch without ids, not one append per message.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store.blob_ops import Op, Put
from tests.backends import BACKENDS, backend_url


class OpCounter:
    """Counts the units a store runs and the meta writes in them, by wrapping
    the backend's ``run`` (the programs and the backend run as they are)."""

    def __init__(self, store: makers_store.ContextStore) -> None:
        self.units = 0
        self.meta_puts = 0
        blobs = store.runner.blobs
        run = blobs.run

        async def counted_run(program: Any, *, write: bool) -> Any:
            self.units += 1
            return await run(self._count(program), write=write)

        blobs.run = counted_run  # type: ignore[method-assign]

    def _count(self, program: Generator[Op, Any, Any]) -> Generator[Op, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = program.send(value) if error is None else program.throw(error)
            except StopIteration as stop:
                return stop.value
            if isinstance(op, Put) and op.key.endswith("/meta"):
                self.meta_puts += 1
            try:
                value, error = (yield op), None
            except BaseException as exc:  # thrown into the program, as the backend would
                value, error = None, exc

    def reset(self) -> None:
        self.units = self.meta_puts = 0


@pytest.mark.parametrize("kind", [k for k in BACKENDS if k in ("memory", "stepwise", "sqlite")])
async def test_a_batch_with_caller_ids_is_one_batched_unit(kind: str, tmp_path: Path) -> None:
    async with makers_store.open_store(backend_url(kind, tmp_path)) as store:
        await store.append_message("c", "user", "first")  # layout and conversation exist
        counter = OpCounter(store)
        batch = [{"role": "user", "content": f"m{i}", "message_id": f"id-{i}"} for i in range(50)]
        batch[7] = {"role": "user", "content": "no id"}
        ids = await store.append_messages("c", batch)
        assert counter.units == 1
        # the intent and its commit without transactions; the commit alone with them
        assert counter.meta_puts == (2 if kind == "stepwise" else 1)
        assert ids[:7] == [f"id-{i}" for i in range(7)] and ids[8] == "id-8"
        assert [m.message_id for m in await store.get_messages("c", limit=100)][1:] == ids
        counter.reset()
        assert await store.append_messages("c", batch[:7]) == ids[:7]  # held: idempotent
        assert (counter.units, counter.meta_puts) == (1, 0)
        assert (await store.get_conversation("c")).message_count == 51  # type: ignore[union-attr]
