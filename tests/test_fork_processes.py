"""Forks in several OS processes at once, and a fork killed with SIGKILL, on
SQLite and PostgreSQL: every new id is absent or a whole fork, never torn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import makers_store
from tests.backends import BACKENDS, backend_url
from tests.test_multiprocess import finish, worker

pytestmark = pytest.mark.slow
KINDS = [kind for kind in BACKENDS if kind in ("sqlite", "postgres")]


async def fill(url: str, count: int) -> None:
    async with makers_store.open_store(url) as store:
        batch = [{"role": "user", "content": {"n": n, "pad": "x" * 200}} for n in range(100)]
        for _ in range(count // 100):
            await store.append_messages("src", batch, user_id="u")
        await store.append_message("src", "assistant", "client", message_id="client-1")
        await store.bind("src").state.set("k", {"v": 1})


async def assert_whole(store: makers_store.ContextStore, new: str) -> None:
    """``new`` is the source up to the message its forked_from names."""
    meta = await store.get_conversation(new)
    assert meta is not None
    named = meta.metadata["forked_from"]["message_id"]
    source = [m async for m in store.iter_messages("src")]
    upto = [m.message_id for m in source].index(named) + 1
    fork = [m async for m in store.iter_messages(new)]
    assert fork == source[:upto]
    assert meta.message_count == upto
    assert await store.bind(new).state.items() == {"k": {"v": 1}}
    assert await store.admin.conversation_users(new) == ["u"]


@pytest.mark.parametrize("kind", KINDS)
async def test_processes_racing_for_the_same_new_ids_while_the_source_grows(
    kind: str, tmp_path: Path
) -> None:
    url = backend_url(kind, tmp_path)
    await fill(url, 300)
    forks = [worker("fork-many", url, "src", "f", "6") for _ in range(3)]
    appender = worker("append", url, "src", "200", "late", "u")
    outcomes: dict[str, list[str]] = {}
    for proc in forks:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        for line in out.splitlines():
            item = json.loads(line)
            outcomes.setdefault(item["id"], []).append(item["outcome"])
    finish([appender])
    assert sorted(outcomes) == [f"f{i}" for i in range(6)]
    async with makers_store.open_store(url) as store:
        for new, seen in outcomes.items():
            assert sorted(seen) == ["conflict", "conflict", "ok"], (new, seen)
            await assert_whole(store, new)
        assert (await store.get_conversation("src")).message_count == 501  # type: ignore[union-attr]
        assert (await store.admin.counts()).conversations == 7


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("kill_after", [0, 2])
async def test_a_fork_killed_mid_way_leaves_nothing_or_the_whole_fork(
    kind: str, tmp_path: Path, kill_after: int
) -> None:
    url = backend_url(kind, tmp_path)
    await fill(url, 3000)
    proc = worker("fork-forever", url, "src", "k")
    assert proc.stdout is not None
    done = -1
    deadline = time.monotonic() + 120
    while done < kill_after and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "the forking process died"
        done = int(line)
    await asyncio.sleep(0.01 * kill_after)  # somewhere into the next fork
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    async with makers_store.open_store(url) as store:
        for i in range(done + 1):
            await assert_whole(store, f"k{i}")
        cut_short = f"k{done + 1}"
        listed = [meta.conversation_id async for meta in store.iter_conversations()]
        counts = await store.admin.counts()
        if await store.get_conversation(cut_short) is None:
            assert cut_short not in listed
            assert [m async for m in store.iter_messages(cut_short)] == []
            assert counts.conversations == done + 2
            await store.fork_conversation("src", cut_short)  # forking again works
        else:  # it finished just before the kill
            with pytest.raises(makers_store.MemoryConflictError):
                await store.fork_conversation("src", cut_short)
        await assert_whole(store, cut_short)
        assert (await store.admin.counts()).conversations == done + 3


@pytest.mark.parametrize("kind", [kind for kind in BACKENDS if kind in ("postgres", "s3")])
async def test_a_fork_finishes_while_another_process_changes_the_source_after_the_cut(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: one delete after the cut every 0.07 s (PostgreSQL) or 0.8 s
    (S3) restarted the fork until it gave up after 60 s (fill's 100 messages,
    its client id message and the state value are copied here). Now the fork takes
    about the time of an unhindered one while another process appends to
    the source and deletes from it after the cut, as fast as it can."""
    from makers_store.lifecycle import fork

    plans = 0
    planning = fork._plan

    def counted(*args: Any) -> Any:
        nonlocal plans
        plans += 1
        return planning(*args)

    monkeypatch.setattr(fork, "_plan", counted)
    url = backend_url(kind, tmp_path)
    await fill(url, 100)
    async with makers_store.open_store(url) as store:
        cut = (await store.get_messages("src", order="desc", limit=1))[0].message_id
        started = time.perf_counter()
        await store.fork_conversation("src", "quiet", up_to=cut)
        quiet = time.perf_counter() - started
        churner = worker("churn", url, "src", "0")
        try:
            assert churner.stdout is not None
            assert churner.stdout.readline() == "ready\n", churner.stderr
            assert churner.stdout.readline() == "deleted\n"
            started = time.perf_counter()
            await store.fork_conversation("src", "busy", up_to=cut)
            busy = time.perf_counter() - started
        finally:
            churner.kill()
            rounds = churner.communicate()[0].count("deleted") + 1
        assert [m async for m in store.iter_messages("busy")] == [
            m async for m in store.iter_messages("quiet")
        ]
    print(
        f"\n{kind}: fork of 101 messages, quiet {quiet:.2f} s, source churning {busy:.2f} s "
        f"({rounds} deletes after the cut meanwhile)"
    )
    assert plans == 2  # one each: never restarted
    # about the time of a quiet fork (the churning process shares the machine and the server)
    assert busy < 4 * quiet + 2.0
