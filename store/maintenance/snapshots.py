"""Named snapshots of a whole store, reset, and seed fixtures (``store.admin``;
``makers-store snapshot``, ``reset``, ``seed``).

A snapshot is one file, ``NAME.db`` in the snapshot folder: a SQLite store
(the emulator's format, whatever the backend of the store it was saved from)
holding everything the store held: conversations with their messages, ids
and times, metadata (summaries included), state, users, aliases, LangGraph
checkpoints and store items, Claude sessions and subagent transcripts,
OpenAI session items; everything ``export`` writes, as blobs. Beside them the
file holds one blob of its own, :data:`MANIFEST_KEY` (when, from where, the
counts), under ``v/``, which export and copy never carry (``v/`` is the
store's own, as the layout marker is).

How a snapshot is made and put back depends on the backend
(:meth:`~makers_store.blob.BlobStore.save_file_copy` and
:meth:`~makers_store.blob.BlobStore.restore_file_copy`):

* **SQLite**: SQLite's online backup, both ways. Saving reads the store in one
  read transaction: the snapshot is the store as of one commit while agents
  keep writing. Restoring writes it in one write transaction: the store reads
  as it was or as the snapshot, never a mix, for this process and for every
  other one with the store open (``serve``'s workers read the restored store
  from their next unit on: restoring while ``serve`` runs is safe).
* **Other backends** (PostgreSQL, S3, memory): ``copy`` into the snapshot
  file, and back with ``prune`` (conversations and blobs the snapshot does
  not hold are deleted). Each conversation is copied whole, in one unit, but
  the store is not read or written as of one moment: save while nobody
  writes for a snapshot of one moment; a restore cut short leaves some
  conversations restored and others not, and running it again finishes it
  (conversations already equal are not written again).

Nothing a failure can destroy: a snapshot is written to a temporary file in
the snapshot folder (``.NAME.<pid>.<random>.tmp``), fsynced, then renamed over
``NAME.db``: a save that fails or is killed leaves the previous snapshot of
that name as it was. Temporary files of processes that no longer run (a
save killed with SIGKILL) are removed by the next save or listing.
``reset`` is a restore of an empty store; ``seed`` is an import of export
files (validated whole before anything is written; see
:mod:`makers_store.maintenance.importing`): on a backend with transactions (SQLite,
PostgreSQL, memory) every file of the seed in one unit of work, so a seed
that fails or is killed leaves the store as it was or seeded whole; on S3
(no transactions) each conversation in a unit of its own, as ``import``.

Where snapshots live (:func:`default_directory`): beside a SQLite store's
file, in ``snapshots/`` (a project's store ``.makers-store/store.db`` has them
in ``.makers-store/snapshots/``); for a store without a file, in the
``.makers-store/snapshots/`` of the Makers project around the working
directory, else in the per-user data directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.adapter_keys import LANGGRAPH_INDEX_VERSION
from .._core.runner import UnitRunner
from ..api import location
from ..blob_ops import Program, get, put
from ..blob_ops import delete as delete_blob
from ..errors import (
    BackendError,
    MemoryConflictError,
    MemoryCorruptError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from ..models import fields_dict
from .exporting import TransferCounts
from .import_records import Plan
from .importing import import_jsonl, import_program, plan_jsonl
from .inventory import iter_conversations, iter_user_ids

if TYPE_CHECKING:
    from ..blob import BlobStore

#: The snapshot file's own blob: what ``snapshot list`` shows.
MANIFEST_KEY = "v/snapshot"
MANIFEST_FORMAT = "makers-store-snapshot"
SUFFIX = ".db"
#: A snapshot's name: a file name on every system, never a hidden one.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]+\.tmp(-wal|-shm|-journal)?")


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """One snapshot: its name and file, when it was saved (ms since the epoch),
    its size, the store it was saved from (URL without password) and what it
    holds: ``counts`` of its live conversations, their messages and users."""

    name: str
    path: str
    saved_at: int
    size_bytes: int
    source: str
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name.endswith(SUFFIX):
        raise MemoryValidationError(
            f"snapshot name must be 1-100 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit (and not ending in {SUFFIX}), got {name!r}"
        )
    return name


def default_directory(blobs: BlobStore) -> Path:
    """Where the snapshots of the store ``blobs`` go when no folder is given."""
    home = blobs.home()
    if home is not None:
        return home / "snapshots"
    project = location.find_project(Path.cwd().resolve())
    if project is not None:
        return project / location.PROJECT_STORE.parent / "snapshots"
    import platformdirs

    return Path(platformdirs.user_data_dir("makers-store")) / "snapshots"


def folder(blobs: BlobStore, directory: str | PathLike[str] | None = None) -> Path:
    """The folder of the snapshots: ``directory``, else the default one."""
    return (default_directory(blobs) if directory is None else Path(directory)).absolute()


def snapshot_path(blobs: BlobStore, name: str, directory: str | PathLike[str] | None) -> Path:
    return folder(blobs, directory) / f"{check_name(name)}{SUFFIX}"


# --- temporary files -----------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned(directory: Path) -> list[str]:
    """Remove the temporary files that processes no longer running left in
    ``directory`` (a save or reset killed before it could clean up)."""
    removed: list[str] = []
    try:
        entries = list(directory.iterdir())
    except FileNotFoundError:
        return removed
    for entry in entries:
        found = _TEMP.fullmatch(entry.name)
        if found is None or _alive(int(found["pid"])):
            continue
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
            removed.append(entry.name)
    return removed


def _temporary(directory: Path, name: str) -> Path:
    return directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _unlink_database(path: Path) -> None:
    for extra in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{extra}").unlink()


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _temporary_database(directory: Path, name: str) -> Iterator[Path]:
    """A path for a new database file in ``directory``, removed with its
    companions however the block ends (it is renamed away on success).
    Errors of the file system (a full disk) are BackendErrors."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        remove_abandoned(directory)
        temp = _temporary(directory, name)
        try:
            yield temp
        finally:
            _unlink_database(temp)
    except OSError as exc:
        raise BackendError(f"snapshot folder {directory}: {exc}") from exc


