"""Many writers appending to one conversation: conflicts, attempts, throughput.

Run it from the repository root::

    .venv/bin/python tests/bench/bench_contention.py                 # stepwise memory and S3 (moto)
    .venv/bin/python tests/bench/bench_contention.py --backend stepwise --writers 32 --appends 100

Each scenario starts ``writers`` writers at once, each appending ``appends``
messages to one conversation of a fresh store, and reports how many appends
raised :class:`~makers_store.MemoryConflictError`, the attempts each append
took (runs of its unit of work: 1 when no other writer got in the way) and
the appends per second of the whole run. Then it checks that nothing was
lost: every acknowledged append is readable under the id it returned, the
message seqs run 0, 1, 2... without a gap, and meta counts them all.

Writers are asyncio tasks on one store object (stepwise memory: the
in-process backend that interleaves like object storage; S3: the moto
server of tests/servers/s3.py) and, on S3, also separate OS processes, each
with a store object of its own, as instances on several machines would be.
The moto server handles one request at a time, so its figures are those of
a slow, serialised S3; real S3 serves requests in parallel.

tests/test_contention.py runs the stepwise scenario as a pass/fail test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``tests.servers`` importable
    sys.path.insert(0, str(ROOT))

import makers_store  # noqa: E402
from makers_store._core import keys  # noqa: E402
from makers_store.blob import BlobStore  # noqa: E402
from makers_store.blob_ops import Program  # noqa: E402

T = TypeVar("T")
CID = "contended"

#: the unit runs of the append in progress in this task (None: not counted)
_runs: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("_runs", default=None)


class AttemptCounter(BlobStore):
    """Passes every unit of work to ``inner`` and counts, per asyncio task,
    how many units the current append has run: one per attempt."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        # Instance values shadow the class defaults: the store's programs read these.
        self.capabilities = inner.capabilities  # type: ignore[misc]

    async def run(self, program: Program[T], *, write: bool) -> T:
        counter = _runs.get()
        if counter is not None:
            counter[0] += 1
        return await self.inner.run(program, write=write)

    async def close(self) -> None:
        await self.inner.close()


@dataclass
class Outcome:
    """What the writers of one scenario saw."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # message id -> content
    conflicts: list[str] = field(default_factory=list)  # MemoryConflictError messages
    attempts: list[int] = field(default_factory=list)  # per append, acknowledged or not
    latencies: list[float] = field(default_factory=list)  # seconds per append
    seconds: float = 0.0

    def absorb(self, other: Outcome) -> None:
        self.acknowledged.update(other.acknowledged)
        self.conflicts += other.conflicts
        self.attempts += other.attempts
        self.latencies += other.latencies

    def as_json(self) -> str:
        return json.dumps(
            {"acknowledged": self.acknowledged, "conflicts": self.conflicts,
             "attempts": self.attempts, "latencies": self.latencies}
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        data = json.loads(text)
        return cls(data["acknowledged"], data["conflicts"], data["attempts"], data["latencies"])

    def summary(self) -> str:
        appends = len(self.attempts)
        rate = len(self.acknowledged) / self.seconds if self.seconds else 0.0
        return (
            f"{appends} appends, {len(self.conflicts)} MemoryConflictError, "
            f"attempts per append mean {statistics.fmean(self.attempts):.2f} "
            f"max {max(self.attempts)}, seconds per append mean "
            f"{statistics.fmean(self.latencies):.3f} max {max(self.latencies):.2f}, "
            f"{rate:,.0f} appends/s ({self.seconds:.2f} s)"
        )


async def write(store: makers_store.ContextStore, tag: str, appends: int) -> Outcome:
    """One writer: ``appends`` appends of ``{tag}-{i}``, each counted."""
    outcome = Outcome()
    for i in range(appends):
        counter = [0]
        _runs.set(counter)
        content = f"{tag}-{i}"
        started = time.perf_counter()
        try:
            mid = await store.append_message(conversation_id=CID, role="user", content=content)
        except makers_store.MemoryConflictError as exc:
            outcome.conflicts.append(str(exc))
        else:
            outcome.acknowledged[mid] = content
        finally:
            _runs.set(None)
        outcome.latencies.append(time.perf_counter() - started)
        outcome.attempts.append(counter[0])
    return outcome


async def in_tasks(store: makers_store.ContextStore, writers: int, appends: int) -> Outcome:
    """``writers`` asyncio tasks sharing ``store`` (wrapped in an AttemptCounter)."""
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(write(store, f"w{n}", appends) for n in range(writers)))
    total = Outcome(seconds=time.perf_counter() - started)
    for outcome in outcomes:
        total.absorb(outcome)
    return total


def in_processes(url: str, writers: int, appends: int) -> Outcome:
    """``writers`` OS processes, each with its own store on ``url``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(Path(__file__)), "--worker", url, str(appends)]
    started = time.perf_counter()
    procs = [
        subprocess.Popen([*command, f"p{n}"], env=env, stdout=subprocess.PIPE, text=True)
        for n in range(writers)
    ]
    total = Outcome()
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"writer process exited {proc.returncode}")
        total.absorb(Outcome.from_json(out))
    # Process start-up (imports) is included: a few hundred ms in all.
    total.seconds = time.perf_counter() - started
    return total


