"""Message search through the search index, SQLite and PostgreSQL side by side.

* All hits of a rare word (one message in 20,000 holds it) across the whole
  store, median time against a budget of 100 ms, and the first 20 hits of a
  common word (in nearly every message) against 50 ms, each beside the scan
  the index replaced (``use_index=False``, the rule's reference; for
  information). Full size: 400,000 messages in 20,000 conversations; the
  4,000,000-message stores are built in bulk by bench_search_bulk.py, SQLite
  and PostgreSQL (see the report in docs/backends.md, Searching messages).
  Quick: 4,000 in 200.
* ``append_message`` with the search index against the same append without
  it, A/B in one run, alternating rounds (target: at least 1/1.1 of the rate
  without). Without it: a store object told not to write the index, nor to
  mark what it must catch up on (``index_messages = False`` on the SQLite and
  PostgreSQL blob stores, which exists for this).

Stores are built in bulk: the meta, messages and index entries of 200
conversations per unit of work, written with the store's own records and keys
through the backend's write path, so each message's index row is written as
an append would write it. A built SQLite store is kept under
``$TMPDIR/makers-bench-search`` and reused (``--rebuild`` builds it again).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_harness import QUICK, QUOTA, Row, Sizes, compare, say, sqlite_url, table

import makers_store
from makers_store._core import keys
from makers_store._core.codec import ConversationRecord, encode_json, encode_message
from makers_store.blob_ops import Program, put
from makers_store.maintenance import search

PER_CONVERSATION = 20
BUILD_BATCH = 200
USERS = 10
#: One message in this many holds the rare word.
RARE_EVERY = 20_000
RARE = "quixotry"
COMMON = "the"
CACHE = Path(tempfile.gettempdir()) / "makers-bench-search"
#: Timed queries per figure (the median is reported).
QUERIES = 15


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnoprstuvwy"  # no q, x, z: no word holds the rare one by chance
    words = ["the", "a", "to", "and", "of", "is", "in", "it", "you", "that"]
    while len(words) < 5_000:
        words.append("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf
    return words, weights


def _build(first: int, count: int, now: int, texts: list[str]) -> Program[None]:
    """Conversations s{first}.. of PER_CONVERSATION messages each."""
    for n in range(first, first + count):
        cid = f"s{n:07d}"
        user = f"u{n % USERS}"
        start = now - (1_000_000 - n) * 1_000
        at = start + PER_CONVERSATION - 1
        record = ConversationRecord(
            cid,
            created_at=start,
            last_message_at=at,
            message_count=PER_CONVERSATION,
            next_seq=PER_CONVERSATION,
            user_ids=[user],
            last_tie=0,
        )
        for seq in range(PER_CONVERSATION):
            text = texts[(n - first) * PER_CONVERSATION + seq]
            message = encode_message(
                message_id=keys.message_id(seq, "bench"),
                role="user" if seq % 2 == 0 else "assistant",
                content_json=encode_json(text, argument="content"),
                created_at=start + seq,
                metadata_json="{}",
                user_id=user,
            )
            yield from put(keys.message_key(cid, seq), message)
        yield from put(keys.index_key(keys.INDEX_ALL, record.position, cid), b"")
        yield from put(keys.index_key(keys.user_index_prefix(user), record.position, cid), b"")
        yield from put(keys.meta_key(cid), record.encode())


async def build(url: str, messages: int) -> float:
    """Fill the empty store at ``url``, then index it as a store opened by
    this version for the first time would be (SQLite: its catch-up;
    PostgreSQL: built without the index, then the migration's fill, timed);
    seconds taken."""
    rng = random.Random(33)
    words, weights = _vocabulary(rng)
    conversations = messages // PER_CONVERSATION
    rare = set(rng.sample(range(messages), max(1, messages // RARE_EVERY)))
    start = time.perf_counter()
    async with makers_store.open_store(url) as store:
        # PostgreSQL writes the index beside each message: built without it,
        # then filled as its migration does (SQLite marks, then catches up)
        if getattr(store.blobs, "catch_up_search_index", None) is None:
            if hasattr(store.blobs, "index_messages"):
                store.blobs.index_messages = False
        now = store.runner.clock()
        for first in range(0, conversations, BUILD_BATCH):
            count = min(BUILD_BATCH, conversations - first)
            texts = []
            for index in range(first * PER_CONVERSATION, (first + count) * PER_CONVERSATION):
                chosen = rng.choices(words, weights, k=25)
                if index in rare:
                    chosen[rng.randrange(25)] = RARE.capitalize()
                texts.append(" ".join(chosen))

            def program(first: int = first, count: int = count, t: list[str] = texts) -> Any:
                return _build(first, count, now, t)

            await store.runner.run(program, write=True)
            if first and first % 5_000 == 0:
                say(f"  {first * PER_CONVERSATION:,} messages, {time.perf_counter() - start:.0f} s")
        catch_up = getattr(store.blobs, "catch_up_search_index", None)
        if catch_up is None:  # PostgreSQL: what the migration does to a store
            catch_up = store.blobs.rebuild_search_index
            store.blobs.index_messages = True
        if catch_up is not None:  # SQLite indexes what writers left once they pause
            begin = time.perf_counter()
            indexed = await catch_up() or 0  # None: a backend without an index (S3)
            seconds = time.perf_counter() - begin
            say(f"  indexed {indexed:,} messages in {seconds:.1f} s "
                f"({seconds / max(indexed, 1) * 1e6:.0f} us a message)")  # fmt: skip
    return time.perf_counter() - start


async def _timed(call: Any, times: int = QUERIES) -> tuple[float, Any]:
    """Median seconds of ``times`` calls, and the last call's answer."""
    samples, answer = [], None
    for _ in range(times):
        begin = time.perf_counter()
        answer = await call()
        samples.append(time.perf_counter() - begin)
    return statistics.median(samples), answer


async def query_rows(url: str, backend: str, messages: int, scan: bool) -> list[Row]:
    """The rare and common queries on the store at ``url``."""
    rows = []
    async with makers_store.open_store(url) as store:

        async def rare(use_index: bool = True) -> list[Any]:
            return [h async for h in search.search_messages(store, RARE, use_index=use_index)]

        async def common(use_index: bool = True) -> list[Any]:
            hits = search.search_messages(store, COMMON, limit=20, use_index=use_index)
            return [h async for h in hits]

        size = f"{messages:,} messages on {backend}"
        for name, call, budget, want in (
            ("all hits of a rare word", rare, 0.100, max(1, messages // RARE_EVERY)),
            ("first 20 hits of a common word", common, 0.050, 20),
        ):
            seconds, hits = await _timed(call)
            assert len(hits) == want, (name, len(hits), want)
            say(f"  {name}, {size}: {seconds * 1000:.1f} ms median")
            rows.append(
                Row(
                    f"msg search, {name}, {size} (queries/s)",
                    1 / seconds,
                    f"{budget * 1000:.0f} ms budget",
                    1 / budget,
                    1.0,
                    f"<= {budget * 1000:.0f} ms",
                )
            )
            if scan:
                scanned, scan_hits = await _timed(lambda c=call: c(False), times=1)
                assert scan_hits == hits, name
                say(f"  ... the scan: {scanned * 1000:.0f} ms")
                rows.append(
                    Row(
                        f"msg search, {name}, {size}: index (queries/s)",
                        1 / seconds,
                        "the scan it replaced",
                        1 / scanned,
                        None,
                        "for information",
                    )
                )
    return rows


async def _append_ab(
    indexed: makers_store.ContextStore, plain: makers_store.ContextStore, text: str, sizes: Sizes
) -> dict[str, float]:
    counter = iter(range(10**9))

    async def append_indexed() -> None:
        await indexed.append_message(f"a{next(counter) // 1000}", "user", text)

    async def append_plain() -> None:
        await plain.append_message(f"b{next(counter) // 1000}", "user", text)

    return await compare({"with": append_indexed, "without": append_plain}, sizes)


async def append_rows(workdir: Path, postgres_url: str | None, sizes: Sizes) -> list[Row]:
    """append_message with and without the search index, A/B."""
    text = "a message of about the usual length, with a few words to index in it"
    rows = []
    pairs: list[tuple[str, str, str, Any]] = []
    with_path, without_path = workdir / "append-index.db", workdir / "append-plain.db"
    for path in (with_path, without_path):
        path.unlink(missing_ok=True)
    pairs.append(("sqlite", sqlite_url(with_path), sqlite_url(without_path), "index_messages"))
    if postgres_url is not None:
        pairs.append(("postgres", postgres_url, postgres_url, "index_messages"))
    for backend, with_url, without_url, flag in pairs:
        indexed = makers_store.open_store(with_url)
        plain = makers_store.open_store(without_url)
        if flag is not None:
            setattr(plain.blobs, flag, False)
        try:
            rates = await _append_ab(indexed, plain, text, sizes)
        finally:
            await indexed.close()
            await plain.close()
        say(f"  append on {backend}: {rates['with']:,.0f}/s with the index, "
            f"{rates['without']:,.0f}/s without")  # fmt: skip
        rows.append(
            Row(
                f"append_message with the search index on {backend}",
                rates["with"],
                "the same append without it",
                rates["without"],
                1 / 1.1,
                ">= 0.91x (<= 1.1x the cost)",
            )
        )
    return rows


async def sqlite_store(messages: int, rebuild: bool) -> str:
    """The cached SQLite store of ``messages`` messages (built when missing)."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"search-{messages}.db"
    done = CACHE / f"search-{messages}.done"
    if rebuild or not done.exists():
        for stale in CACHE.glob(f"search-{messages}.db*"):
            stale.unlink()
        seconds = await build(sqlite_url(path), messages)
        say(f"  built {messages:,} messages on sqlite in {seconds:.0f} s "
            f"({path.stat().st_size / 1e6:,.0f} MB)")  # fmt: skip
        done.touch()
    return sqlite_url(path)


async def run(workdir: Path, sizes: Sizes, messages: int | None = None) -> list[Row]:
    """The figures; quick mode (``sizes.long_conversation < QUOTA``) builds small stores."""
    from tests.servers.postgres import postgres_url

    quick = sizes.long_conversation < QUOTA
    messages = messages or (4_000 if quick else 400_000)
    rows = []
    say(f"search: {messages:,} messages in {messages // PER_CONVERSATION:,} conversations")
    if quick:
        url = sqlite_url(workdir / "search.db")
        await build(url, messages)
    else:
        url = await sqlite_store(messages, rebuild=False)
    rows += await query_rows(url, "sqlite", messages, scan=not quick)
    try:
        pg_url: str | None = postgres_url(workdir)
    except Exception as exc:  # no PostgreSQL server binaries here
        say(f"  search on postgres left out: {exc}")
        pg_url = None
    if pg_url is not None:
        seconds = await build(pg_url, messages)
        say(f"  built {messages:,} messages on postgres in {seconds:.0f} s")
        rows += await query_rows(pg_url, "postgres", messages, scan=not quick)
    rows += await append_rows(workdir, None if pg_url is None else postgres_url(workdir), sizes)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes")
    parser.add_argument("--messages", type=int, help="messages in the store (default 400,000)")
    parser.add_argument("--sqlite-only", action="store_true", help="queries on SQLite only")
    parser.add_argument("--rebuild", action="store_true", help="build the cached store again")
    args = parser.parse_args()

    async def measure(workdir: Path) -> list[Row]:
        if args.sqlite_only:
            url = await sqlite_store(args.messages or 400_000, args.rebuild)
            return await query_rows(url, "sqlite", args.messages or 400_000, scan=False)
        from bench_harness import FULL

        return await run(workdir, QUICK if args.quick else FULL, args.messages)

    workdir = Path(tempfile.mkdtemp(prefix="makers-bench-search-"))
    try:
        rows = asyncio.run(measure(workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(table(rows, args.quick)))


if __name__ == "__main__":
    main()
