"""Forking a long conversation on SQLite (``store.fork_conversation``).

* The fork of a conversation of ``QUOTA`` (10,000) messages, in messages per
  second, against what a user would write without it: every message read
  with ``iter_messages`` and appended to the new id with ``append_messages``
  in batches of 100 (the public API, which gives new ids and times).
* The fork of 10,000 against the fork of half as many (5,000), per
  message: a fork is one unit per page, so 2x the data should cost about 2x
  the time (target: at least 0.8 of the smaller fork's rate). 10,000 is the
  most messages a conversation holds (``programs.MAX_MESSAGES``, the
  platform's quota), so no conversation of 20,000 can be forked.

Each figure is the median of ``rounds`` forks (5 in full mode), taken in
an order reversed every round; each fork goes into a fresh id of the same
file. Quick mode forks 150 and 300 messages.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench_harness import QUOTA, Row, Sizes, say, sqlite_url

import makers_store

BATCH = 100
FILL_BATCH = 500


async def _fill(store: makers_store.ContextStore, cid: str, count: int) -> None:
    for start in range(0, count, FILL_BATCH):
        await store.append_messages(
            cid,
            [
                {
                    "role": "user" if n % 2 == 0 else "assistant",
                    "content": f"message {n}: " + "lorem ipsum " * 12,
                    "metadata": {"n": n},
                }
                for n in range(start, min(count, start + FILL_BATCH))
            ],
            user_id="u_bench",
        )


async def _copy_by_hand(store: makers_store.ContextStore, source: str, new: str) -> None:
    batch: list[dict[str, object]] = []
    async for message in store.iter_messages(source, page_size=100):
        batch.append(
            {"role": message.role, "content": message.content, "metadata": message.metadata}
        )
        if len(batch) == BATCH:
            await store.append_messages(new, batch, user_id="u_bench")
            batch = []
    if batch:
        await store.append_messages(new, batch, user_id="u_bench")


async def _median_rate(
    contenders: dict[str, Callable[[str], Awaitable[object]]], count: dict[str, int], rounds: int
) -> dict[str, float]:
    """Messages per second of each contender: the median of ``rounds`` calls,
    taken in an order reversed every round, each into a fresh id."""
    fresh = (f"fork-{n}" for n in itertools.count())
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for turn in range(rounds):
        order = list(contenders.items())
        for name, op in order if turn % 2 == 0 else order[::-1]:  # each goes first in turn
            start = time.perf_counter()
            await op(next(fresh))
            samples[name].append(count[name] / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in samples.items()}


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    quick = sizes.long_conversation < QUOTA
    large = 300 if quick else QUOTA
    small = large // 2
    rounds = max(4, sizes.rounds - 2)
    url = sqlite_url(workdir / "fork.db")
    async with makers_store.open_store(url) as store:
        await _fill(store, "small", small)
        await _fill(store, "large", large)
        say(f"fork: {small:,} and {large:,} messages, {rounds} forks each")
        rates = await _median_rate(
            {
                "fork small": lambda new: store.fork_conversation("small", new),
                "by hand": lambda new: _copy_by_hand(store, "large", new),
                "fork large": lambda new: store.fork_conversation("large", new),
            },
            {"fork small": small, "by hand": large, "fork large": large},
            rounds,
        )
    return [
        Row(
            f"fork_conversation, {large:,} messages (messages/s)",
            rates["fork large"],
            "iter_messages + append_messages(100)",
            rates["by hand"],
            None,
            "for information",
        ),
        Row(
            f"fork_conversation, {large:,} against {small:,} messages (per message)",
            rates["fork large"],
            f"fork of {small:,}",
            rates["fork small"],
            0.8,
            ">= 0.8x (2x data ~ 2x time)",
        ),
    ]


if __name__ == "__main__":
    import sys

    from bench_harness import run_alone

    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