def _open_file(path: Path) -> UnitRunner:
    """A runner over the SQLite store file ``path`` (a snapshot)."""
    from ..api.backend_urls import open_blob_store

    return UnitRunner(open_blob_store(location.sqlite_url(path)))


# --- save -------------------------------------------------------------------------------


async def save(
    runner: UnitRunner,
    name: str,
    *,
    source: str,
    directory: str | PathLike[str] | None = None,
    replace: bool = False,
) -> SnapshotInfo:
    """Save everything the store of ``runner`` holds as the snapshot ``name``
    (``source``: the store's URL, for the listing)."""
    from .copying import copy_store

    blobs = runner.blobs
    target = snapshot_path(blobs, name, directory)
    if target.exists() and not replace:
        raise MemoryConflictError(
            f"snapshot {name!r} exists ({target}): delete it first, or replace it"
        )
    saved_at = time.time_ns() // 1_000_000
    with _temporary_database(target.parent, name) as temp:
        copied = await blobs.save_file_copy(temp)
        snapshot = _open_file(temp)
        try:
            if not copied:
                report = await copy_store(runner, snapshot)
                if report.langgraph_store_written:
                    await _index_langgraph_items(snapshot)
            # the copy reaches the disk while it is counted (the manifest's
            # pages are synced again below, a few)
            synced = asyncio.create_task(asyncio.to_thread(_fsync, temp))
            try:
                counts = await _counts(snapshot)
            finally:
                await synced
            about = {
                "format": MANIFEST_FORMAT,
                "version": 1,
                "saved_at": saved_at,
                "source": source,
                "counts": counts,
            }
            data = json.dumps(about).encode()
            await snapshot.run(lambda: put(MANIFEST_KEY, data), write=True)
        finally:
            await snapshot.blobs.close()  # the last connection: SQLite folds its WAL into the file
        await asyncio.to_thread(_put_in_place, temp, target)
    return await read_info(target)


async def _counts(runner: UnitRunner) -> dict[str, int]:
    """What ``snapshot list`` shows: live conversations, their messages (from
    each meta: one read per conversation, never one per message) and users."""
    conversations = messages = users = 0
    async for _, record in iter_conversations(runner):
        if record is not None and record.live:
            conversations, messages = conversations + 1, messages + record.message_count
    async for _ in iter_user_ids(runner):
        users += 1
    return {"conversations": conversations, "messages": messages, "users": users}


