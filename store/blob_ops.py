"""What a program speaks to a Blob-store backend: the operations, their results, and typed helpers.

A backend stores opaque bytes under string keys that sort by code point, and
answers eight operations: :class:`Get`, :class:`GetMany` (a batch read: one
query on SQL, parallel requests on object storage), :class:`Put` (with
if-match / if-none-match), :class:`Delete`, :class:`DeleteMany` (a batch, one
request per 1,000 keys on object storage), :class:`ListKeys` (keys with etag,
size and time) and :class:`Scan` (keys with values), both over ranges of one
prefix, in either direction, within an exclusive ``start_after`` /
``end_before`` window and up to a limit, and :class:`ListMany` (independent
listings sent together).

The store's logic is I/O-free: each public call is a *program*
(:data:`Program`), a generator that yields these operations and receives
their results; the typed helpers (``blob = yield from get(key)``) are how
programs yield them. This module is that vocabulary, shared by both sides of
the seam: the programs that speak it (``store/_core/programs.py`` and the others)
and the backends that answer it. How a backend runs a program, and what it
can do, is :mod:`makers_store.blob`; the two are separate so that a program
reads nothing about backends and a backend finds its whole interface in one
place.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any, Literal, NamedTuple, TypeVar, cast, overload

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


class GetMany(NamedTuple):
    """-> list[Blob | None]: one answer per key, in the order of ``keys``
    (None where a key is missing; a key given twice is answered twice).

    One request where the backend can (SQL: ``= ANY`` / ``IN``), parallel
    requests of bounded concurrency on object storage. In a write unit of a
    transactional backend the blobs read are locked as :class:`Get` locks them.
    """

    keys: tuple[str, ...]


class Put(NamedTuple):
    """-> BlobInfo; raises PreconditionFailedError when a precondition fails.

    ``if_match``: the current etag must equal it. ``if_none_match``: the key
    must not exist.

    ``quiet`` (with ``if_none_match``): the caller ignores the answer, so an
    existing blob is kept without raising and the result is None; a backend
    that pipelines statements need not wait for the reply.
    """

    key: str
    data: bytes
    if_match: str | None = None
    if_none_match: bool = False
    quiet: bool = False


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


class ListMany(NamedTuple):
    """-> list[list[BlobInfo]]: the answer of each listing, in order, as if
    each were yielded on its own. The listings are independent, so a backend
    may send them together (PostgreSQL: one pipeline, one round trip; S3:
    concurrent requests)."""

    listings: tuple[ListKeys, ...]


Op = Get | GetMany | Put | Delete | DeleteMany | ListKeys | Scan | ListMany
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


# The typed helpers annotate what the backend sends back rather than cast()
# it: they are on every unit's path, and cast is a call.


def get(key: str) -> Generator[Op, Any, Blob | None]:
    blob: Blob | None = yield Get(key)
    return blob


def get_many(keys: Iterable[str]) -> Generator[Op, Any, list[Blob | None]]:
    """The blobs of ``keys`` in one batch read, in order (None: missing); no
    operation at all when there are none."""
    batch = tuple(keys)
    if not batch:
        return []
    if len(batch) == 1:  # the plain operation: every backend's cheapest
        return [cast("Blob | None", (yield Get(batch[0])))]
    return cast("list[Blob | None]", (yield GetMany(batch)))


def put(
    key: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
) -> Generator[Op, Any, BlobInfo]:
    info: BlobInfo = yield Put(key, data, if_match, if_none_match)
    return info


def put_if_absent(key: str, data: bytes) -> Generator[Op, Any, None]:
    """Create ``key`` unless it exists (then keep it, without an error or an
    answer to wait for)."""
    yield Put(key, data, None, True, True)


def delete(
    key: str, *, if_match: str | None = None, quiet: bool = False
) -> Generator[Op, Any, bool]:
    found: bool = yield Delete(key, if_match, quiet)
    return found


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


def list_many(*listings: ListKeys) -> Generator[Op, Any, list[list[BlobInfo]]]:
    """The answers of independent listings, sent together."""
    if len(listings) == 1:  # the plain operation: every backend's cheapest
        return [cast("list[BlobInfo]", (yield listings[0]))]
    return cast("list[list[BlobInfo]]", (yield ListMany(listings)))


def scan(
    prefix: str,
    *,
    start_after: str | None = None,
    end_before: str | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> Generator[Op, Any, list[Entry]]:
    return cast("list[Entry]", (yield Scan(prefix, start_after, end_before, reverse, limit)))


#: What a visitor of :func:`each_batch` returns for a batch: True to stop
#: there, or a program (its own operations, in the same unit) that says so.
Visited = bool | None | Generator[Op, Any, bool | None]


@overload
def each_batch(
    prefix: str,
    visit: Callable[[list[BlobInfo]], Visited],
    *,
    size: int,
    start_after: str | None = None,
    end_before: str | None = None,
    values: Literal[False] = False,
) -> Generator[Op, Any, bool]: ...


@overload
def each_batch(
    prefix: str,
    visit: Callable[[list[Entry]], Visited],
    *,
    size: int,
    start_after: str | None = None,
    end_before: str | None = None,
    values: Literal[True],
) -> Generator[Op, Any, bool]: ...


def each_batch(
    prefix: str,
    visit: Callable[[Any], Visited],
    *,
    size: int,
    start_after: str | None = None,
    end_before: str | None = None,
    values: bool = False,
) -> Generator[Op, Any, bool]:
    """Hand ``visit`` each batch of up to ``size`` keys under ``prefix``
    (``values``: with their values), strictly between ``start_after`` and
    ``end_before``, in key order, inside the caller's unit of work: the one
    loop of a program that goes through all a prefix holds (a walk that reads
    a page per unit is :mod:`makers_store._core.paging`'s). A batch shorter than
    ``size`` is the last. True when ``visit`` stopped the walk."""
    while True:
        batch: list[Any] = yield (Scan if values else ListKeys)(
            prefix, start_after, end_before, False, size
        )
        outcome = visit(batch)
        if isinstance(outcome, Generator):
            outcome = yield from outcome
        if outcome:
            return True
        if len(batch) < size:
            return False
        start_after = batch[-1].key


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


def keys_written(op: Op) -> tuple[str, ...]:
    """The keys a write operation changes (none for a read): what a backend
    announces to :meth:`BlobStore.watch_writes`."""
    if isinstance(op, Put | Delete):
        return (op.key,)
    if isinstance(op, DeleteMany):
        return op.keys
    return ()


def single(op: Op) -> Program[Any]:
    return (yield op)
