"""What every benchmark module shares: sizes, rows, side-by-side timing, the table.

``tests/bench/benchmark.py`` is the entry point; each ``bench_*.py`` beside it
exposes ``async def run(workdir, sizes) -> list[Row]`` for one area.
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The repository's root, so that ``tests.servers`` (the throwaway PostgreSQL and
#: S3 servers the test suite also uses) imports when a script here is run by
#: path, which puts only this folder on ``sys.path``.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

Op = Callable[[], Awaitable[object]]
#: one timed round of a contender that times itself (a Node process does, so
#: that its figure holds no pipe to this process): (seconds, min_ops) -> ops/s
Round = Callable[[float, int], Awaitable[float]]

QUOTA = 10_000


@dataclass(frozen=True)
class Sizes:
    rounds: int  # timed rounds per contender, in alternating order
    round_seconds: float  # minimum duration of one timed round
    min_ops: int  # minimum calls in one timed round
    long_conversation: int  # messages in the read / late-append conversation
    window: int  # timed appends per growth window
    growth_rounds: int  # early and late windows measured (interleaved)
    list_small: int  # conversations in the small list database
    list_large: int  # conversations in the large list database
    list_users: int  # conversations are spread round-robin over this many users
    processes: int  # processes appending to one file (bench_sqlite.py)
    #: S3 request counts span this many STALE_INDEX_BATCH's of calls each (bench_backends.py)
    count_batches: int


FULL = Sizes(
    rounds=7,
    round_seconds=0.5,
    min_ops=30,
    long_conversation=QUOTA,
    window=10,
    growth_rounds=40,
    list_small=1_000,
    list_large=100_000,
    list_users=10,
    processes=8,
    count_batches=2,
)
#: Tiny data, with rounds long and many enough to average out sampling noise
#: (benchmark.py --compare runs these); what a loaded machine does to peers
#: that wait for a thread they cannot average out (bench_guard.LEFT_OUT).
QUICK = Sizes(
    rounds=5,
    round_seconds=0.08,
    min_ops=5,
    long_conversation=120,
    window=10,
    growth_rounds=4,
    list_small=60,
    list_large=400,
    list_users=2,
    #: quick mode runs eight as well: the regression guard (benchmark.py
    #: --compare, quick mode) holds the eight-process FULL figure, an accepted limit
    processes=8,
    count_batches=2,
)
#: Quick's data and the same code paths, with every contender timed just
#: enough to give a figure: both orders of the alternating rounds, a couple
#: of calls each, two writer processes, S3 requests counted over
#: one index clean-up's worth of calls. The test suite runs it
#: (tests/test_benchmark_smoke.py) to prove every area runs end to end and
#: prints its rows; its figures mean nothing, and it is never compared.
SMOKE = dataclasses.replace(
    QUICK, rounds=2, round_seconds=0.005, min_ops=2, growth_rounds=2, processes=2, count_batches=1
)


@dataclass(frozen=True)
class Row:
    operation: str
    ours: float  # ops/s
    baseline: str
    baseline_ops: float
    target: float | None  # minimum of ours / baseline_ops; None = for information
    target_text: str
    #: for counts (requests per call): the target is a maximum of the ratio
    lower_is_better: bool = False

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline_ops

    @property
    def passed(self) -> bool | None:
        if self.target is None:
            return None
        return self.ratio <= self.target if self.lower_is_better else self.ratio >= self.target


def sqlite_url(path: Path) -> str:
    """``sqlite:///`` + an absolute path (so four slashes)."""
    return f"sqlite:///{path.resolve()}"


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- timing -----------------------------------------------------------------


async def timed_round(op: Op, seconds: float, min_ops: int) -> float:
    """ops/s of one round: at least ``min_ops`` calls lasting at least ``seconds``."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        await op()
        calls += 1
        now = time.perf_counter()
        if calls >= min_ops and now >= deadline:
            return calls / (now - start)


async def compare(contenders: Mapping[str, Op], sizes: Sizes) -> dict[str, float]:
    """Median ops/s of each contender over alternating rounds, after a warm-up."""
    return await compare_rounds({name: rounds_of(op) for name, op in contenders.items()}, sizes)


def rounds_of(op: Op) -> Round:
    """``op`` as a contender of :func:`compare_rounds`."""

    async def one_round(seconds: float, min_ops: int) -> float:
        return await timed_round(op, seconds, min_ops)

    return one_round


async def compare_rounds(contenders: Mapping[str, Round], sizes: Sizes) -> dict[str, float]:
    """:func:`compare` for contenders that time their own rounds."""
    names = list(contenders)
    for name in names:
        await contenders[name](sizes.round_seconds / 2, sizes.min_ops)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(sizes.rounds):
        for name in names if index % 2 == 0 else names[::-1]:
            gc.collect()
            samples[name].append(await contenders[name](sizes.round_seconds, sizes.min_ops))
    return {name: statistics.median(values) for name, values in samples.items()}


async def populate(label: str, count: int, append: Callable[[int], Awaitable[object]]) -> None:
    start = time.perf_counter()
    for index in range(count):
        await append(index)
    elapsed = time.perf_counter() - start
    say(f"  populated {label}: {count:,} appends in {elapsed:.1f} s ({count / elapsed:,.0f}/s)")


def table(rows: list[Row], quick: bool, mode: str = "quick") -> list[str]:
    """The rows as a text table; ``quick``: targets are shown, marked as not
    enforced in ``mode``."""
    header = ("operation", "ours ops/s", "baseline", "baseline ops/s", "ratio", "target", "result")
    cells = [header]
    for row in rows:
        if row.passed is None:
            result = "-"
        else:
            result = "PASS" if row.passed else "FAIL"
            if quick:
                result += f" ({mode}: not enforced)"
        cells.append(
            (
                row.operation,
                f"{row.ours:,.0f}",
                row.baseline,
                f"{row.baseline_ops:,.0f}",
                f"{row.ratio:.2f}",
                row.target_text,
                result,
            )
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    numeric = {1, 3, 4}

    def fmt(line: tuple[str, ...]) -> str:
        return "  ".join(
            text.rjust(width) if i in numeric else text.ljust(width)
            for i, (text, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [fmt(header), rule, *(fmt(line) for line in cells[1:])]


def run_alone(run: Callable[[Path, Sizes], Awaitable[list[Row]]], description: str) -> int:
    """What ``python tests/bench/bench_X.py [--quick | --smoke]`` does for one
    area: its rows in a temporary directory, the table, and the exit code of
    ``benchmark.py`` (1 when a full-size target is missed; quick and smoke
    never fail)."""
    import argparse
    import asyncio
    import tempfile

    parser = argparse.ArgumentParser(description=description)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes; never fails")
    size.add_argument("--smoke", action="store_true", help="quick's data, one short round each")
    args = parser.parse_known_args()[0]
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="makers-bench-") as tmp:
        rows = asyncio.run(run(Path(tmp), sizes))
    quick = sizes is not FULL
    print("\n".join(table(rows, quick, "smoke" if args.smoke else "quick")))
    return 0 if quick or all(row.passed is not False for row in rows) else 1
