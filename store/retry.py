"""The one retry policy for a unit of work that lost a race.

On a backend without transactions (object storage) a unit raises
:class:`~makers_store.errors.PreconditionFailedError` when another writer
changed a blob it read; run again, it reads the new state and usually
succeeds. When many writers contend for one conversation, retrying at once
makes them collide again (and on S3 every collision is billed requests), so
a retry first waits a random time between 0 and a ceiling that doubles with
each failed attempt, up to ``max_delay`` ("full jitter": the writers spread
out over the window instead of returning together). The ceiling starts at
the time the failed attempt took (at least ``first_delay``): a unit that
takes 100 ms (S3 under load) collides with everyone who starts within those
100 ms, so waits far shorter than that would not spread the writers at all. The policy gives up by
time, not by a count of attempts: a count says nothing about how long a
caller waited, which is what a caller (and a request timeout) cares about.

The budget counts time spent trying, not time spent queued: a unit that
waits for one of its backend's connections (a PostgreSQL pool slot, an S3
request slot) behind other units has not lost a race meanwhile, and under a
burst of thousands of calls that wait alone can exceed the budget. Backends
report it with :func:`waited_in_queue`, and the policy leaves it out of both
the budget and the ceiling. Queueing is bounded by the same budget, counted
apart: a unit may wait, over all its attempts, as long as its budget allows
trying (:func:`queue_allowance` tells a backend how much of that is left), so
a burst larger than a backend's pool waits its turn instead of failing, and a
unit that could not get a connection within its budget fails saying so. When
it gives up, the error names what the
writers kept changing (a conversation, a LangGraph item, a Claude session),
from the key of the blob whose condition failed.

Both the store's unit runner (:class:`makers_store._core.runner.UnitRunner`) and the
importer retry through :data:`DEFAULT_RETRY`; tests build a policy with a
fake clock and sleep.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ._core import keys
from .errors import MemoryConflictError, MemoryValidationError, PreconditionFailedError

T = TypeVar("T")


#: The running unit's retry budget and the seconds its attempts spent queued
#: (one cell per :meth:`RetryPolicy.run`; tasks a unit starts share it, as
#: they copy the context).
_queued: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "makers_store_queued", default=None
)


def waited_in_queue(seconds: float) -> None:
    """Tell the retry policy that the running unit waited ``seconds`` for a
    connection or request slot of its backend, behind other units: time the
    retry budget does not count. A no-op outside a retried unit."""
    cell = _queued.get()
    if cell is not None:
        cell[0] += seconds


def queue_allowance() -> tuple[float, float]:
    """(seconds the running unit may still wait in a backend's queue, its
    retry budget): the budget less the time its attempts already queued. A
    call outside a retried unit (a backend used directly) gets the budget of
    :data:`DEFAULT_RETRY`, whole."""
    cell = _queued.get()
    if cell is None:
        return DEFAULT_RETRY.budget, DEFAULT_RETRY.budget
    return max(0.0, cell[1] - cell[0]), cell[1]


def writing(key: str | None) -> str:
    """What the blob ``key`` belongs to, as the retry error names it."""
    if key is None:
        return "data"
    # imported here, for an error's words: every unit of every command imports this module
    from ._core.adapter_keys import (
        CLAUDE_PROJECTS,
        is_langgraph_store_key,
        parse_langgraph_item_key,
    )

    parts = key.split("/")
    if is_langgraph_store_key(key):
        try:
            namespace, item = parse_langgraph_item_key(key)
        except ValueError:
            return "LangGraph store index"
        return f"LangGraph item {item!r} in namespace {namespace!r}"
    if key.startswith(CLAUDE_PROJECTS) or key.startswith("x/claude/"):
        return "Claude session listing"
    if parts[0] == "c" and len(parts) > 2:
        cid = keys.id_of_segment(parts[1])
        named = "" if cid is None else f" {cid!r}"
        if parts[2:4] == ["x", "claude"]:
            return f"Claude session{named}"
        if parts[2:4] == ["x", "langgraph"]:
            return f"LangGraph thread{named}"
        return f"conversation{named}"
    if key.startswith((keys.INDEX_ALL, keys.INDEX_USERS)):
        return "conversation index"
    return f"blob {key!r}"


def full_jitter(ceiling: float) -> float:
    """A wait drawn uniformly from 0 to ``ceiling`` seconds."""
    import random  # here: a unit that retries needs it, every command imports this module

    return random.uniform(0, ceiling)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped, within a time budget.

    The ``n``-th retry (``n`` = 1, 2, ...) waits ``jitter(ceiling)`` seconds,
    ``ceiling = min(max_delay, max(first_delay, took) * 2 ** (n - 1))``
    where ``took`` is how long the attempt that just failed ran. A retry starts
    only if it can start within ``budget`` seconds of trying (since the first
    attempt, less the time queued: see :func:`waited_in_queue`); otherwise
    :class:`~makers_store.MemoryConflictError` says how long and how many
    times the unit was tried, and what other writers kept changing.
    ``clock`` (seconds, monotonic), ``sleep`` and ``jitter`` (a number
    between 0 and its argument) are injectable.
    """

    budget: float = 60.0
    first_delay: float = 0.001
    max_delay: float = 2.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[float], float] = full_jitter

    def __post_init__(self) -> None:
        if not 0 < self.first_delay <= self.max_delay or self.budget < 0:
            raise MemoryValidationError(
                f"RetryPolicy needs 0 < first_delay <= max_delay and budget >= 0, got "
                f"first_delay={self.first_delay}, max_delay={self.max_delay}, "
                f"budget={self.budget}"
            )

    def ceiling(self, retry: int, took: float) -> float:
        """The longest wait before retry number ``retry`` (1, 2, ...) after
        an attempt that ran ``took`` seconds."""
        # The exponent is bounded so a long budget cannot overflow the float.
        unit = max(self.first_delay, took)
        return min(self.max_delay, unit * 2.0 ** min(retry - 1, 64))

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``await attempt()`` until it does not raise PreconditionFailedError."""
        queued = [0.0, self.budget]
        token = _queued.set(queued)
        try:
            started = self.clock()
            attempts = 0
            while True:
                attempts += 1
                began, queued_before = self.clock(), queued[0]
                try:
                    return await attempt()
                except PreconditionFailedError as exc:
                    conflict = exc
                now = self.clock()
                took = now - began - (queued[0] - queued_before)
                delay = self.jitter(self.ceiling(attempts, took))
                elapsed = now - started - queued[0]
                if elapsed + delay > self.budget:
                    raise MemoryConflictError(
                        f"gave up after {attempts} attempts in {elapsed:.1f} s of trying (the "
                        f"retry budget is {self.budget:g} s; time queued behind other units is "
                        f"not counted): other writers kept changing the same "
                        f"{writing(conflict.key)}"
                    ) from None
                await self.sleep(delay)
        finally:
            _queued.reset(token)


#: The policy every store and the importer use.
DEFAULT_RETRY = RetryPolicy()
