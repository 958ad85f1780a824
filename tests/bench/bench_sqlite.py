"""SQLite at equal durability: ours against the OpenAI SDK's SQLite sessions in
one process and in many, and how long one unit of work holds the event loop.

Every figure runs ours and the peer side by side on file databases in one
temporary directory, in alternating rounds (see bench_harness), with the same
``synchronous`` setting on both sides, read back from the connections and
printed. The SDK's sessions leave SQLite's default, FULL (an fsync of the WAL
at every commit); ours is opened with ``?synchronous=full`` to match, and at
our default NORMAL against a session configured to NORMAL.

* One caller: ``openai_session.add_items`` (one item) against
  ``AdvancedSQLiteSession`` and ``SQLiteSession``, one call at a time.
* Eight callers in one event loop (the requests of one ``serve`` worker):
  eight sessions appending at once on each side, one file per side.
* Eight processes appending to one file (``Sizes.processes``: two in smoke
  mode): each process has its own store (or its own ``SQLiteSession``) and its
  own session; all start a round together and the figure is the appends per
  second of all of them.
* Event-loop stalls: a ticker coroutine sleeps 1 ms at a time while the large
  units run; the longest gap between its ticks, less the 1 ms, is the stall.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents.extensions.memory import AdvancedSQLiteSession
from agents.memory import SQLiteSession
from bench_harness import Row, Sizes, compare, say, sqlite_url
from bench_openai import ONE, OurSessions

import makers_store

CALLERS = 8  # sessions appending at once in one event loop
STALL_BUDGET_US = 10_000  # the bound on one unit's hold of the loop
TICK = 0.001


def _configure_normal(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")


class NormalSQLiteSession(SQLiteSession):
    """SQLiteSession with ``synchronous=NORMAL`` on every connection it opens
    (it keeps one per thread), to compare with our default."""

    _configure_connection = staticmethod(_configure_normal)


SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def peer_settings(session: SQLiteSession) -> str:
    """journal_mode and synchronous of a connection configured like the session's."""
    with sqlite3.connect(session.db_path) as conn:
        type(session)._configure_connection(conn)
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    conn.close()
    return f"{journal.upper()}, synchronous={SYNC_NAMES[sync]}"


def our_settings(store: makers_store.ContextStore) -> str:
    described = store.blobs.describe()
    return f"{described['journal_mode'].upper()}, synchronous={described['synchronous'].upper()}"


# --- one caller, eight callers ------------------------------------------------


async def bench_one_process(workdir: Path, sizes: Sizes) -> list[Row]:
    say("add_items at synchronous=FULL: ours vs AdvancedSQLiteSession and SQLiteSession")
    store = makers_store.open_store(sqlite_url(workdir / "full-ours.db") + "?synchronous=full")
    advanced = AdvancedSQLiteSession(
        session_id="full", db_path=workdir / "full-advanced.db", create_tables=True
    )
    plain = SQLiteSession("full", workdir / "full-plain.db")
    ours_one = OurSessions(store, "one", ONE)
    ours_many = [OurSessions(store, f"caller{n}", ONE) for n in range(CALLERS)]
    advanced_many = [
        AdvancedSQLiteSession(
            session_id=f"caller{n}", db_path=workdir / "full-advanced-many.db", create_tables=True
        )
        for n in range(CALLERS)
    ]
    plain_many = [
        SQLiteSession(f"caller{n}", workdir / "full-plain-many.db") for n in range(CALLERS)
    ]

    async def advanced_one() -> None:
        await advanced.add_items(ONE)

    async def plain_one() -> None:
        await plain.add_items(ONE)

    async def ours_at_once() -> None:
        await asyncio.gather(*(session.add() for session in ours_many))

    async def advanced_at_once() -> None:
        await asyncio.gather(*(session.add_items(ONE) for session in advanced_many))

    async def plain_at_once() -> None:
        await asyncio.gather(*(session.add_items(ONE) for session in plain_many))

    try:
        settings = (our_settings(store), peer_settings(advanced), peer_settings(plain))
        say(f"  ours: {settings[0]}; AdvancedSQLiteSession: {settings[1]}; "
            f"SQLiteSession: {settings[2]}")  # fmt: skip
        one = await compare(
            {"ours": ours_one.add, "advanced": advanced_one, "plain": plain_one}, sizes
        )
        many = await compare(
            {"ours": ours_at_once, "advanced": advanced_at_once, "plain": plain_at_once}, sizes
        )
    finally:
        await store.close()
        for session in [advanced, plain, *advanced_many, *plain_many]:
            session.close()
    return [
        Row(
            "openai add_items, synchronous=FULL (1 item)",
            one["ours"],
            "AdvancedSQLiteSession.add_items (FULL)",
            one["advanced"],
            2.0,
            ">= 2",
        ),
        Row(  # both pay one fsync and one thread hop per call: about 1x is the design's limit
            "openai add_items, synchronous=FULL (1 item)",
            one["ours"],
            "SQLiteSession.add_items (FULL)",
            one["plain"],
            None,
            "info (fsync-bound)",
        ),
        Row(
            f"openai add_items, FULL, {CALLERS} callers at once (items/s)",
            one_item_rate(many["ours"]),
            f"{CALLERS} AdvancedSQLiteSessions at once",
            one_item_rate(many["advanced"]),
            2.0,
            ">= 2",
        ),
        Row(
            f"openai add_items, FULL, {CALLERS} callers at once (items/s)",
            one_item_rate(many["ours"]),
            f"{CALLERS} SQLiteSessions at once",
            one_item_rate(many["plain"]),
            1.0,  # 2x would need fewer rows per append: we write meta and index too
            ">= 1",
        ),
    ]