def _put_in_place(temp: Path, target: Path) -> None:
    """The snapshot, whole on disk, takes the place of the one of its name."""
    _fsync(temp)
    os.replace(temp, target)
    if os.name == "posix":  # the rename itself on disk (a folder cannot be opened elsewhere)
        _fsync(target.parent, directory=True)


# --- list, read, delete ----------------------------------------------------------


def _size_of(path: Path) -> int:
    if not path.is_file():
        raise MemoryNotFoundError(f"snapshot {path.name.removesuffix(SUFFIX)!r} not found")
    return path.stat().st_size


async def read_info(path: Path) -> SnapshotInfo:
    """What the snapshot file ``path`` says about itself."""
    size = _size_of(path)
    snapshot = _open_file(path)
    try:
        blob = await snapshot.run(lambda: get(MANIFEST_KEY), write=False)
    finally:
        await snapshot.blobs.close()
    if blob is None:
        raise MemoryCorruptError(f"{path} is not a makers-store snapshot (no {MANIFEST_KEY})")
    try:
        about = json.loads(blob.data)
        saved_at, source, counts = about["saved_at"], about["source"], about["counts"]
    except (ValueError, KeyError, TypeError) as exc:
        raise MemoryCorruptError(f"{path}: unreadable snapshot manifest: {exc}") from exc
    return SnapshotInfo(
        name=path.name.removesuffix(SUFFIX),
        path=str(path),
        saved_at=int(saved_at),
        size_bytes=size,
        source=str(source),
        counts={str(k): int(v) for k, v in dict(counts).items()},
    )


async def info(
    blobs: BlobStore, name: str, *, directory: str | PathLike[str] | None = None
) -> SnapshotInfo:
    """What the snapshot ``name`` holds (MemoryNotFoundError when there is none)."""
    return await read_info(snapshot_path(blobs, name, directory))


async def list_all(
    blobs: BlobStore, *, directory: str | PathLike[str] | None = None
) -> AsyncIterator[SnapshotInfo]:
    """The snapshots in ``directory`` (else the default folder), newest first."""
    where = folder(blobs, directory)
    remove_abandoned(where)
    found = []
    try:
        files = sorted(where.glob(f"*{SUFFIX}"))
    except FileNotFoundError:
        files = []
    for path in files:
        if NAME_PATTERN.fullmatch(path.name.removesuffix(SUFFIX)):
            try:
                found.append(await read_info(path))
            except MemoryCorruptError:  # another .db put in the folder: not a snapshot
                continue
    for info in sorted(found, key=lambda info: (-info.saved_at, info.name)):
        yield info


async def delete(
    blobs: BlobStore, name: str, *, directory: str | PathLike[str] | None = None
) -> bool:
    """Delete the snapshot ``name``; False when there was none."""
    # async as the other snapshot operations are, though it only unlinks a file
    path = snapshot_path(blobs, name, directory)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


# --- restore and reset -------------------------------------------------------------


async def _put_back(runner: UnitRunner, source: Path) -> None:
    """Make the store of ``runner`` hold exactly what the SQLite store file ``source`` holds."""
    from .copying import copy_store

    if await runner.blobs.restore_file_copy(source):
        # the manifest came along with the file: it is the snapshot's, not the store's
        await runner.run(lambda: delete_blob(MANIFEST_KEY, quiet=True), write=True)
        return
    snapshot = _open_file(source)
    try:
        report = await copy_store(snapshot, runner, prune=True)
        if report.langgraph_store_written:
            # The copy wrote the LangGraph store's items and derived index blob
            # by blob and dropped the index's completeness mark: the index is
            # now the snapshot's, whole, so its mark is too.
            mark = await snapshot.run(lambda: get(LANGGRAPH_INDEX_VERSION), write=False)
            if mark is not None:
                data = mark.data
                await runner.run(lambda: put(LANGGRAPH_INDEX_VERSION, data), write=True)
    finally:
        await snapshot.blobs.close()


async def _index_langgraph_items(runner: UnitRunner) -> None:
    """Make the LangGraph store's derived index in ``runner``'s store whole (a
    copy wrote it blob by blob while the source may have changed), and mark it so."""
    from ..adapters.langgraph import store_index as derived_index

    caps = runner.blobs.capabilities
    pages = (derived_index.build_page, lambda after: derived_index.prune_page(after, caps))
    for page in pages:
        after: str | None = None
        while True:
            after = await runner.run(functools.partial(page, after), write=True)
            if after is None:
                break
    await runner.run(derived_index.mark_complete, write=True)


