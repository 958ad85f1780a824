"""The PostgreSQL backend on a throwaway server (see tests/servers/postgres.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import makers_store
from makers_store import BlobStore, open_blob_store
from makers_store.blob_conformance import CHECKS, run_blob_conformance
from makers_store.blob_ops import Op, Program, get, prefix_end
from makers_store.emulator.postgres import migrations as postgres_migrations
from makers_store.emulator.postgres.backend import PostgresBlobStore, from_url
from makers_store.errors import (
    BackendError,
    MemoryValidationError,
    MissingExtraError,
    PreconditionFailedError,
)
from makers_store.retry import RetryPolicy
from tests.servers.postgres import postgres_url

ROOT = Path(__file__).resolve().parents[1]


def blobs_at(url: str) -> PostgresBlobStore:
    store = open_blob_store(url)
    assert isinstance(store, PostgresBlobStore)
    return store


def connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(url.split("?")[0], autocommit=True)


async def test_passes_conformance() -> None:
    async def open_backend() -> BlobStore:
        return open_blob_store(postgres_url())

    assert await run_blob_conformance(open_backend) == [fn.__name__ for fn in CHECKS]


def test_own_options_are_parsed_and_removed_before_libpq() -> None:
    url = "postgresql://u:secret@db.example:6543/app?schema=s1&pool_min=2&pool_max=3"
    store = from_url(
        url + "&pool_timeout=1.5&application_name=me",
        "",
        {
            "schema": "s1",
            "pool_min": "2",
            "pool_max": "3",
            "pool_timeout": "1.5",
            "application_name": "me",
        },
    )
    assert isinstance(store, PostgresBlobStore)
    assert (store.schema, store.pool_min, store.pool_max, store.pool_timeout) == ("s1", 2, 3, 1.5)
    assert store.conninfo == "postgresql://u:secret@db.example:6543/app?application_name=me"
    assert store.location == "postgresql://u@db.example:6543/app?schema=s1"
    assert "secret" not in store.location
    defaults = blobs_at("postgres://localhost/app")
    assert (defaults.schema, defaults.pool_min, defaults.pool_max) == ("public", 1, 10)
    assert defaults.server == "localhost:5432"


@pytest.mark.parametrize(
    "query",
    [
        "schema=1abc",
        "schema=a-b",
        "schema=" + "x" * 64,
        "pool_min=two",
        "pool_min=5&pool_max=2",
        "pool_min=0",
        "pool_timeout=0",
        "not_a_libpq_option=1",
    ],
)
def test_bad_options_are_validation_errors(query: str) -> None:
    with pytest.raises(MemoryValidationError):
        open_blob_store(f"postgresql://localhost/app?{query}")


def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingExtraError, match=r"makers-store\[postgres\]"):
        open_blob_store("postgresql://localhost/app")


def test_prefix_end_bounds_every_key_with_the_prefix() -> None:
    assert prefix_end("c/a/") == "c/a0"
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\U0010ffff") is None
    assert prefix_end("x\ud7ff") == "x\ue000"


async def test_schemas_isolate_stores_in_one_database() -> None:
    first, second = blobs_at(postgres_url()), blobs_at(postgres_url())
    try:
        await first.put("k", b"first")
        await second.put("k", b"second")
        await second.put("only-second", b"")
        one, two = await first.get("k"), await second.get("k")
        assert one is not None and one.data == b"first"
        assert two is not None and two.data == b"second"
        assert [info.key for info in await first.list()] == ["k"]
    finally:
        await first.close()
        await second.close()


async def test_migrations_are_idempotent_and_safe_when_stores_open_at_once() -> None:
    url = postgres_url()
    stores = [blobs_at(url) for _ in range(8)]
    try:
        await asyncio.gather(*(store.put(f"k{n}", b"v") for n, store in enumerate(stores)))
        assert {store.schema_version for store in stores} == {postgres_migrations.SCHEMA_VERSION}
    finally:
        await asyncio.gather(*(store.close() for store in stores))
    again = blobs_at(url)
    try:
        assert len(await again.list()) == 8
    finally:
        await again.close()
    schema = again.schema
    with connect(url) as conn:
        rows = conn.execute(f'SELECT name FROM "{schema}"._migrations').fetchall()
    assert [row[0] for row in rows] == [name for name, _ in postgres_migrations.MIGRATIONS]


async def test_a_store_from_a_newer_version_is_refused() -> None:
    url = postgres_url()
    store = blobs_at(url)
    await store.put("k", b"v")
    await store.close()
    with connect(url) as conn:
        conn.execute(f"INSERT INTO \"{store.schema}\"._migrations VALUES ('9999_future', 0)")
    newer = blobs_at(url)
    with pytest.raises(BackendError, match="newer makers-store"):
        await newer.get("k")
    await newer.close()


async def test_a_dead_server_gives_a_clean_store_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = blobs_at(f"postgresql://postgres@127.0.0.1:{port}/makers_test?connect_timeout=5")
    with pytest.raises(BackendError, match=rf"127\.0\.0\.1:{port}"):
        await store.get("k")
    await store.close()
    with pytest.raises(BackendError, match="closed"):
        await store.get("k")


async def test_describe_reports_the_store() -> None:
    url = postgres_url()
    store = blobs_at(url)
    try:
        assert store.describe()["blobs"] == 0  # before anything was written
        await store.put("a", b"12345")
        await store.put("b", b"")
        facts = store.describe()
    finally:
        await store.close()
    assert facts["kind"] == "postgres"
    assert facts["schema_version"] == postgres_migrations.SCHEMA_VERSION
    assert (facts["blobs"], facts["blob_bytes"]) == (2, 5)
    assert facts["location"] == f"postgresql://postgres@{store.server}/makers_test?schema=" + (
        store.schema
    )
    assert str(facts["server_version"]).split(".")[0].isdigit()


async def test_a_deadlock_is_a_precondition_failure_so_the_unit_is_retried() -> None:
    url = postgres_url()
    store = blobs_at(url)
    await store.put("k1", b"1")
    await store.put("k2", b"2")

    def both() -> Program[None]:
        yield from get("k1")
        yield from get("k2")

    with connect(url) as other:
        other.execute("BEGIN")
        other.execute(f'SELECT 1 FROM "{store.schema}".blobs WHERE key = %s FOR UPDATE', ["k2"])
        unit = asyncio.ensure_future(store.run(both(), write=True))
        await asyncio.sleep(0.3)  # the unit now holds k1 and waits for k2
        locker = asyncio.ensure_future(
            asyncio.to_thread(
                other.execute,
                f'SELECT 1 FROM "{store.schema}".blobs WHERE key = %s FOR UPDATE',
                ["k1"],
            )
        )
        with pytest.raises(PreconditionFailedError):
            await unit
        await locker  # the other side got k1 once the unit was rolled back
        other.execute("ROLLBACK")
    await store.close()


async def test_writes_of_a_failed_unit_are_rolled_back_and_the_connection_reused() -> None:
    store = blobs_at(postgres_url() + "&pool_max=1")

    def partial() -> Generator[Op, Any, None]:
        yield from makers_store.blob_ops.put("a", b"1")
        yield from makers_store.blob_ops.put("b", b"2", if_none_match=True)
        yield from makers_store.blob_ops.put("a", b"3", if_match="stale")

    try:
        with pytest.raises(PreconditionFailedError):
            await store.run(partial(), write=True)
        assert await store.list() == []
        await store.put("c", b"ok")
        assert [info.key for info in await store.list()] == ["c"]
    finally:
        await store.close()


@pytest.mark.slow
def test_four_processes_append_to_one_conversation() -> None:
    url = postgres_url()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.workers", "append", url, "shared", "200", f"w{n}", "u"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err

    async def check() -> None:
        async with makers_store.open_store(url) as store:
            messages: list[makers_store.Message] = []
            while len(messages) % 100 == 0:
                after = messages[-1].message_id if messages else None
                page = await store.get_messages(conversation_id="shared", limit=100, after=after)
                if not page:
                    break
                messages += page
            assert len(messages) == 800
            assert [int(m.message_id.split("_")[1]) for m in messages] == list(range(800))
            for n in range(4):
                mine = [m.content for m in messages if m.content.startswith(f"w{n}-")]
                assert mine == [f"w{n}-{i}" for i in range(200)]
            meta = await store.get_conversation(conversation_id="shared")
            assert meta is not None and meta.message_count == 800
            assert len(await store.blobs.list("i/")) == 2

    asyncio.run(check())


@pytest.mark.slow
def test_a_writer_killed_mid_stream_leaves_a_consistent_store() -> None:
    url = postgres_url()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.workers", "forever", url, "c"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    acked = -1
    while acked < 60:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        acked = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()

    async def check() -> None:
        async with makers_store.open_store(url) as store:
            numbers: list[int] = []
            after = None
            while True:
                page = await store.get_messages(conversation_id="c", limit=100, after=after)
                numbers += [m.content["n"] for m in page]
                if len(page) < 100:
                    break
                after = page[-1].message_id
            assert numbers == list(range(len(numbers))) and len(numbers) >= acked + 1
            meta = await store.get_conversation(conversation_id="c")
            assert meta is not None and meta.message_count == len(numbers)
            await store.append_message(conversation_id="c", role="user", content={"n": -1})
            assert len(await store.blobs.list("i/")) == 2

    asyncio.run(check())


async def test_waiting_too_long_for_a_connection_is_a_clean_error() -> None:
    url = postgres_url()
    store = blobs_at(url + "&pool_max=1&pool_timeout=0.3")
    await store.put("k", b"v")
    with connect(url) as other:
        other.execute("BEGIN")
        other.execute(f'SELECT 1 FROM "{store.schema}".blobs WHERE key = %s FOR UPDATE', ["k"])
        blocked = asyncio.ensure_future(store.run(get_for_update("k"), write=True))
        await asyncio.sleep(0.1)  # the only connection now waits for the row lock
        with pytest.raises(BackendError, match=r"no connection to .* within 0\.3s"):
            await store.get("k")
        other.execute("ROLLBACK")
    assert await blocked is not None
    await store.close()


async def test_more_calls_than_the_pool_queue_within_their_retry_budget() -> None:
    # issue 33: a LangGraph batch larger than the pool failed after a fixed 30 s
    # queue; calls now queue as long as their retry budget allows, and fail
    # naming that budget when it runs out.
    url = postgres_url()
    store = blobs_at(url + "&pool_max=1")
    assert store.pool_timeout is None
    await store.put("k", b"v")
    with connect(url) as other:
        other.execute("BEGIN")
        other.execute(f'SELECT 1 FROM "{store.schema}".blobs WHERE key = %s FOR UPDATE', ["k"])
        blocked = asyncio.ensure_future(store.run(get_for_update("k"), write=True))
        await asyncio.sleep(0.1)  # the only connection now waits for the row lock
        patient = RetryPolicy(budget=30)
        queued = [asyncio.ensure_future(patient.run(lambda: store.get("k"))) for _ in range(20)]
        with pytest.raises(BackendError, match=r"within 0\.3s \(the call's retry budget of 0\.3s"):
            await RetryPolicy(budget=0.3).run(lambda: store.get("k"))
        await asyncio.sleep(0.5)  # longer than the budget that ran out: the 20 still wait
        assert not any(call.done() for call in queued)
        other.execute("ROLLBACK")
    assert await blocked is not None
    assert [blob.data for blob in await asyncio.gather(*queued) if blob] == [b"v"] * 20
    await store.close()


async def test_a_batch_ten_times_the_pool_succeeds() -> None:
    async with makers_store.open_store(postgres_url() + "&pool_max=2") as store:
        appends = [
            store.append_message(conversation_id=f"c{i % 4}", role="user", content=str(i))
            for i in range(40)
        ]
        assert len(await asyncio.gather(*appends)) == 40
        assert sum([len(await store.get_messages(f"c{j}", limit=100)) for j in range(4)]) == 40


def get_for_update(key: str) -> Program[object]:
    return (yield from get(key))


async def test_a_connection_killed_by_the_server_fails_one_unit_then_recovers() -> None:
    url = postgres_url()
    store = blobs_at(url + "&pool_max=1&application_name=victim")  # libpq option passed on
    await store.put("k", b"v")
    with connect(url) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'victim'"
        )
    with pytest.raises(BackendError):
        await store.get("k")
    blob = await store.get("k")
    assert blob is not None and blob.data == b"v"
    await store.close()
