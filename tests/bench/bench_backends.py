"""SQLite, PostgreSQL and S3 side by side, and the S3 requests each call costs.

PostgreSQL and the S3-compatible server are the throwaway ones the tests use
(tests/servers/: ``initdb``/``pg_ctl`` on loopback, moto in server mode). The
moto server handles one request at a time, so S3 speed here says little about
real object storage; the request counts are exact for any S3 service, except
that moto answers ``DELETE If-Match: *`` with 412, so each delete whose result
is needed costs a second request there (no call counted here needs one).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench_harness import Op, Row, Sizes, compare, say, sqlite_url

import makers_store
from makers_store._core.programs import STALE_INDEX_BATCH
from tests.servers.postgres import postgres_url
from tests.servers.s3 import s3_url

KINDS = ("sqlite", "postgres", "s3")
HISTORY = 120  # messages in the conversation the reads use
USER_CONVERSATIONS = 30


def open_kind(kind: str, workdir: Path) -> makers_store.ContextStore:
    if kind == "sqlite":
        return makers_store.open_store(sqlite_url(workdir / "backends.db"))
    return makers_store.open_store(postgres_url() if kind == "postgres" else s3_url())


async def populate(store: makers_store.ContextStore) -> None:
    await store.append_messages(
        conversation_id="history",
        messages=[{"role": "user", "content": f"message {i}"} for i in range(HISTORY)],
    )
    for n in range(USER_CONVERSATIONS):
        await store.append_message(
            conversation_id=f"mine-{n}", role="user", content="hi", user_id="me"
        )


def operations(store: makers_store.ContextStore) -> dict[str, Op]:
    counter = iter(range(10**9))
    appended = iter(range(10**9))

    async def append() -> None:  # a new conversation every 5,000 (the quota is 10,000)
        cid = f"appends-{next(appended) // 5000}"
        await store.append_message(conversation_id=cid, role="user", content="hello")

    async def newest() -> None:
        page = await store.get_messages(conversation_id="history", limit=50, order="desc")
        assert len(page) == 50

    async def by_user() -> None:
        page = await store.list_conversations(user_id="me", limit=20)
        assert len(page.items) == 20

    async def state_set() -> None:
        await store.bind("history").state.set("step", next(counter))

    return {
        "append_message": append,
        "get_messages(50, desc)": newest,
        "list_conversations(user, 20)": by_user,
        "state.set": state_set,
    }


async def request_counts(
    store: makers_store.ContextStore, sizes: Sizes
) -> dict[str, tuple[float, float]]:
    """S3 requests per call, by operation: (typical, mean) over
    ``sizes.count_batches * STALE_INDEX_BATCH`` calls (two batches, one in
    smoke mode), so the batched index clean-up that every
    ``STALE_INDEX_BATCH``-th append does shows in the mean."""
    counts = store.blobs.requests  # type: ignore[attr-defined]
    calls = {
        "append_message (existing conversation)": lambda: store.append_message(
            conversation_id="appends-0", role="assistant", content="x"
        ),
        "append_message (existing, with user_id)": lambda: store.append_message(
            conversation_id="mine-0", role="assistant", content="x", user_id="me"
        ),
        "append_message (new conversation)": lambda: store.append_message(
            conversation_id=f"fresh-{next(fresh)}", role="user", content="x"
        ),
        "get_messages(50, desc)": lambda: store.get_messages(
            conversation_id="history", limit=50, order="desc"
        ),
        "list_conversations(user, 20)": lambda: store.list_conversations(user_id="me", limit=20),
        "state.set": lambda: store.bind("history").state.set("k", 1),
    }
    fresh = iter(range(10**9))
    out = {}
    for name, call in calls.items():
        await call()  # warm: the conversation exists
        spent = []
        for _ in range(sizes.count_batches * STALE_INDEX_BATCH):
            before = sum(counts.values())
            await call()
            spent.append(sum(counts.values()) - before)
        typical, mean = statistics.median(spent), statistics.fmean(spent)
        out[name] = (typical, mean)
        say(f"  S3 {name}: {typical:g} requests typically, {mean:.2f} on average")
    return out


async def run(workdir: Path, sizes: Sizes) -> list[Row]:
    say("backends: sqlite vs postgresql vs s3 (moto), side by side")
    stores = {kind: open_kind(kind, workdir) for kind in KINDS}
    rows: list[Row] = []
    try:
        for store in stores.values():
            await populate(store)
        per_kind = {kind: operations(store) for kind, store in stores.items()}
        for operation in per_kind["sqlite"]:
            rates = await compare({kind: per_kind[kind][operation] for kind in KINDS}, sizes)
            for kind in ("postgres", "s3"):
                rows.append(
                    Row(
                        f"{operation} on {kind}",
                        rates[kind],
                        "same on sqlite",
                        rates["sqlite"],
                        None,
                        "info",
                    )
                )
        counts = await request_counts(stores["s3"], sizes)
    finally:
        for store in stores.values():
            await store.close()
    typical, mean = counts.pop("append_message (existing conversation)")
    rows.append(
        Row(
            "S3 requests per append_message (existing conversation), typical",
            typical,
            "budget of 4 requests",
            4.0,
            1.0,
            "<= 4 requests",
            lower_is_better=True,
        )
    )
    rows.append(
        Row(
            "same, mean with the batched index clean-up",
            mean,
            "per call",
            1.0,
            None,
            "info",
            lower_is_better=True,  # for the regression guard: more requests is worse
        )
    )
    for name, (_, mean) in counts.items():
        rows.append(
            Row(f"S3 requests per {name} (mean)", mean, "per call", 1.0, None, "info", True)
        )
    return rows