async def restore(
    runner: UnitRunner, name: str, *, directory: str | PathLike[str] | None = None
) -> SnapshotInfo:
    """Make the store hold exactly what the snapshot ``name`` holds
    (what is not in it is deleted). SQLite: in one transaction, other
    processes with the store open (``serve``) reading the restored store
    from their next unit on."""
    path = snapshot_path(runner.blobs, name, directory)
    info = await read_info(path)
    await _put_back(runner, path)
    return info


async def reset(
    runner: UnitRunner, *, to: str | None = None, directory: str | PathLike[str] | None = None
) -> SnapshotInfo | None:
    """Delete everything the store holds, or, with ``to``, restore the
    snapshot of that name (returned)."""
    if to is not None:
        return await restore(runner, to, directory=directory)
    # an empty store is the restore of an empty store file
    with _temporary_database(default_directory(runner.blobs), "empty") as temp:
        empty = _open_file(temp)
        try:
            await empty.run(lambda: get(MANIFEST_KEY), write=False)  # makes the file
        finally:
            await empty.blobs.close()
        await _put_back(runner, temp)
    return None


# --- seed ---------------------------------------------------------------------------


def seed_files(path: str | PathLike[str]) -> list[Path]:
    """The export files a seed path names: the file, or a folder's ``*.jsonl``
    files (not in subfolders) in name order."""
    given = Path(path)
    if given.is_dir():
        files = sorted(p for p in given.glob("*.jsonl") if p.is_file())
        if not files:
            raise MemoryNotFoundError(f"no .jsonl export files in the folder {given}")
        return files
    if not given.is_file():
        raise MemoryNotFoundError(f"seed file or folder {str(given)!r} not found")
    return [given]


def _lines(path: Path) -> Callable[[], Iterator[bytes]]:
    def lines() -> Iterator[bytes]:
        with path.open("rb") as handle:
            yield from handle

    return lines


#: The most a seed loads in one unit of work (the sum of its files' sizes):
#: seeds are fixtures, and the one transaction holds the store's write lock
#: (other writers wait, through their busy timeout) and keeps what it wrote in
#: the WAL (SQLite) or the transaction (PostgreSQL, memory) until it commits.
#: A bigger seed is refused with a message naming ``import`` (each
#: conversation in a unit of its own) and ``snapshot restore``.
SEED_UNIT_MAX_BYTES = 256 * 1024 * 1024


def _plans(files: list[Path]) -> list[Plan]:
    plans = []
    for file in files:
        try:
            plans.append(plan_jsonl(_lines(file)()))
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"{file}: {exc}") from exc
    return plans


async def seed(runner: UnitRunner, path: str | PathLike[str]) -> TransferCounts:
    """Load seed fixtures: the export file ``path``, or every ``*.jsonl``
    file of the folder ``path``, all validated before anything is
    written; each conversation replaces the one with its id (running it
    again changes nothing). On a backend with transactions the whole seed
    is one unit of work (whole or not at all; at most
    :data:`~makers_store.maintenance.snapshots.SEED_UNIT_MAX_BYTES`); on S3,
    one per conversation."""
    files = seed_files(path)
    size = sum(file.stat().st_size for file in files)
    atomic = runner.blobs.capabilities.atomic
    if atomic and size > SEED_UNIT_MAX_BYTES:
        raise MemoryValidationError(
            f"seed {str(path)!r} is {size / 2**20:.0f} MiB, more than the "
            f"{SEED_UNIT_MAX_BYTES // 2**20} MiB a seed loads in one transaction: load it with "
            "makers-store import (each conversation whole), or save it as a snapshot"
        )
    plans = _plans(files)  # every file checked before anything is written
    if not atomic:  # object storage: a unit per conversation, as import
        total = TransferCounts()
        for file in files:
            _add(total, await import_jsonl(runner, _lines(file)))
        return total

    def whole() -> Program[TransferCounts]:  # a fresh reading of the files per attempt
        counts = TransferCounts()
        for file, plan in zip(files, plans, strict=True):
            _add(counts, (yield from import_program(_lines(file), plan, runner.ids)))
        return counts

    return await runner.run(whole, write=True)


def _add(total: TransferCounts, counts: TransferCounts) -> None:
    for field, value in counts.to_dict().items():
        setattr(total, field, getattr(total, field) + value)
