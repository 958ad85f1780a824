"""``store.state``: a JSON key-value store bound to one conversation
(:class:`StateStore`), whose entries live beside the conversation's messages
and go with it (:mod:`makers_store._core.state_programs`)."""

from __future__ import annotations

from typing import Any

from .._core import state_programs, validate
from .._core.codec import encode_json
from .._core.runner import UnitRunner


class StateStore:
    """A JSON key-value store bound to one conversation."""

    def __init__(self, runner: UnitRunner, conversation_id: str) -> None:
        self._runner = runner
        self.conversation_id = conversation_id

    async def get(self, key: str) -> Any:
        """The value stored under ``key``, or None."""
        name = validate.state_key(key)
        return await self._runner.run(
            lambda: state_programs.state_get(self.conversation_id, name), write=False
        )

    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (strict JSON) under ``key``."""
        name = validate.state_key(key)
        value_json = encode_json(value, argument="value")
        now = self._runner.clock()
        await self._runner.run(
            lambda: state_programs.state_set(self.conversation_id, name, value_json, now),
            write=True,
        )

    async def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""
        name = validate.state_key(key)
        now = self._runner.clock()
        await self._runner.run(
            lambda: state_programs.state_delete(self.conversation_id, name, now), write=True
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this conversation's state."""
        return await self._runner.run(
            lambda: state_programs.state_items(self.conversation_id), write=False
        )
