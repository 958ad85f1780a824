"""The Blob-store seam: the one interface every backend implements.

A backend stores opaque bytes under string keys that sort by code point, and
answers six operations: :class:`Get`, :class:`Put` (with if-match /
if-none-match), :class:`Delete`, :class:`DeleteMany` (a batch, one request per
1,000 keys on object storage), :class:`ListKeys` (keys with etag, size and
time) and :class:`Scan` (keys with values), both over ranges of one prefix,
in either direction, within an exclusive ``start_after`` / ``end_before``
window and up to a limit.

The store's logic is I/O-free: each public call is a *program*, a generator
that yields operations and receives their results. A backend runs a whole
program as one unit of work through :meth:`BlobStore.run`, the single
abstract method. Backends with transactions (SQLite, PostgreSQL) run it
atomically; object storage cannot, and steps through it one operation at a
time (:class:`StepwiseBlobStore`), which is why programs order their writes
so that a crash between any two steps leaves consistent primary data.
"""

from __future__ import annotations

import abc
from collections.abc import Generator, Iterable
from typing import Any, ClassVar, NamedTuple, TypeVar, cast

from .errors import PreconditionFailedError

T = TypeVar("T")


# Plain named tuples: these are built once per row and per operation on the
# hot paths, where dataclass construction costs several times as much.


class BlobInfo(NamedTuple):
    key: str
    etag: str
    size: int
    updated_at: int  # milliseconds since the epoch


class Blob(NamedTuple):
    key: str
    etag: str
    size: int
    updated_at: int
    data: bytes

    @property
    def info(self) -> BlobInfo:
        return BlobInfo(self.key, self.etag, self.size, self.updated_at)


class Entry(NamedTuple):
    """A key and its value, as :class:`Scan` returns them."""

    key: str
    data: bytes


# --- operations ------------------------------------------------------------


class Get(NamedTuple):
    """-> Blob | None"""

    key: str


class Put(NamedTuple):
    """-> BlobInfo; raises PreconditionFailedError when a precondition fails.

    ``if_match``: the current etag must equal it. ``if_none_match``: the key
    must not exist.
    """

    key: str
    data: bytes
    if_match: str | None = None
    if_none_match: bool = False


class Delete(NamedTuple):
    """-> bool (whether a blob was removed); raises PreconditionFailedError
    when ``if_match`` is given and the etag differs or the blob is missing.

    ``quiet``: the caller ignores the result, so a backend that needs an
    extra request to learn it (object storage) may skip that and return True.
    """

    key: str
    if_match: str | None = None
    quiet: bool = False


class DeleteMany(NamedTuple):
    """-> None. Deletes whichever of ``keys`` exist, unconditionally.

    The deletes are independent and happen in no particular order (object
    storage sends one request per 1,000 keys and may apply part of one); a
    program that needs an order among deletes uses :class:`Delete`.
    """

    keys: tuple[str, ...]


class ListKeys(NamedTuple):
    """-> list[BlobInfo] of keys starting with ``prefix`` strictly between
    ``start_after`` and ``end_before``, ascending (descending if ``reverse``),
    at most ``limit``."""

    prefix: str
    start_after: str | None = None
    end_before: str | None = None
    reverse: bool = False
    limit: int | None = None


class Scan(NamedTuple):
    """Like :class:`ListKeys` but -> list[Entry]: keys with their values."""

    prefix: str
    start_after: str | None = None
    end_before: str | None = None
    reverse: bool = False
    limit: int | None = None


Op = Get | Put | Delete | DeleteMany | ListKeys | Scan
Program = Generator[Op, Any, T]


def prefix_end(prefix: str) -> str | None:
    """The least key greater than every key starting with ``prefix`` (None
    when there is none): the exclusive upper bound of the key range
    ``[prefix, prefix_end(prefix))`` a prefix names. Keys compare by code
    point; surrogates never occur in them."""
    chars = list(prefix)
    while chars:
        following = ord(chars.pop()) + 1
        if following == 0xD800:
            following = 0xE000
        if following <= 0x10FFFF:
            return "".join(chars) + chr(following)
    return None


# Typed helpers for writing programs: ``blob = yield from get(key)``.


def get(key: str) -> Generator[Op, Any, Blob | None]:
    return cast("Blob | None", (yield Get(key)))


def put(
    key: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
) -> Generator[Op, Any, BlobInfo]:
    return cast(BlobInfo, (yield Put(key, data, if_match, if_none_match)))


def delete(
    key: str, *, if_match: str | None = None, quiet: bool = False
) -> Generator[Op, Any, bool]:
    return cast(bool, (yield Delete(key, if_match, quiet)))


def delete_many(keys: Iterable[str]) -> Generator[Op, Any, None]:
    """Delete ``keys`` in one batch; no operation at all when there are none."""
    batch = tuple(keys)
    if batch:
        yield DeleteMany(batch)


def list_keys(
    prefix: str,
    *,
    start_after: str | None = None,
    end_before: str | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Generator[Op, Any, list[BlobInfo]]:
    return cast("list[BlobInfo]", (yield ListKeys(prefix, start_after, end_before, reverse, limit)))


def scan(
    prefix: str,
    *,
    start_after: str | None = None,
    end_before: str | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Generator[Op, Any, list[Entry]]:
    return cast("list[Entry]", (yield Scan(prefix, start_after, end_before, reverse, limit)))


def segments_under(prefix: str) -> Generator[Op, Any, list[str]]:
    """The distinct first path segments of the keys under ``prefix``, one
    listing per segment: a skip-scan that never reads what lies beneath."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        infos = yield from list_keys(prefix, start_after=cursor, limit=1)
        if not infos:
            return found
        segment = infos[0].key[len(prefix) :].split("/", 1)[0]
        found.append(segment)
        # past every key under prefix/segment/ (keys hold no U+10FFFF: the
        # store's are escaped ASCII)
        cursor = f"{prefix}{segment}/\U0010ffff"


def single(op: Op) -> Program[Any]:
    return (yield op)


# --- backends --------------------------------------------------------------


class BlobStore(abc.ABC):
    """A Blob-store backend. Implement :meth:`run`; the rest is convenience."""

    #: True when :meth:`run` applies a program all-or-nothing, isolated from
    #: other writers (one transaction). Programs are correct either way.
    atomic: ClassVar[bool] = False
    #: False when a ``reverse=True`` listing costs a read of the whole range
    #: (object storage lists keys ascending only); programs then read
    #: newest-first pages through forward listings of computed windows.
    lists_backward: ClassVar[bool] = True
    #: True when every operation is a billed network request (object
    #: storage): programs then defer removing derived data they no longer
    #: need and remove it in batches (see ``programs.STALE_INDEX_BATCH``).
    costly_requests: ClassVar[bool] = False

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
        """Facts for ``makers-store info``: kind, location, size, schema version."""
        return {"kind": type(self).__name__}

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

    atomic: ClassVar[bool] = False

    @abc.abstractmethod
    async def execute(self, op: Op) -> Any:
        """Apply one operation and return its result."""

    async def run(self, program: Program[T], *, write: bool) -> T:
        try:
            op = next(program)
            while True:
                try:
                    result = await self.execute(op)
                except PreconditionFailedError as exc:
                    op = program.throw(exc)
                else:
                    op = program.send(result)
        except StopIteration as stop:
            return cast(T, stop.value)
        finally:
            program.close()


def drive_sync(program: Program[T], execute: Any) -> T:
    """Run ``program`` with a synchronous ``execute(op)``: the loop shared by
    the transactional backends, which call it inside their transaction."""
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