def counted(blobs: BlobStore) -> makers_store.ContextStore:
    return makers_store.ContextStore(AttemptCounter(blobs))


async def lost(store: makers_store.ContextStore, outcome: Outcome) -> list[str]:
    """What the store fails to show of ``outcome``'s acknowledged appends
    (an empty list: nothing lost, seqs contiguous, meta agrees)."""
    messages: list[makers_store.Message] = []
    after = None
    while page := await store.get_messages(conversation_id=CID, limit=100, after=after):
        messages += page
        after = page[-1].message_id
    problems = []
    stored = {m.message_id: m.content for m in messages}
    for mid, content in outcome.acknowledged.items():
        if stored.get(mid) != content:
            problems.append(f"acknowledged {mid} ({content!r}) reads as {stored.get(mid)!r}")
    seqs = [keys.seq_of_message_id(m.message_id) for m in messages]
    if seqs != list(range(len(messages))):
        problems.append(f"seqs are not 0..{len(messages) - 1}: {seqs}")
    meta = await store.get_conversation(conversation_id=CID)
    if meta is None or meta.message_count != len(messages):
        problems.append(f"meta counts {meta and meta.message_count}, {len(messages)} readable")
    # A conflict may still have landed (helped by another writer): never more.
    if not len(outcome.acknowledged) <= len(messages) <= len(outcome.attempts):
        problems.append(f"{len(messages)} messages for {len(outcome.acknowledged)} acknowledged")
    return problems


async def scenario(name: str, run: Any, reader: makers_store.ContextStore) -> Outcome:
    outcome: Outcome = await run()
    problems = await lost(reader, outcome)
    print(f"{name}: {outcome.summary()}; {'nothing lost' if not problems else problems[:3]}")
    if outcome.conflicts:
        print(f"  first conflict: {outcome.conflicts[0]}")
    return outcome


async def main(backends: list[str], writers: int, appends: int, processes: bool) -> int:
    from makers_store.emulator.memory.backend import StepwiseMemoryBlobStore

    failed = False
    label = f"{writers} writers x {appends} appends"
    if "stepwise" in backends:
        async with counted(StepwiseMemoryBlobStore()) as store:
            run = lambda: in_tasks(store, writers, appends)  # noqa: E731
            out = await scenario(f"stepwise memory, {label}, tasks", run, store)
            failed |= bool(out.conflicts)
    if "s3" in backends:
        from tests.servers.s3 import s3_url

        url = s3_url()
        async with counted(makers_store.open_store(url).blobs) as store:
            run = lambda: in_tasks(store, writers, appends)  # noqa: E731
            out = await scenario(f"s3 (moto), {label}, tasks", run, store)
            failed |= bool(out.conflicts)
        if processes:
            url = s3_url()
            async with makers_store.open_store(url) as store:
                run = lambda: asyncio.to_thread(in_processes, url, writers, appends)  # noqa: E731
                out = await scenario(f"s3 (moto), {label}, processes", run, store)
                failed |= bool(out.conflicts)
    return 1 if failed else 0


async def worker(url: str, appends: int, tag: str) -> None:
    async with counted(makers_store.open_store(url).blobs) as store:
        print((await write(store, tag, appends)).as_json())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        asyncio.run(worker(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["stepwise", "s3", "all"], default="all")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--appends", type=int, default=40)
    parser.add_argument("--no-processes", action="store_true", help="skip the S3 processes run")
    args = parser.parse_args()
    chosen = ["stepwise", "s3"] if args.backend == "all" else [args.backend]
    sys.exit(asyncio.run(main(chosen, args.writers, args.appends, not args.no_processes)))
