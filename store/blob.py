"""The Blob-store seam, backend side: the one interface every backend implements.

A backend answers the operations of :mod:`makers_store.blob_ops` (what a
program speaks: eight operations over keys that sort by code point, and the
typed helpers programs yield them with). Each public call of the store is a
*program*, a generator of those operations, and a backend runs a whole
program as one unit of work through :meth:`BlobStore.run`, the single
abstract method. Backends with transactions (SQLite, PostgreSQL) run it
atomically; object storage cannot, and steps through it one operation at a
time (:class:`StepwiseBlobStore`), which is why programs order their writes
so that a crash between any two steps leaves consistent primary data. What a
backend can do that programs adapt to is one value, its
:class:`Capabilities`, which the store passes to programs as one argument.
The two loops that run a program, :func:`drive_sync` and :func:`drive_async`,
are the only ones: every backend runs its units through one of them.

This module is what a backend implements and is driven by; the operations it
dispatches on live in :mod:`makers_store.blob_ops`, apart, because programs
need them and nothing here.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

# The seam's vocabulary too: a backend's vacuum report, and the rule of the
# search index a backend may keep (search_message_keys), re-exported so the
# backends import the blob interface alone.
from ._core.search_text import MESSAGE_KEY_GLOB as MESSAGE_KEY_GLOB
from ._core.search_text import MIN_QUERY as MIN_QUERY
from ._core.search_text import SearchIndexCheck as SearchIndexCheck
from ._core.search_text import fold as fold
from ._core.search_text import indexed_text as indexed_text
from ._core.search_text import is_message_key as is_message_key
from ._core.search_text import message_text_of_blob as message_text_of_blob
from ._core.vacuum import VacuumReport as VacuumReport
from .blob_ops import Blob, BlobInfo, Delete, Get, ListKeys, Op, Program, Put, single
from .errors import PreconditionFailedError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a backend can do, as programs need to know it: one value per
    backend (:attr:`BlobStore.capabilities`), passed to programs whole.

    Programs are correct with any combination; the capabilities only choose
    the cheaper path.
    """

    #: :meth:`BlobStore.run` applies a program all-or-nothing, isolated from
    #: other writers (one transaction).
    atomic: bool = False
    #: False when a ``reverse=True`` listing costs a read of the whole range
    #: (object storage lists keys ascending only); programs then read
    #: newest-first pages through forward listings of computed windows.
    lists_backward: bool = True
    #: Every operation is a billed network request (object storage): programs
    #: then defer removing derived data they no longer need and remove it in
    #: batches (see ``programs.STALE_INDEX_BATCH``), and list more keys per
    #: request.
    costly_requests: bool = False


#: Object storage and the stepwise memory backend that behaves like it.
OBJECT_STORAGE = Capabilities(atomic=False, lists_backward=False, costly_requests=True)
#: A backend that runs each unit as one transaction (memory, SQLite, PostgreSQL).
TRANSACTIONAL = Capabilities(atomic=True)


