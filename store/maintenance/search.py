"""Finding messages and conversations by their text: ``store.admin.search_messages``
and ``store.admin.find_conversations`` (``makers-store msg search``, ``conv list
--find``, the Studio's find box).

A match is a case-insensitive substring: of a message's text (a string
content, and the text parts of structured content: ``{"type": "text", "text":
...}`` and the other ``text`` fields, in lists and nested ``content``), or of a
conversation's id and title (the ``title``, ``name`` or ``subject`` string of
its metadata).

Everything is read through the store's public reading API, page by page
(``iter_conversations``, ``iter_messages``, ``get_conversation``), so memory
stays bounded by one page of messages whatever the store's size. The page
size follows the backend's capabilities: where every request is billed
(``Capabilities.costly_requests``) a page is the API's largest, elsewhere a
small one keeps fewer messages in memory. Each page is one unit of work read
the cheapest way the backend allows: newest-first
conversation pages are forward listings of the recency index everywhere, and
newest-first message pages on a backend that cannot list backward
(``Capabilities.lists_backward``) are forward listings of a computed window.
What the search adds is pruning by time: conversations come newest first, so
once one's ``last_message_at`` (which never goes back, and is at least every
message's ``created_at``) is before ``since``, no later one can match; and a
conversation's messages come newest first, so its walk stops once messages are
older than ``since`` by more than the clocks of two instances may differ.
Results come newest first: conversations by last message, messages within one.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core import validate
from .._core.search_text import (
    message_texts as message_texts,  # the rule's texts, shared with indexes
)
from ..errors import MemoryNotFoundError, MemoryValidationError
from ..models import ROLES, ConversationMeta, Message, fields_dict, title

if TYPE_CHECKING:  # the store a search is handed (the CLI imports this module alone)
    from ..api.conversation_store import ConversationStore

#: Characters of context a snippet shows around the match (before it, and in all).
SNIPPET_BEFORE, SNIPPET_WIDTH = 30, 100
#: How far a message's ``created_at`` may run behind an earlier message's: the
#: instances appending to one conversation read different clocks.
CLOCK_SLACK_MS = 60_000
#: Messages per page: where every request is billed (object storage) a full
#: page of 100; elsewhere, where a page costs little, 10, so that a search
#: holds at most 10 messages (each up to the 50 MB content limit) at a time.
BILLED_PAGE, LOCAL_PAGE = 100, 10
#: Conversations per page (a meta is small).
PAGE = 100



@dataclass(frozen=True, slots=True)
class MessageHit:
    """One message that matched: where it is, who said it when, and the text
    around the first match (one line, at most about 100 characters)."""

    conversation_id: str
    message_id: str
    role: str
    created_at: int
    snippet: str

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


def pattern(text: str) -> re.Pattern[str]:
    """What is searched for: ``text`` as it is, ignoring case."""
    if not isinstance(text, str) or not text:
        raise MemoryValidationError(f"text must be a non-empty string, got {text!r}")
    return re.compile(re.escape(text), re.IGNORECASE)


def snippet(text: str, match: re.Match[str]) -> str:
    """The match with some text around it, on one line; ``…`` where cut."""
    start = max(match.start() - SNIPPET_BEFORE, 0)
    end = max(match.end(), start + SNIPPET_WIDTH)
    shown = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + shown + ("…" if end < len(text) else "")


def conversation_matches(meta: ConversationMeta, text: str | re.Pattern[str]) -> bool:
    """Whether ``text`` is in the conversation's id or title (ignoring case)."""
    found = pattern(text) if isinstance(text, str) else text
    return bool(found.search(meta.conversation_id) or found.search(title(meta)))


def _message_hit(
    cid: str, message: Message, found: re.Pattern[str], role: str | None
) -> MessageHit | None:
    if role is not None and message.role != role:
        return None
    for text in message_texts(message.content):
        match = found.search(text)
        if match is not None:
            return MessageHit(
                cid, message.message_id, message.role, message.created_at, snippet(text, match)
            )
    return None


