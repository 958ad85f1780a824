"""Walking a whole listing page by page, by cursor: the bodies of
:meth:`~makers_store.ContextStore.iter_messages` and
:meth:`~makers_store.ContextStore.iter_conversations`. They call the store's
public page methods only, so each page is one unit of work and gets the same
validation, and the walk itself holds no unit open between pages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from .models import ConversationMeta, Message

if TYPE_CHECKING:
    from .api import ContextStore


async def messages(
    store: ContextStore,
    cid: str,
    order: str,
    after: str | None,
    before: str | None,
    size: int,
) -> AsyncIterator[Message]:
    """The messages after ``after`` in ``order``, or those before ``before``
    walked away from it (nearest first), ``size`` per page."""
    backward = before is not None
    cursor = before if backward else after
    while True:
        page = await store.get_messages(
            conversation_id=cid,
            limit=size,
            order=order,
            after=None if backward else cursor,
            before=cursor if backward else None,
        )
        if backward:
            page.reverse()  # a page comes in ``order``; the walk goes away from ``before``
        for message in page:
            yield message
        if len(page) < size:
            return
        cursor = page[-1].message_id


async def conversations(
    store: ContextStore, user_id: str | None, order: str, size: int
) -> AsyncIterator[ConversationMeta]:
    """Every conversation (or ``user_id``'s) in ``order``, ``size`` per page."""
    cursor: str | None = None
    while True:
        page = await store.list_conversations(
            limit=size, order=order, after=cursor, user_id=user_id
        )
        for meta in page.items:
            yield meta
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
