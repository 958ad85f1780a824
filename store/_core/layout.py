"""The layout version of a store's keys, and moving a store written by an
earlier version to the current one, in place.

Layout 2 bounds the key segments of ids (:func:`makers_store._core.keys.id_segment`):
a conversation id, user id or state key whose escaped form is longer than
``keys.SEGMENT_BUDGET`` gets a cut segment with a digest. A store written
before that may hold keys with longer segments (on SQLite and PostgreSQL, and
on S3 below its 1,024-byte limit), which the current code would not find.

:func:`ensure_layout` runs before a store's first unit of work in a process
(the unit runner, :class:`~makers_store._core.runner.UnitRunner`, calls it before
every unit, so every entry point does; it is remembered per backend object):
one read of the marker blob ``v/layout``. When the marker is missing or
older, every key is listed once and each key in the old form is moved to its
current form (one unit per key: on SQLite and PostgreSQL the copy, the names of its
bounded ids (:mod:`makers_store._core.names`) and the removal of the old key are
one transaction; on object storage a move cut short is finished by the next
run, which finds the old key again), then the marker is written. An empty
store has nothing to move: its first write writes the marker, so read
commands never write to a store of the current layout.

This is the one module that runs units on a backend without the runner:
the runner depends on it, and moving keys needs no retry (a unit cut short
is finished by the next run).

Move a store while nothing else writes to it: a write by another process to
a conversation being moved may be lost. A store that cannot be written
(a read-only SQLite file) and needs moving is refused with a clear error.
"""

from __future__ import annotations

import weakref

from ..blob import BlobStore
from ..blob_ops import Program, delete, get, list_keys, put
from ..errors import BackendError
from . import keys, names, paging

LAYOUT = b"2"
_PAGE = 1000
_ready: weakref.WeakSet[BlobStore] = weakref.WeakSet()
#: empty when first seen: the marker waits for the first write
_empty: weakref.WeakSet[BlobStore] = weakref.WeakSet()


def _state() -> Program[tuple[bytes | None, bool]]:
    """(the layout marker, whether the store holds any key)."""
    marker = yield from get(keys.LAYOUT_KEY)
    if marker is not None:
        return marker.data, True
    return None, bool((yield from list_keys("", limit=1)))


def _old_keys(start_after: str | None) -> Program[tuple[list[str], str | None]]:
    """The keys in an old form on the next page, and where the page ends."""
    page = yield from list_keys("", start_after=start_after, limit=_PAGE)
    old = [info.key for info in page if keys.current_form(info.key) != info.key]
    return old, (page[-1].key if len(page) == _PAGE else None)


def _move(key: str) -> Program[bool]:
    """Move one blob to its key's current form; False when it is gone."""
    blob = yield from get(key)
    if blob is None:
        return False
    yield from _remember(key)
    yield from put(keys.current_form(key), blob.data)
    yield from delete(key, quiet=True)
    return True


def _remember(key: str) -> Program[None]:
    """Write the names of the ids in an old-form key that get cut: those in a
    conversation's keys, and a listed Claude session's (its conversation's).
    Index entries need none: meta holds the conversation id, and user ids
    are compared by segment."""
    parts = key.split("/")
    ids = [keys.unescape(parts[index]) for index in keys.id_positions(parts)]
    if parts[0] == "c" or parts[:3] == ["x", "claude", "p"]:
        yield from names.remember(ids[0], *ids[1:])


def _mark() -> Program[None]:
    yield from put(keys.LAYOUT_KEY, LAYOUT)


def is_current(blobs: BlobStore) -> bool:
    """Whether ``blobs`` is known to hold the current layout (then
    :func:`ensure_layout` has nothing left to do for it)."""
    return blobs in _ready


async def ensure_layout(blobs: BlobStore, *, write: bool = False) -> None:
    """Bring ``blobs`` to the current layout (see the module docstring);
    ``write``: the caller is about to write, so a new store gets its marker."""
    if blobs in _ready:
        return
    if blobs in _empty:
        if write:  # the first write to a store that was empty: mark it current
            await blobs.run(_mark(), write=True)
            _ready.add(blobs)
        return
    marker, holds_keys = await blobs.run(_state(), write=False)
    if marker == LAYOUT:
        _ready.add(blobs)
    elif not holds_keys:  # new: nothing to move; marked by its first write
        _empty.add(blobs)
        await ensure_layout(blobs, write=write)
    else:
        moved = await _move_all(blobs)
        try:
            await blobs.run(_mark(), write=True)
        except BackendError:
            if moved:
                raise
            # A store that cannot be written and holds nothing to move reads fine.
        _ready.add(blobs)


async def _move_all(blobs: BlobStore) -> int:
    async def read(position: str | None) -> tuple[list[str], str | None]:
        return await blobs.run(_old_keys(position), write=False)

    moved = 0
    async for old in paging.pages(read):
        for key in old:
            try:
                moved += await blobs.run(_move(key), write=True)
            except BackendError as exc:
                raise BackendError(
                    f"this store was written by an earlier makers-store and {len(old)} or "
                    f"more of its keys need a one-time move to the current layout, which "
                    f"failed ({exc}); open it once with write access"
                ) from exc
    return moved