def one_item_rate(gathers_per_second: float) -> float:
    return gathers_per_second * CALLERS


# --- processes ----------------------------------------------------------------


class Workers:
    """``count`` processes of this script in ``--worker`` mode, each holding
    our store and a peer session on the two shared files, driven by lines on
    stdin: ``<kind> <start_at> <seconds>`` runs appends of ``kind`` from the
    wall-clock time ``start_at`` for ``seconds`` and answers the count."""

    def __init__(self, count: int, ours_url: str, peer_path: Path, synchronous: str) -> None:
        command = [sys.executable, __file__, "--worker", ours_url, str(peer_path), synchronous]
        self.procs = [
            subprocess.Popen(
                [*command, f"p{n}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            for n in range(count)
        ]
        self.settings = [self._read(proc) for proc in self.procs][-1]

    @staticmethod
    def _read(proc: subprocess.Popen[str]) -> Any:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker process exited {proc.wait()}")
        return json.loads(line)

    def round(self, kind: str, seconds: float) -> float:
        """Appends per second of all processes in one round of ``seconds``."""
        start_at = time.time() + 0.05
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write(f"{kind} {start_at} {seconds}\n")
        counts = [self._read(proc) for proc in self.procs]
        return sum(counts) / seconds

    def close(self) -> None:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in self.procs:
            proc.wait(timeout=60)


def compare_processes(workers: Workers, sizes: Sizes) -> dict[str, float]:
    """Median appends/s of ``ours`` and ``peer`` over alternating rounds."""
    kinds = ["ours", "peer"]
    for kind in kinds:
        workers.round(kind, sizes.round_seconds / 2)
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    for index in range(sizes.rounds):
        for kind in kinds if index % 2 == 0 else kinds[::-1]:
            samples[kind].append(workers.round(kind, max(sizes.round_seconds * 2, 0.1)))
    return {kind: statistics.median(values) for kind, values in samples.items()}


async def create_files(url: str, peer_path: Path) -> None:
    """Both files with their schemas, before the processes open them at once."""
    async with makers_store.open_store(url) as store:
        await store.get_conversation(conversation_id="none")
    SQLiteSession("setup", peer_path).close()


def bench_processes(workdir: Path, sizes: Sizes, synchronous: str) -> list[Row]:
    count = sizes.processes
    say(f"{count} processes appending to one file, synchronous={synchronous.upper()}")
    url = sqlite_url(workdir / f"procs-{synchronous}-ours.db") + f"?synchronous={synchronous}"
    peer_path = workdir / f"procs-{synchronous}-peer.db"
    asyncio.run(create_files(url, peer_path))
    workers = Workers(count, url, peer_path, synchronous)
    try:
        say(f"  ours: {workers.settings['ours']}; SQLiteSession: {workers.settings['peer']}")
        found = compare_processes(workers, sizes)
    finally:
        workers.close()
    return [
        Row(
            f"{count} processes, add_items to one file, {synchronous.upper()} (items/s)",
            found["ours"],
            f"SQLiteSession per process ({synchronous.upper()})",
            found["peer"],
            1.0,
            ">= 1",
        )
    ]


def worker_main(url: str, peer_path: str, synchronous: str, name: str) -> None:
    loop = asyncio.new_event_loop()
    store = makers_store.open_store(url)
    ours = OurSessions(store, name, ONE)
    peer_class = SQLiteSession if synchronous == "full" else NormalSQLiteSession
    peer = peer_class(name, peer_path)

    async def peer_add() -> None:
        await peer.add_items(ONE)

    ops = {"ours": ours.add, "peer": peer_add}

    async def timed(op: Callable[[], Awaitable[None]], start_at: float, seconds: float) -> int:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        end, calls = start_at + seconds, 0
        while time.time() < end:
            await op()
            calls += 1
        return calls

    loop.run_until_complete(ours.add())
    loop.run_until_complete(peer_add())
    print(json.dumps({"ours": our_settings(store), "peer": peer_settings(peer)}), flush=True)
    for line in sys.stdin:
        kind, start_at, seconds = line.split()
        calls = loop.run_until_complete(timed(ops[kind], float(start_at), float(seconds)))
        print(calls, flush=True)
    loop.run_until_complete(store.close())
    peer.close()
    loop.close()


# --- event-loop stalls ----------------------------------------------------------


class StallMeter:
    """A coroutine ticking every ``TICK`` seconds; ``longest`` is the longest
    time it was kept from running beyond its sleep, in seconds."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - TICK)
            last = now

    async def measure(self, work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
        """(longest stall, seconds the work took), in seconds."""
        gc.collect()  # a collection due from earlier work would stall whatever runs next
        self.longest = 0.0
        task = asyncio.create_task(self._tick())
        await asyncio.sleep(TICK * 3)  # the ticker is running
        started = time.perf_counter()
        try:
            await work()
        finally:
            took = time.perf_counter() - started
            await asyncio.sleep(TICK * 3)  # a stall at the very end is seen too
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        return self.longest, took


async def stalls_at(workdir: Path, sizes: Sizes, synchronous: str) -> list[Row]:
    """The longest stall of each large unit (and of a small one, and of no
    unit at all: the machine's own noise), at ``synchronous``."""
    big = sizes.long_conversation
    batch = min(1_000, big)
    say(f"event-loop stalls of large units, synchronous={synchronous.upper()}")
    url = sqlite_url(workdir / f"stalls-{synchronous}.db") + f"?synchronous={synchronous}"
    store = makers_store.open_store(url)
    meter = StallMeter()
    batch_of = [{"role": "user", "content": ONE[0]["content"]} for _ in range(batch)]
    session = store.openai_session("stalls-items")

    async def nothing() -> None:
        await asyncio.sleep(0.02)

    async def appends() -> None:
        for _ in range(100):
            await store.append_message(conversation_id="stalls-small", role="user", content="one")

    works: dict[str, Callable[[], Awaitable[object]]] = {
        "no unit (noise)": nothing,
        "100 x append_message": appends,
        f"append_messages of {batch:,}": lambda: store.append_messages(
            conversation_id="stalls-batch", messages=batch_of
        ),
        f"openai get_items() of {big:,}": session.get_items,
        f"delete_conversation of {big:,}": lambda: store.delete_conversation(
            conversation_id="stalls-long"
        ),
    }
    try:
        await session.add_items([dict(item) for item in batch_of] * (big // batch))
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in works}
        for _ in range(max(1, sizes.rounds // 2)):
            for _ in range(big // batch):
                await store.append_messages(conversation_id="stalls-long", messages=batch_of)
            for name, work in works.items():
                found[name].append(await meter.measure(work))
            await store.delete_conversation(conversation_id="stalls-batch")
            await store.delete_conversation(conversation_id="stalls-small")
    finally:
        await store.close()
    rows = []
    for name, samples in found.items():
        stall = max(stall for stall, _ in samples)
        took = statistics.median(took for _, took in samples)
        say(f"  {name}: longest stall {stall * 1e3:.1f} ms, took {took * 1e3:.1f} ms")
        rows.append(
            Row(
                f"loop stall (us), {name}, {synchronous.upper()}",
                stall * 1e6,
                "budget (us)",
                STALL_BUDGET_US,
                None if name.startswith("no unit") else 1.0,
                "info" if name.startswith("no unit") else f"<= {STALL_BUDGET_US // 1000} ms",
                lower_is_better=True,
            )
        )
    return rows


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    rows = await bench_one_process(workdir, sizes)
    for synchronous in ("full", "normal"):
        rows += await asyncio.to_thread(bench_processes, workdir, sizes, synchronous)
    for synchronous in ("normal", "full"):
        rows += await stalls_at(workdir, sizes, synchronous)
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker_main(*sys.argv[2:6])
        sys.exit(0)
    from bench_harness import run_alone

    sys.exit(run_alone(run, __doc__.split("\n", 1)[0]))
