"""Walking a listing page by page, by cursor: the one loop behind every walk
of the store that reads a page per unit of work: ``iter_messages`` and
``iter_conversations`` (each page through the public page method), the
maintenance walks (:mod:`makers_store.maintenance.inventory`, ``store.admin.list_blobs``
included, :mod:`makers_store.maintenance.index_repair`,
:mod:`makers_store.maintenance.exporting`, :mod:`makers_store.maintenance.copying`),
the layout move (:mod:`makers_store._core.layout`), the fork's copy
(:mod:`makers_store.lifecycle.fork`), retention's walk of the recency index
(:mod:`makers_store.lifecycle.retention`), the LangGraph checkpointer's
listing of a namespace and the LangGraph store's index build and sweep. A
loop within one unit of work is :func:`makers_store.blob_ops.each_batch`
(the LangGraph store's read of recency copies, among others).

A walk is a function ``read(cursor)`` that reads one page, in a unit of work
of its own, and returns it with the cursor the next page starts from, or None
when it was the last. The walk holds no unit open between pages, so a store
of any size is walked with bounded memory and no unit grows with the store;
what was written meanwhile may or may not be met, as each walk documents.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from ..errors import MemoryCorruptError

Cursor = TypeVar("Cursor")
Page = TypeVar("Page")
Item = TypeVar("Item")


async def pages(
    read: Callable[[Cursor | None], Awaitable[tuple[Page, Cursor | None]]],
    start: Cursor | None = None,
) -> AsyncGenerator[Page, None]:
    """Every page of the walk from ``start`` (None: the beginning): ``read``
    is called again with the cursor each page returns, until one returns None.

    A page that ends at the cursor it started from made no progress: the
    walk would read it forever. Only damaged data does that (two messages
    holding one id, a page apart: the id resolves to the first), so it is
    :class:`~makers_store.errors.MemoryCorruptError`, raised before the page
    is yielded again."""
    cursor = start
    while True:
        page, following = await read(cursor)
        if following is not None and following == cursor:
            raise MemoryCorruptError(
                f"a walk made no progress: the page after {cursor!r} ends at {cursor!r} "
                "again (two items hold that id; makers-store doctor names them)"
            )
        yield page
        if following is None:
            return
        cursor = following


async def items(
    read: Callable[[Cursor | None], Awaitable[tuple[Iterable[Item], Cursor | None]]],
    start: Cursor | None = None,
) -> AsyncGenerator[Item, None]:
    """Every item of every page of the walk (see :func:`pages`), in order. A
    caller that stops early closes it (``contextlib.aclosing``) so that the
    walk ends there, not when the garbage collector finds it."""
    async for page in pages(read, start):
        for item in page:
            yield item


async def run_pages(
    step: Callable[[Cursor | None], Awaitable[Cursor | None]], start: Cursor | None = None
) -> None:
    """Run a walk whose pages are work done rather than data read (a unit
    that copies, indexes or mends one page): ``step(cursor)`` returns only
    the cursor the next page starts from, None after the last (see :func:`pages`)."""

    async def read(cursor: Cursor | None) -> tuple[None, Cursor | None]:
        return None, await step(cursor)

    async for _ in pages(read, start):
        pass


def after_full(page: Sequence[Item], size: int, key: Callable[[Item], Cursor]) -> Cursor | None:
    """The cursor after ``page`` (the ``key`` of its last item) when it holds
    ``size`` items; None after a shorter one: a listing that returns fewer
    than it was asked for has nothing after them."""
    return key(page[-1]) if page and len(page) >= size else None