def _times(since: int | None, until: int | None) -> None:
    for name, value in (("since", since), ("until", until)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MemoryValidationError(f"{name} must be milliseconds (an int) or None")


async def _conversations(
    store: ConversationStore,
    conversation_ids: Sequence[str] | None,
    user_id: str | None,
) -> AsyncIterator[ConversationMeta]:
    if conversation_ids is None:
        async for meta in store.iter_conversations(user_id=user_id, page_size=PAGE):
            yield meta
        return
    for cid in dict.fromkeys(conversation_ids):
        named = await store.get_conversation(conversation_id=cid)
        if named is None:
            raise MemoryNotFoundError(f"conversation_id {cid!r} does not exist")
        yield named


async def search_messages(
    store: ConversationStore,
    text: str,
    *,
    conversation_ids: Sequence[str] | None = None,
    user_id: str | None = None,
    role: str | None = None,
    since: int | None = None,
    until: int | None = None,
    limit: int | None = None,
    on_conversation: Callable[[], None] | None = None,
    use_index: bool = True,
) -> AsyncIterator[MessageHit]:
    """The messages whose text (a string content, the text parts of
    structured content) contains ``text``, ignoring case, newest first:
    in ``conversation_ids`` (else all, or ``user_id``'s), by ``role``,
    created from ``since`` to ``until`` (ms, included), at most ``limit``;
    each a :class:`~makers_store.maintenance.search.MessageHit` with a snippet.
    ``on_conversation()`` runs after each conversation searched. Memory
    stays bounded: see :mod:`makers_store.maintenance.search`."""
    # Across the whole store, through the backend's search index where it has
    # one (maintenance/search_index.py); ``use_index=False`` (the tests' and the
    # benchmark's switch; store.admin does not offer it), or a query shorter than
    # the index answers, reads the messages instead: the scan below, the rule's
    # reference.
    found = pattern(text)
    if role is not None and role not in ROLES:
        raise MemoryValidationError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    uid = validate.optional_user_id(user_id)
    _times(since, until)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise MemoryValidationError(f"limit must be a positive int or None, got {limit!r}")
    page = BILLED_PAGE if store.blobs.capabilities.costly_requests else LOCAL_PAGE
    if conversation_ids is None and use_index:
        from . import search_index  # here: a whole-store search walks it, nothing else

        grouped = await search_index.candidates(store.blobs, text, limit)
        if grouped is not None:
            hits = search_index.search(
                store.blobs,
                grouped,
                lambda cid, message: _message_hit(cid, message, found, role),
                user_id=uid,
                since=since,
                until=until,
                limit=limit,
                page=page,
                on_conversation=on_conversation,
            )
            async for hit in hits:
                yield hit
            return
    shown = 0
    async for meta in _conversations(store, conversation_ids, uid):
        if since is not None and meta.last_message_at < since:
            if conversation_ids is None:
                break  # newest first: every later conversation is older still
            continue
        cid = meta.conversation_id
        # each page is its own unit of work: a walk left early holds nothing
        async for message in store.iter_messages(cid, order="desc", page_size=page):
            if since is not None and message.created_at < since:
                if message.created_at < since - CLOCK_SLACK_MS:
                    break
                continue
            if until is not None and message.created_at > until:
                continue
            hit = _message_hit(cid, message, found, role)
            if hit is None:
                continue
            yield hit
            shown += 1
            if limit is not None and shown >= limit:
                return
        if on_conversation is not None:
            on_conversation()


async def find_conversations(
    store: ConversationStore,
    text: str,
    *,
    user_id: str | None = None,
    since: int | None = None,
    until: int | None = None,
    limit: int | None = None,
) -> AsyncIterator[ConversationMeta]:
    """The conversations whose id or title contains ``text``, ignoring
    case, newest first, last message from ``since`` to ``until`` (ms,
    included), at most ``limit``."""
    found = pattern(text)
    uid = validate.optional_user_id(user_id)
    _times(since, until)
    shown = 0
    async for meta in store.iter_conversations(user_id=uid, page_size=PAGE):
        if since is not None and meta.last_message_at < since:
            break  # newest first
        if until is not None and meta.last_message_at > until:
            continue
        if conversation_matches(meta, found):
            yield meta
            shown += 1
            if limit is not None and shown >= limit:
                return
