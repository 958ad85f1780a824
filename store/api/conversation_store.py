"""The asynchronous public API's own part: :class:`ConversationStore`, the base
of :class:`makers_store.ContextStore` (conversations, messages, ``state``,
binding, forks, windows, conversions, ``watch``). The rooms above it (the
adapters, maintenance) take one from outside; the facade
(:mod:`makers_store.context_store`) adds their entries.

Every method validates its arguments (raising before anything is written),
builds a program from :mod:`makers_store._core.programs`, and has the backend run
it as one unit of work (:class:`makers_store._core.runner.UnitRunner` runs it again
when it loses a race with another writer on a backend without transactions).
How the methods read positional, keyword and bound-store calls:
:mod:`makers_store._core.arguments`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from .._core import (
    arguments,
    keys,
    listing,
    message_lookup,
    message_programs,
    paging,
    programs,
    validate,
)
from .._core.arguments import UNSET as _UNSET
from .._core.runner import UnitRunner
from ..blob import BlobStore
from ..clock import Clock, IdSource, random_suffix, system_clock
from ..errors import MemoryValidationError
from ..models import ConversationMeta, ListConversationsResult, Message, Order, Role
from .location import StoreLocation
from .state import StateStore
from .watch import StoreWatch

if TYPE_CHECKING:  # the features below are imported by the methods that run them,
    # so that opening a store (the CLI's start-up) costs only what it reads
    from ..lifecycle.context_window import ContextWindow
    from ..lifecycle.convert import AnthropicRequest, MessageSource


class ConversationStore:
    """``context.store``: conversations, messages and state over a Blob store.

    Create one with :func:`makers_store.open_store`; ``bind(conversation_id)``
    gives the store an agent sees as ``ctx.store``, whose ``state`` works and
    whose methods default ``conversation_id`` to the bound one.
    """

    def __init__(
        self,
        blobs: BlobStore,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        location: StoreLocation | None = None,
    ) -> None:
        self._runner = UnitRunner(blobs, clock=clock or system_clock, ids=ids or random_suffix)
        self._location = location
        self._adapters: dict[str, Any] = {}  # built by the facade, shared with bound views
        self._closed = False
        self._conversation_id: str | None = None
        self._run_id: str | None = None
        self._owner = True
        self._checked_cid: str | None = None  # see _cid

    # --- wiring ------------------------------------------------------------

    @property
    def blobs(self) -> BlobStore:
        """The Blob-store backend (the raw view ``makers-store blob`` shows)."""
        return self._runner.blobs

    @property
    def runner(self) -> UnitRunner:
        """The unit runner (backend, clock, ids, retry policy) every program of
        this store runs through: the framework adapters' too."""
        return self._runner

    @property
    def location(self) -> StoreLocation | None:
        """Where the data lives and why that place was chosen."""
        return self._location

    @property
    def conversation_id(self) -> str | None:
        """The conversation this store is bound to, if any."""
        return self._conversation_id

    @property
    def run_id(self) -> str | None:
        """The agent run this store was bound in (``bind(..., run_id=)``), if any."""
        return self._run_id

    def bind(self, conversation_id: str | None, *, run_id: str | None = None) -> Self:
        """A store over the same data, bound to ``conversation_id`` and to the
        run ``run_id``. ``None`` gives an unbound view (``ctx.store`` of a
        request without a conversation): its ``state`` raises."""
        bound = object.__new__(type(self))
        bound._runner = self._runner
        bound._location = self._location
        bound._adapters = self._adapters
        bound._closed = False
        bound._conversation_id = (
            None if conversation_id is None else validate.conversation_id(conversation_id)
        )
        bound._run_id = None if run_id is None else validate.identifier(run_id, "run_id")
        bound._owner = False
        bound._checked_cid = None
        return bound

    @property
    def state(self) -> StateStore:
        """The bound conversation's JSON key-value state."""
        if self._conversation_id is None:
            raise MemoryValidationError(
                "state needs a conversation: use store.bind(conversation_id).state"
            )
        return StateStore(self._runner, self._conversation_id)

    async def close(self) -> None:
        """Close the backend (a no-op on bound stores, which share it)."""
        if self._owner and not self._closed:
            self._closed = True
            for adapter in self._adapters.values():  # sweepers, portal threads
                aclose = getattr(adapter, "aclose", None)
                if aclose is not None:
                    await aclose()
            await self._runner.blobs.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- messages ----------------------------------------------------------
    # Parameters are positional-or-keyword in the platform's order; on a bound
    # store ``conversation_id`` may be omitted (see makers_store._core.arguments).

    async def append_message(
        self,
        conversation_id: str | None = None,
        role: Role | str = _UNSET,
        content: Any = _UNSET,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        message_id: str | None = None,
    ) -> str:
        """Append a message, creating the conversation if missing; returns its id.

        ``message_id``: the caller's id for it (omitted: ``msg_...``). Appending
        an id the conversation holds returns it and changes nothing when role,
        content and metadata are equal (a retried request), and raises
        MemoryConflictError otherwise."""
        cid = self._cid(conversation_id)
        role = validate.role(arguments.required(role, "role"))
        content_json = validate.content_json(arguments.required(content, "content"))
        metadata_json = validate.metadata_json(metadata)
        uid = validate.optional_user_id(user_id)
        client_id = validate.client_message_id(message_id)
        # On use: the CLI's reads do without it. From the module, not the
        # package: a package's from-import runs importlib's Python code on
        # every call, a module's does not.
        from .._core.appends import NewMessage, append_message

        now, tie = self._runner.stamp()
        new = NewMessage(
            cid,
            role,
            content_json,
            metadata_json,
            uid,
            now,
            self._runner.ids(),
            tie,
            client_id=client_id,
        )
        caps = self.blobs.capabilities
        return await self._runner.run(lambda: append_message(new, caps), write=True)

    async def append_messages(
        self,
        conversation_id: str | None = None,
        messages: Sequence[Mapping[str, Any]] = _UNSET,
        user_id: str | None = None,
    ) -> list[str]:
        """Append several ``{role, content, metadata?, message_id?}`` messages in
        one unit of work (one transaction where the backend has them); returns
        their ids. An addition to the platform's API, for batch writers such as
        adapters. A ``message_id`` is the caller's id, as in ``append_message``."""
        cid = self._cid(conversation_id)
        uid = validate.optional_user_id(user_id)
        batch = validate.message_batch(arguments.required(messages, "messages"))
        from .._core import appends

        now, tie = self._runner.stamp()
        news = appends.new_messages(cid, batch, uid, now, tie, self._runner.ids)
        caps = self.blobs.capabilities
        return await self._runner.run(lambda: appends.append_messages(news, caps), write=True)

    async def get_messages(
        self,
        conversation_id: str | None = None,
        limit: int = 20,
        order: Order | str = "asc",
        after: str | None = None,
        before: str | None = None,
    ) -> list[Message]:
        """A page of messages; ``after``/``before`` are message ids."""
        cid = self._cid(conversation_id)
        count = validate.limit(limit)
        direction = validate.order(order)
        validate.exclusive_cursors(after, before)
        after_id = validate.message_cursor(after, "after")
        before_id = validate.message_cursor(before, "before")
        return await self._runner.run(
            lambda: message_programs.get_messages(
                cid,
                count,
                direction,
                after_id,
                before_id,
                self.blobs.capabilities,
            ),
            write=False,
        )

    async def get_message(
        self, conversation_id: str | None = None, message_id: str | None = None
    ) -> Message | None:
        """One message by id, or None if the conversation or the message does
        not exist. Also ``get_message(message_id)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id, conversation_id, message_id, usage="get_message(message_id)"
        )
        return await self._runner.run(lambda: message_lookup.message_by_id(cid, mid), write=False)

    async def iter_messages(
        self,
        conversation_id: str | None = None,
        order: Order | str = "asc",
        after: str | None = None,
        before: str | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[Message]:
        """Every message of the conversation in ``order`` (after the message id
        ``after`` if given), or with ``before``, the messages that precede that
        id in ``order``, nearest first: ``get_messages`` pages of ``page_size``
        (1..100) followed by cursor, each read in its own unit of work
        (messages appended meanwhile are reached in ``asc`` order; one deleted
        meanwhile may still be yielded). Arguments are checked when the
        iteration starts."""
        cid = self._cid(conversation_id)
        direction = validate.order(order)
        size = validate.limit(page_size, "page_size")
        validate.exclusive_cursors(after, before)
        backward = before is not None

        # Each page through the public get_messages: one unit, the same checks.
        async def read(cursor: str | None) -> tuple[list[Message], str | None]:
            page = await self.get_messages(
                conversation_id=cid,
                limit=size,
                order=direction,
                after=None if backward else cursor,
                before=cursor if backward else None,
            )
            if backward:
                page.reverse()  # a page comes in ``order``; the walk goes away from ``before``
            return page, paging.after_full(page, size, lambda message: message.message_id)

        async for message in paging.items(read, before if backward else after):
            yield message

    async def update_message(
        self,
        conversation_id: str | None = None,
        message_id: str | None = None,
        content: Any = _UNSET,
        metadata: dict[str, Any] | None = _UNSET,
    ) -> Message:
        """Replace the content and/or the whole metadata of one message. Also
        ``update_message(message_id, content=..., metadata=...)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id,
            conversation_id,
            message_id,
            usage="update_message(message_id, content=..., metadata=...)",
        )
        content_json = None if content is _UNSET else validate.content_json(content)
        metadata_json = None if metadata is _UNSET else validate.metadata_json(metadata)
        now = self._runner.clock()
        return await self._runner.run(
            lambda: message_programs.update_message(cid, mid, content_json, metadata_json, now),
            write=True,
        )

    async def merge_message_metadata(
        self,
        conversation_id: str | None = None,
        message_id: str | None = None,
        *,
        patch: Mapping[str, Any] = _UNSET,
    ) -> Message:
        """Shallow-merge ``patch`` into one message's metadata (a value of None
        deletes that key; other keys kept), as ``update_conversation`` merges
        a conversation's: read and written in one unit of work, so two merges
        at once both land. Not in the platform's API (its ``updateMessage``
        replaces the whole metadata, as :meth:`update_message` does). Also
        ``merge_message_metadata(message_id, patch=...)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id,
            conversation_id,
            message_id,
            usage="merge_message_metadata(message_id, patch=...)",
        )
        given = arguments.required(patch, "patch")
        if not isinstance(given, Mapping):
            raise MemoryValidationError(f"patch must be a dict, not {type(given).__name__}")
        changes = dict(given)
        validate.metadata_json(changes, argument="patch")
        now = self._runner.clock()
        return await self._runner.run(
            lambda: message_programs.merge_message_metadata(cid, mid, changes, now), write=True
        )

    async def delete_message(
        self, conversation_id: str | None = None, message_id: str | None = None
    ) -> None:
        """Delete one message. Also ``delete_message(message_id)`` on a bound store."""
        cid, mid = arguments.message_target(
            self._conversation_id, conversation_id, message_id, usage="delete_message(message_id)"
        )
        now = self._runner.clock()
        await self._runner.run(lambda: message_programs.delete_message(cid, mid, now), write=True)

    async def clear_messages(self, conversation_id: str | None = None) -> None:
        """Delete every message; the conversation and its metadata stay."""
        cid = self._cid(conversation_id)
        now = self._runner.clock()
        await self._runner.run(lambda: message_programs.clear_messages(cid, now), write=True)

    # --- conversations -----------------------------------------------------

    async def get_conversation(self, conversation_id: str | None = None) -> ConversationMeta | None:
        """The conversation's meta, or None if it does not exist."""
        cid = self._cid(conversation_id)
        return await self._runner.run(lambda: programs.get_conversation(cid), write=False)

    async def list_conversations(
        self,
        limit: int = 20,
        order: Order | str = "desc",
        after: str | None = None,
        before: str | None = None,
        user_id: str | None = None,
    ) -> ListConversationsResult:
        """A page of conversations by ``last_message_at``, optionally one user's."""
        count = validate.limit(limit)
        direction = validate.order(order)
        uid = validate.optional_user_id(user_id)
        validate.exclusive_cursors(after, before)
        prefix = keys.index_prefix(uid)
        after_key = validate.conversation_cursor(after, "after", prefix)
        before_key = validate.conversation_cursor(before, "before", prefix)
        return await self._runner.run(
            lambda: listing.list_conversations(
                count,
                direction,
                after_key,
                before_key,
                uid,
                self.blobs.capabilities,
            ),
            write=False,
        )

    async def iter_conversations(
        self, user_id: str | None = None, order: Order | str = "desc", page_size: int = 100
    ) -> AsyncIterator[ConversationMeta]:
        """Every conversation (or ``user_id``'s) by ``last_message_at``:
        ``list_conversations`` pages of ``page_size`` (1..100) followed by
        cursor, each read in its own unit of work (a conversation written
        meanwhile moves in the order, so it may be yielded twice or not at
        all). Arguments are checked when the iteration starts."""
        direction = validate.order(order)
        size = validate.limit(page_size, "page_size")
        uid = validate.optional_user_id(user_id)

        # Each page through the public list_conversations: one unit, the same checks.
        async def read(cursor: str | None) -> tuple[list[ConversationMeta], str | None]:
            page = await self.list_conversations(
                limit=size, order=direction, after=cursor, user_id=uid
            )
            return page.items, page.next_cursor

        async for meta in paging.items(read):
            yield meta

    async def update_conversation(
        self, conversation_id: str | None = None, metadata: dict[str, Any] = _UNSET
    ) -> ConversationMeta:
        """Shallow-merge ``metadata``; a value of None deletes that key."""
        cid = self._cid(conversation_id)
        patch = validate.metadata_patch(arguments.required(metadata, "metadata"))
        now = self._runner.clock()
        return await self._runner.run(
            lambda: programs.update_conversation(cid, patch, now), write=True
        )

    async def delete_conversation(self, conversation_id: str | None = None) -> None:
        """Delete the conversation and everything it owns. Not recoverable."""
        cid = self._cid(conversation_id)
        await self._runner.run(lambda: programs.delete_conversation(cid), write=True)

    async def fork_conversation(
        self, source_id: str, new_id: str, *, up_to: str | None = None
    ) -> ConversationMeta:
        """Copy conversation ``source_id`` into the new id ``new_id``: its
        messages (all, or up to and including the message ``up_to``) with
        their ids and times, its metadata with ``forked_from =
        {"conversation_id", "message_id"}`` added, its state, its users and
        its LangGraph thread up to the fork; returns the new conversation's
        meta. Whole or nothing: a fork cut short leaves no new conversation.
        ``new_id`` existing (or created meanwhile) is MemoryConflictError, a
        missing source or ``up_to`` MemoryNotFoundError, nothing written then
        (see :mod:`makers_store.lifecycle.fork`)."""
        from ..lifecycle.fork import fork_conversation  # imported on use

        return await fork_conversation(self._runner, source_id, new_id, up_to)

    def _cid(self, given: str | None) -> str:
        # The very string object the last call checked is not checked again
        # (str is immutable): a caller appending in a loop passes the same one.
        if given is not None and given is self._checked_cid:
            return given
        cid = arguments.conversation(self._conversation_id, given)
        if given is not None:
            self._checked_cid = cid
        return cid

    # --- the context window (the platform's summary convention) ------------

    async def context_window(
        self, conversation_id: str | None = None, *, last: int = 20, strict: bool = False
    ) -> ContextWindow:
        """What a model should see: ``metadata["summary"]`` and the newest
        ``last`` (1..1000) messages after ``metadata["summarizedUntil"]``,
        oldest first, read in one unit of work however long the conversation.
        A missing conversation is an empty window. The rules (a mark at a
        deleted message, a summary without a mark...):
        :mod:`makers_store.lifecycle.context_window`. An orphan tool call gets
        a result saying it was interrupted and an orphan result is left out,
        in the window only (:mod:`makers_store.lifecycle.history_guard`);
        ``strict=True`` raises :class:`~makers_store.InvalidHistoryError`
        instead."""
        from ..lifecycle import context_window as windows  # on use, as each feature

        cid = self._cid(conversation_id)
        count = windows.window_size(last)
        caps = self.blobs.capabilities
        window = await self._runner.run(lambda: windows.read_window(cid, count, caps), write=False)
        return windows.guarded(window, strict=strict)

    async def set_summary(
        self, conversation_id: str | None = None, summary: str = _UNSET, *, until: str = _UNSET
    ) -> ConversationMeta:
        """Write ``metadata["summary"] = summary`` and
        ``metadata["summarizedUntil"] = until`` in one shallow merge (one unit
        of work; other metadata kept). ``until`` must be a message of the
        conversation: otherwise, or when the conversation does not exist,
        MemoryNotFoundError and nothing is written. On a bound store
        ``set_summary(summary, until=...)`` uses the bound conversation."""
        given = conversation_id
        if summary is _UNSET and given is not None and self._conversation_id is not None:
            summary = given  # the bound store's set_summary(summary, until=...)
            given = None
        cid = self._cid(given)
        from ..lifecycle import context_window as windows

        text = windows.summary_text(arguments.required(summary, "summary"))
        mark = validate.identifier(arguments.required(until, "until"), "until")
        now = self._runner.clock()
        return await self._runner.run(
            lambda: windows.write_summary(cid, text, mark, now), write=True
        )

    # --- watching ----------------------------------------------------------

    def watch(
        self, conversation_id: str | None = None, *, poll_interval: float = 1.0
    ) -> StoreWatch:
        """Changes to ``conversation_id`` (on a bound store, the bound one by
        default), or to the list of conversations when there is none, as an
        async iterator of :class:`~makers_store.api.watch.StoreChange`, by any
        writer, in any process: ``async with store.watch("c1") as changes:
        async for change in changes: ...``. Memory and PostgreSQL push the
        keys written; SQLite notices commits within 0.1 s; object storage is
        polled every ``poll_interval`` seconds (see docs/backends.md, "Watching for changes")."""
        given = self._conversation_id if conversation_id is None else conversation_id
        cid = None if given is None else validate.conversation_id(given)
        if (
            isinstance(poll_interval, bool)
            or not isinstance(poll_interval, int | float)
            or not 0 < poll_interval <= 3600
        ):
            raise MemoryValidationError(
                f"poll_interval must be a number of seconds in (0, 3600], got {poll_interval!r}"
            )
        return StoreWatch(self.blobs, cid, float(poll_interval))

    # --- conversions (synchronous) ----------------------------------------

    def to_anthropic_messages(
        self, messages: MessageSource, *, strict: bool = False
    ) -> list[dict[str, Any]]:
        """``messages`` for the Anthropic Messages API (system turns, and a
        context window's summary, left out: :meth:`to_anthropic_request`).
        Orphan tool calls and results are fixed in the output (``strict``:
        InvalidHistoryError instead), as :mod:`makers_store.lifecycle.convert` says."""
        from ..lifecycle.convert import to_anthropic_messages

        return to_anthropic_messages(messages, strict=strict)

    def to_anthropic_request(
        self, messages: MessageSource, *, strict: bool = False
    ) -> AnthropicRequest:
        """``{"messages", "system"?}`` for Anthropic's ``messages.create(**...)``:
        the system text (a context window's summary, stored system turns)
        beside the messages; tool calls guarded as in :meth:`to_anthropic_messages`."""
        from ..lifecycle.convert import to_anthropic_request

        return to_anthropic_request(messages, strict=strict)

    def to_openai_input(
        self, messages: MessageSource, *, strict: bool = False
    ) -> list[dict[str, Any]]:
        """``{role, content}`` items for OpenAI Chat Completions; a context
        window's summary first, as a system message; tool calls guarded as in
        :meth:`to_anthropic_messages`."""
        from ..lifecycle.convert import to_openai_input

        return to_openai_input(messages, strict=strict)