class BlobStore(abc.ABC):
    """A Blob-store backend. Implement :meth:`run`; the rest is convenience."""

    #: What this backend can do (see :class:`Capabilities`); programs are
    #: correct either way.
    capabilities: ClassVar[Capabilities] = Capabilities()

    @abc.abstractmethod
    async def run(self, program: Program[T], *, write: bool) -> T:
        """Run ``program`` as one unit of work and return its result.

        ``write=False`` promises the program only reads. Exceptions raised by
        an operation are thrown into the program; anything escaping it aborts
        the unit (rolled back where the backend is atomic).
        """

    async def close(self) -> None:  # noqa: B027 - optional hook, most backends need it
        """Release connections and threads. Idempotent."""

    def describe(self) -> dict[str, Any]:
        """Facts for ``makers-store info``: kind, location, size, schema
        version, and ``reclaimable_bytes`` (what :meth:`vacuum` would give
        back) where the backend can tell."""
        return {"kind": type(self).__name__}

    async def vacuum(self) -> VacuumReport:
        """Give back the space that deleted blobs leave behind (``store.admin.vacuum()``).

        Optional. A backend that keeps space after a delete (a database's
        free pages or dead rows) overrides it; it must change no blob, keep
        the store readable by other processes meanwhile, and make writers
        wait no longer than their usual busy handling allows. This default
        does nothing and says so: a backend that frees space as it deletes
        (object storage, memory) needs nothing more. The rules of the
        emulator's backends: :mod:`makers_store._core.vacuum`."""
        return VacuumReport(
            backend=type(self).__name__,
            bytes_before=None,
            bytes_after=None,
            note="nothing to do: this backend gives space back as it deletes",
            nothing_to_do=True,
        )

    def home(self) -> Path | None:
        """The folder holding the store's own files (a SQLite store's
        database), where its snapshots go by default; None (this default):
        the store has no files here (:mod:`makers_store.maintenance.snapshots`)."""
        return None

    async def save_file_copy(self, destination: Path) -> bool:
        """Write the whole store, as of one moment, into the new SQLite store
        file ``destination`` (a snapshot) and return True; optional. This
        default returns False, and the snapshot is made conversation by
        conversation through the store's programs (``copy``): a backend that
        can copy its file faster and consistently (SQLite) overrides it."""
        return False

    async def restore_file_copy(self, source: Path) -> bool:
        """Replace everything the store holds by the SQLite store file
        ``source`` (a snapshot) in one unit, readers seeing the old store or
        the new one, and return True; optional. This default returns False:
        the snapshot is then copied back conversation by conversation."""
        return False

    async def search_message_keys(self, folded: str, limit: int) -> list[str] | None:
        """Keys of message blobs whose text may hold ``folded`` (a query
        folded by :func:`makers_store.blob.fold`, at least
        :data:`~makers_store.blob.MIN_QUERY` characters), from a search
        index kept in the unit of work that writes each message: at most
        ``limit``, every match among them (extra candidates are allowed: the
        search checks each). Optional: this default, None, means no index,
        and the search reads the messages instead (:mod:`makers_store.maintenance.search`)."""
        return None

    async def check_search_index(self) -> SearchIndexCheck | None:
        """The search index against the message blobs (None: no index)."""
        return None

    async def rebuild_search_index(self) -> int | None:
        """Build the search index again from the message blobs; how many it
        holds (None: no index)."""
        return None

    async def watch_writes(self, poll_interval: float) -> AsyncIterator[frozenset[str] | None]:
        """Tell when blobs are written, by anyone (the feed of
        :meth:`makers_store.ContextStore.watch`).

        The first item is an empty set, once every later write will be seen.
        Then each item is the keys written since the last (a backend that
        knows them: memory, PostgreSQL) or None: something may have changed,
        compare what you read (a backend that cannot tell). This default,
        for backends with no change feed (object storage), yields None every
        ``poll_interval`` seconds. Close the iterator (``aclose()``) to stop.
        """
        yield frozenset()
        while True:
            await asyncio.sleep(poll_interval)
            yield None

    # Single-operation conveniences (each is its own unit of work).

    async def get(self, key: str) -> Blob | None:
        return cast("Blob | None", await self.run(single(Get(key)), write=False))

    async def head(self, key: str) -> BlobInfo | None:
        blob = await self.get(key)
        return None if blob is None else blob.info

    async def put(
        self, key: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> BlobInfo:
        return cast(
            BlobInfo, await self.run(single(Put(key, data, if_match, if_none_match)), write=True)
        )

    async def delete(self, key: str, *, if_match: str | None = None) -> bool:
        return cast(bool, await self.run(single(Delete(key, if_match)), write=True))

    async def list(
        self,
        prefix: str = "",
        *,
        start_after: str | None = None,
        end_before: str | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> list[BlobInfo]:
        op = ListKeys(prefix, start_after, end_before, reverse, limit)
        return cast("list[BlobInfo]", await self.run(single(op), write=False))


class StepwiseBlobStore(BlobStore):
    """Base for backends without transactions (object storage): :meth:`run`
    awaits one operation at a time, so other writers may interleave and a
    crash may stop a program between any two steps."""

    capabilities: ClassVar[Capabilities] = OBJECT_STORAGE

    @abc.abstractmethod
    async def execute(self, op: Op) -> object:
        """Apply one operation and return its result."""

    async def run(self, program: Program[T], *, write: bool) -> T:
        return await drive_async(program, self.execute)


#: Applies one operation and returns its result (synchronously / awaitably).
SyncExecutor = Callable[[Op], object]
AsyncExecutor = Callable[[Op], Awaitable[object]]


def drive_sync(program: Program[T], execute: SyncExecutor) -> T:
    """Run ``program`` with a synchronous ``execute(op)``: the loop shared by
    the transactional backends, which call it inside their transaction. A
    :class:`PreconditionFailedError` is thrown into the program; the program
    is closed at the end, however it ends."""
    try:
        op = next(program)
        while True:
            try:
                result = execute(op)
            except PreconditionFailedError as exc:
                op = program.throw(exc)
            else:
                op = program.send(result)
    except StopIteration as stop:
        return cast(T, stop.value)
    finally:
        program.close()


async def drive_async(program: Program[T], execute: AsyncExecutor) -> T:
    """:func:`drive_sync` for an awaitable ``execute(op)``: the loop of the
    backends that wait for the network (object storage step by step,
    PostgreSQL inside its transaction)."""
    try:
        op = next(program)
        while True:
            try:
                result = await execute(op)
            except PreconditionFailedError as exc:
                op = program.throw(exc)
            else:
                op = program.send(result)
    except StopIteration as stop:
        return cast(T, stop.value)
    finally:
        program.close()
