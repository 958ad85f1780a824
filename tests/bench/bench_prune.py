"""Retention on SQLite (``store.admin.prune_conversations``).

* The prune of 100,000 idle conversations (one message each), in
  conversations per second, beside deleting conversations one by one with
  ``delete_conversation`` (2,000 of them, ids known: what a script would do
  without the prune), for information.
* The prune of 200,000 against the prune of 100,000, per conversation: the
  walk reads the recency index from the cutoff on and each unit deletes a
  batch, so 2x the data should cost about 2x the time (target: at least 0.8
  of the smaller prune's rate).
* The prune of a store of 100,000 conversations of which 1% are idle, per
  idle conversation, against the all-idle prune: the walk starts at the
  cutoff's place in the index and never reads the 99,000 active ones, so it
  should cost about the 1% (target: at least 0.25 of the all-idle rate; a
  walk of the whole store would read 100 conversations per one deleted and
  land near 0.01; the fixed costs of a short run, a few units and listings,
  keep it under 1).

Stores are built in bulk: meta, message and index entry of 1,000
conversations per unit of work, written with the store's own records and
keys (as an import would, without reading a file), so building 100,000 takes
seconds. A prune consumes its store, so each figure is one run. Quick mode
uses 2,000 and 4,000 conversations and deletes 200 by hand.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from bench_harness import QUOTA, Row, Sizes, say, sqlite_url

import makers_store
from makers_store._core import keys
from makers_store._core.codec import ConversationRecord, encode_message
from makers_store.blob_ops import Program, put

DAY_MS = 86_400_000
BUILD_BATCH = 1_000
IDLE = timedelta(days=30)


def _build(first: int, count: int, idle: int, now: int) -> Program[None]:
    """Conversations b{first}.. b{first+count-1}, one message each, as
    appends would leave them: those below ``idle`` last written 60 days
    before ``now``, the others at ``now``."""
    for n in range(first, first + count):
        cid = f"b{n}"
        at = now - 60 * DAY_MS if n < idle else now
        record = ConversationRecord(
            cid, created_at=at, last_message_at=at, message_count=1, next_seq=1, last_tie=0
        )
        message = encode_message(
            message_id=keys.message_id(0, "bench"),
            role="user",
            content_json='"a message to be pruned"',
            created_at=at,
            metadata_json="{}",
        )
        yield from put(keys.message_key(cid, 0), message)
        yield from put(keys.index_key(keys.INDEX_ALL, record.position, cid), b"")
        yield from put(keys.meta_key(cid), record.encode())


async def _store(path: Path, idle: int, active: int) -> str:
    """A store of ``idle`` conversations last written 60 days ago and
    ``active`` written now."""
    url = sqlite_url(path)
    start = time.perf_counter()
    async with makers_store.open_store(url) as store:
        now = store.runner.clock()
        for first in range(0, idle + active, BUILD_BATCH):
            count = min(BUILD_BATCH, idle + active - first)

            def build(first: int = first, count: int = count) -> Program[None]:
                return _build(first, count, idle, now)

            await store.runner.run(build, write=True)
    say(f"  built {idle:,} idle + {active:,} active in {time.perf_counter() - start:.1f} s")
    return url


async def _prune(url: str) -> tuple[int, float]:
    """(conversations deleted, seconds) of one prune."""
    async with makers_store.open_store(url) as store:
        start = time.perf_counter()
        report = await store.admin.prune_conversations(IDLE)
        return report.conversations, time.perf_counter() - start


async def _by_hand(url: str, count: int) -> float:
    """Conversations per second of ``delete_conversation`` called per id."""
    async with makers_store.open_store(url) as store:
        start = time.perf_counter()
        for n in range(count):
            await store.delete_conversation(f"b{n}")
        return count / (time.perf_counter() - start)


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    quick = sizes.long_conversation < QUOTA
    base = 2_000 if quick else 100_000
    manual = 200 if quick else 2_000
    say(f"prune: {base:,} and {2 * base:,} idle conversations, and 1% of {base:,}")
    rates: dict[str, float] = {}
    for name, idle, active in (
        ("base", base, 0),
        ("double", 2 * base, 0),
        ("sparse", base // 100, base - base // 100),
    ):
        url = await _store(workdir / f"prune-{name}.db", idle, active)
        deleted, seconds = await _prune(url)
        assert deleted == idle, (name, deleted, idle)
        rates[name] = deleted / seconds
        say(f"  prune {name}: {deleted:,} deleted in {seconds:.2f} s")
    hand = await _by_hand(await _store(workdir / "prune-hand.db", manual, 0), manual)
    return [
        Row(
            f"prune_conversations, {base:,} idle (conversations/s)",
            rates["base"],
            "delete_conversation per id",
            hand,
            None,
            "for information",
        ),
        Row(
            f"prune_conversations, {2 * base:,} against {base:,} idle (per conversation)",
            rates["double"],
            f"prune of {base:,}",
            rates["base"],
            0.8,
            ">= 0.8x (2x data ~ 2x time)",
        ),
        Row(
            f"prune_conversations, 1% idle of {base:,} (per idle conversation)",
            rates["sparse"],
            f"all {base:,} idle",
            rates["base"],
            0.25,
            ">= 0.25x (costs the 1%)",
        ),
    ]


if __name__ == "__main__":
    import sys

    from bench_harness import run_alone

    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
