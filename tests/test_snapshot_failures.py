"""Nothing a failure can destroy (issue 34, item 4): a snapshot save, restore,
reset or seed killed with SIGKILL at a handful of moments, or stopped by a
full disk (a file size limit, RLIMIT_FSIZE, in the child process), leaves the
store and the previous snapshot as they were or the new state whole, and no
temporary file once the next snapshot command ran. Real processes, a real
SQLite store of about 4 MB."""

from __future__ import annotations

import asyncio
import io
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script

CHILD = """
import asyncio, sys, time
import makers_store

async def main(url, op, arg):
    async with makers_store.open_store(url) as store:
        await store.admin.count_conversations()  # opened: the schema read
        print("go", flush=True)
        started = time.perf_counter()
        if op == "save":
            await store.admin.save_snapshot(arg, replace=True)
        elif op == "restore":
            await store.admin.restore_snapshot(arg)
        elif op == "reset":
            await store.admin.reset()
        elif op == "seed":
            await store.admin.seed(arg)
        print("done", time.perf_counter() - started, flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


def fill(url: str, conversations: int, tag: str) -> None:
    async def run() -> None:
        async with makers_store.open_store(url) as store:
            text = ("lorem ipsum " * 400)[:4000]
            for n in range(conversations):
                messages = [{"role": "user", "content": f"{tag} {n} {i} {text}"} for i in range(8)]
                await store.append_messages(f"c{n}", messages, user_id=f"u{n % 4}")
                await store.bind(f"c{n}").state.set("tag", tag)

    asyncio.run(run())


def export(url: str) -> str:
    async def run() -> str:
        async with makers_store.open_store(url) as store:
            out = io.StringIO()
            await store.admin.export_jsonl(out.write)
            return out.getvalue()

    return asyncio.run(run())


def admin(url: str, call: str, *args: object) -> object:
    async def run() -> object:
        async with makers_store.open_store(url) as store:
            result = getattr(store.admin, call)(*args)
            if hasattr(result, "__aiter__"):
                return [item async for item in result]
            return await result

    return asyncio.run(run())


def start(url: str, op: str, arg: str, limit: int | None = None) -> subprocess.Popen[str]:
    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, op, arg],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limited,  # only a setrlimit, before exec
    )
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    assert ready == "go", process.stderr.read() if process.stderr else ""
    return process


def run_whole(url: str, op: str, arg: str) -> float:
    """Run ``op`` to its end; how long it took (the window the kills aim at)."""
    process = start(url, op, arg)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return float(out.split()[-1])


def kill_after(url: str, op: str, arg: str, delay: float) -> None:
    process = start(url, op, arg)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)


#: Where the kills land, as fractions of the operation's measured duration.
KILL_POINTS = (0.05, 0.35, 0.7, 1.0)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[str, str, str]:
    """A store holding state B, its snapshots ``a`` (state A) and ``b`` (B),
    and the exports of A and B."""
    url = f"sqlite:///{tmp_path}/store.db"
    fill(url, 60, "A")
    admin(url, "save_snapshot", "a")
    a = export(url)
    admin(url, "reset")
    fill(url, 45, "B")
    admin(url, "save_snapshot", "b")
    b = export(url)
    assert a != b
    return url, a, b


def snapshots_dir(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///")).parent / "snapshots"


def snapshot_export(url: str, name: str) -> str:
    return export(f"sqlite:///{snapshots_dir(url) / name}.db")


def no_temporary_files(url: str) -> None:
    """After the next snapshot command (which removes what killed ones left)."""
    admin(url, "list_snapshots")
    left = sorted(p.name for p in snapshots_dir(url).iterdir() if not p.name.endswith(".db"))
    assert left == [], left


def test_killed_restores_and_resets_leave_the_store_old_or_new(
    stores: tuple[str, str, str],
) -> None:
    url, a, b = stores
    empty = export("memory://")
    for op, arg, after in (("restore", "a", a), ("reset", "-", empty)):
        took = run_whole(url, op, arg)
        assert export(url) == after
        for point in KILL_POINTS:
            admin(url, "restore_snapshot", "b")
            kill_after(url, op, arg, took * point)
            now = export(url)
            assert now in (b, after), f"{op} killed at {point}: a mix"
        no_temporary_files(url)
        assert snapshot_export(url, "a") == a
        assert snapshot_export(url, "b") == b


def test_killed_saves_leave_the_previous_snapshot_or_the_new_one(
    stores: tuple[str, str, str], tmp_path: Path
) -> None:
    url, a, b = stores
    pristine = tmp_path / "a.db"
    shutil.copyfile(snapshots_dir(url) / "a.db", pristine)
    took = run_whole(url, "save", "a")  # the store holds B: "a" now holds B
    assert snapshot_export(url, "a") == b
    for point in KILL_POINTS:
        shutil.copyfile(pristine, snapshots_dir(url) / "a.db")
        kill_after(url, "save", "a", took * point)
        assert snapshot_export(url, "a") in (a, b), f"save killed at {point}: a mix"
        assert export(url) == b  # saving never changes the store
    no_temporary_files(url)


def test_a_killed_seed_leaves_the_store_unseeded_or_seeded_whole(
    stores: tuple[str, str, str], tmp_path: Path
) -> None:
    """SQLite has transactions: the whole seed is one unit, so a kill leaves
    the store as it was (B) or seeded whole, never some conversations seeded."""
    url, a, b = stores
    seed = tmp_path / "seed.jsonl"
    seed.write_text(a, encoding="utf-8")  # A's 60 conversations replace B's 45 and add 15
    took = run_whole(url, "seed", str(seed))
    seeded = export(url)
    assert seeded != b
    for point in KILL_POINTS[:3]:
        admin(url, "restore_snapshot", "b")
        assert export(url) == b
        kill_after(url, "seed", str(seed), took * point)
        assert export(url) in (b, seeded), f"seed killed at {point}: a mix"
        run_whole(url, "seed", str(seed))
        assert export(url) == seeded


def test_a_full_disk_changes_nothing(stores: tuple[str, str, str]) -> None:
    """The CLI, its files limited to 1 MB: a save (a 4 MB copy) and a restore
    (4 MB through the WAL) fail with a clear error and change nothing."""
    url, a, b = stores
    folder = snapshots_dir(url)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*console_script(), "--store", url, *args],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limited,  # only a setrlimit, before exec
            env={k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"},
            check=False,
        )

    saved = cli("snapshot", "save", "a", "--yes")
    assert saved.returncode == 1, saved.stderr
    assert "File too large" in saved.stderr, saved.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["a.db", "b.db"]  # nothing left behind
    assert snapshot_export(url, "a") == a
    restored = cli("snapshot", "restore", "a", "--yes")
    assert restored.returncode == 1, restored.stderr
    assert export(url) == b
    admin(url, "restore_snapshot", "a")  # with room, the same restore goes through
    assert export(url) == a
