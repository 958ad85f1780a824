"""Injectable time and randomness, so tests can be deterministic."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable

#: Returns the current time in milliseconds since the epoch.
Clock = Callable[[], int]
#: Returns a fresh suffix for message ids: 1 to 32 characters of [a-z0-9].
IdSource = Callable[[], str]


def system_clock() -> int:
    return time.time_ns() // 1_000_000


def random_suffix() -> str:
    """Ten hex characters (40 bits) from the OS's CSPRNG."""
    return os.urandom(5).hex()


class FixedClock:
    """A clock for tests: starts at ``start`` and advances ``step`` ms per call."""

    def __init__(self, start: int = 1_700_000_000_000, step: int = 1) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> int:
        value = self.now
        self.now += self.step
        return value


def counting_suffixes(prefix: str = "t") -> IdSource:
    """An id source for tests: t1, t2, t3, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"
