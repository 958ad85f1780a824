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

Both the store's unit runner (:class:`makers_store.runner.UnitRunner`) and the
importer retry through :data:`DEFAULT_RETRY`; tests build a policy with a
fake clock and sleep.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import MemoryConflictError, MemoryValidationError, PreconditionFailedError

T = TypeVar("T")


def full_jitter(ceiling: float) -> float:
    """A wait drawn uniformly from 0 to ``ceiling`` seconds."""
    return random.uniform(0, ceiling)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped, within a time budget.

    The ``n``-th retry (``n`` = 1, 2, ...) waits ``jitter(ceiling)`` seconds,
    ``ceiling = min(max_delay, max(first_delay, took) * 2 ** (n - 1))``
    where ``took`` is how long the attempt that just failed ran. A retry starts
    only if it can start within ``budget`` seconds of the first attempt;
    otherwise :class:`~makers_store.MemoryConflictError` says how long and how
    many times the unit was tried. ``clock`` (seconds, monotonic), ``sleep``
    and ``jitter`` (a number between 0 and its argument) are injectable.
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
        started = self.clock()
        attempts = 0
        while True:
            attempts += 1
            began = self.clock()
            try:
                return await attempt()
            except PreconditionFailedError:
                pass
            now = self.clock()
            delay = self.jitter(self.ceiling(attempts, now - began))
            elapsed = now - started
            if elapsed + delay > self.budget:
                raise MemoryConflictError(
                    f"gave up after {attempts} attempts in {elapsed:.1f} s (the retry budget "
                    f"is {self.budget:g} s): other writers kept changing the same conversation"
                ) from None
            await self.sleep(delay)


#: The policy every store and the importer use.
DEFAULT_RETRY = RetryPolicy()
