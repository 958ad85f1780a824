"""The one retry policy (makers_store.retry) and the contention it sustains.

The policy is driven with a fake clock and sleep; the load test runs sixteen
writers on the stepwise memory backend, which interleaves like object
storage (tests/bench/bench_contention.py measures the same on S3).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

import makers_store
from makers_store.emulator.memory.backend import StepwiseMemoryBlobStore
from makers_store.errors import MemoryConflictError, PreconditionFailedError
from makers_store.retry import (
    DEFAULT_RETRY,
    RetryPolicy,
    queue_allowance,
    waited_in_queue,
    writing,
)
from tests.bench.bench_contention import counted, in_tasks, lost


class FakeTime:
    """A clock that only sleeps move, and each attempt advances by ``took``."""

    def __init__(self, took: float = 0.0) -> None:
        self.now = 100.0
        self.took = took
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def policy(fake: FakeTime, **options: float) -> RetryPolicy:
    # jitter returns its ceiling: the longest wait, so the budget check is exact
    return RetryPolicy(clock=fake.clock, sleep=fake.sleep, jitter=lambda top: top, **options)


def failing(fake: FakeTime, failures: int) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        fake.now += fake.took
        if len(calls) <= failures:
            raise PreconditionFailedError("'c/c1/meta' changed", key="c/c1/meta")
        return "done"

    return calls, attempt


async def test_backoff_doubles_from_the_attempt_time_up_to_the_cap() -> None:
    fake = FakeTime(took=0.0)
    calls, attempt = failing(fake, failures=6)
    retry = policy(fake, first_delay=0.001, max_delay=0.01, budget=10)
    assert await retry.run(attempt) == "done"
    assert len(calls) == 7
    assert fake.sleeps == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.01, 0.01])
    # A slow attempt (an S3 unit under load) sets the unit the waits double from.
    fake = FakeTime(took=0.1)
    _, attempt = failing(fake, failures=3)
    await policy(fake, first_delay=0.001, max_delay=2, budget=10).run(attempt)
    assert fake.sleeps == pytest.approx([0.1, 0.2, 0.4])


async def test_gives_up_when_the_budget_runs_out_saying_how_long_and_how_often() -> None:
    fake = FakeTime(took=0.5)
    calls, attempt = failing(fake, failures=10**6)
    retry = policy(fake, first_delay=0.001, max_delay=2, budget=9.5)
    with pytest.raises(MemoryConflictError) as caught:
        await retry.run(attempt)
    assert not isinstance(caught.value, PreconditionFailedError)
    # Attempts start at 0, 1.0, 2.5, 5.0 and 7.5 s; after the fifth (ends at
    # 8.0 s) the next wait (2 s) would end past the budget.
    assert len(calls) == 5
    assert fake.now - 100.0 == pytest.approx(8.0)
    assert str(caught.value) == (
        "gave up after 5 attempts in 8.0 s of trying (the retry budget is 9.5 s; time "
        "queued behind other units is not counted): other writers kept changing the "
        "same conversation 'c1'"
    )


async def test_time_queued_for_a_connection_is_not_counted_in_the_budget() -> None:
    # Each attempt waits 5 s for a connection behind other units, then runs
    # 0.1 s and loses its race: 5 attempts (25.5 s of wall time) fit a budget
    # of 2 s, since only the 0.5 s of trying and the waits count.
    fake = FakeTime(took=0.1)
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        fake.now += 5.0
        waited_in_queue(5.0)
        fake.now += fake.took
        if len(calls) < 5:
            raise PreconditionFailedError("'c/c1/meta' changed", key="c/c1/meta")
        return "done"

    assert await policy(fake, first_delay=0.1, max_delay=0.1, budget=2).run(attempt) == "done"
    assert fake.sleeps == pytest.approx([0.1] * 4)  # the ceiling is the 0.1 s of trying


async def test_queue_allowance_is_the_budget_less_the_time_queued() -> None:
    assert queue_allowance() == (DEFAULT_RETRY.budget, DEFAULT_RETRY.budget)  # no unit

    async def attempt() -> tuple[float, float]:
        waited_in_queue(1.5)
        return queue_allowance()

    assert await RetryPolicy(budget=4).run(attempt) == (2.5, 4)


def test_waiting_outside_a_retried_unit_is_ignored() -> None:
    waited_in_queue(1.0)  # no unit: nothing to count it against


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("c/c1/meta", "conversation 'c1'"),
        ("c/c%2F1/m/0000000001", "conversation 'c/1'"),
        ("c/c1/x/claude/p/proj/h/m", "Claude session 'c1'"),
        ("x/claude/p/proj/sid", "Claude session listing"),
        ("x/claude/t/proj", "Claude session listing"),
        ("c/t1/x/langgraph/~/c/x", "LangGraph thread 't1'"),
        ("l/test/foo/.key1", "LangGraph item 'key1' in namespace ('test', 'foo')"),
        ("ln/test/.", "LangGraph store index"),
        ("i/all/000/c1", "conversation index"),
        (None, "data"),
    ],
)
def test_the_error_names_what_the_writers_kept_changing(key: str | None, named: str) -> None:
    assert writing(key) == named


async def test_other_errors_are_not_retried() -> None:
    fake = FakeTime()
    calls: list[int] = []

    async def attempt() -> None:
        calls.append(1)
        raise makers_store.MemoryValidationError("bad")

    with pytest.raises(makers_store.MemoryValidationError):
        await policy(fake).run(attempt)
    assert calls == [1] and fake.sleeps == []


def test_a_policy_that_could_not_wait_is_refused() -> None:
    with pytest.raises(makers_store.MemoryValidationError, match="first_delay"):
        RetryPolicy(first_delay=0)
    with pytest.raises(makers_store.MemoryValidationError, match="max_delay"):
        RetryPolicy(first_delay=1, max_delay=0.5)


def test_every_store_runs_its_units_under_the_default_policy() -> None:
    store = makers_store.open_store("memory://")
    assert store.runner.retry is DEFAULT_RETRY


async def test_sixteen_writers_on_one_conversation_lose_nothing_and_never_give_up() -> None:
    """Issue 12, 5b: 16 writers x 40 appends to one conversation."""
    async with counted(StepwiseMemoryBlobStore()) as store:
        outcome = await in_tasks(store, writers=16, appends=40)
        assert outcome.conflicts == []
        assert len(outcome.acknowledged) == 640
        assert await lost(store, outcome) == []
        # Somebody lost races (else the test shows nothing), and backoff kept
        # the retries few.
        assert max(outcome.attempts) > 1
        assert sum(outcome.attempts) / len(outcome.attempts) < 4
