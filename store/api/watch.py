"""Watching a store for changes: :meth:`makers_store.ContextStore.watch`.

A backend tells that blobs were written through
:meth:`makers_store.blob.BlobStore.watch_writes`: with the keys when it knows
them (memory, in-process; PostgreSQL, ``LISTEN``/``NOTIFY``), or with None,
"something may have changed", when it cannot (SQLite, whose ``PRAGMA
data_version`` moves when another connection commits; object storage, polled).
:class:`StoreWatch` turns that into :class:`StoreChange` events about one
conversation or the whole store. On None it compares a fingerprint (the keys
and etags of a listing) with the last one, so it reports only real changes:
for one conversation, the listing of its keys; for the store, the first page
of the recency index (the conversations a list page shows first).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from .._core import keys
from ..blob import BlobStore

if TYPE_CHECKING:
    from .._core.portal import Portal

#: What changed: a conversation's meta (title, metadata, counts, existence),
#: its messages, its ``state``, the framework data kept under it, or the list
#: of conversations (the recency index).
Part = Literal["conversation", "messages", "state", "frameworks", "conversations"]

#: How many index entries the store-wide fingerprint covers (a list page's worth).
INDEX_FINGERPRINT_ENTRIES = 100
_INDEX = "i/"
_ALL_INDEX = "i/all/"


@dataclasses.dataclass(frozen=True)
class StoreChange:
    """One change :meth:`ContextStore.watch` reports.

    ``conversation_id`` names the conversation that changed when it is known
    (None: the list of conversations changed, which one is not known);
    ``parts`` says what changed (see :data:`Part`).
    """

    conversation_id: str | None
    parts: frozenset[Part]


def part_of_key(key: str) -> Part | None:
    """The part of a conversation a ``c/{cid}/...`` key belongs to (None: no
    conversation's, or derived data nobody shows)."""
    if key.startswith(_INDEX):
        return "conversations"
    pieces = key.split("/")
    if len(pieces) < 3 or pieces[0] != "c":
        return None
    rest = pieces[2:]
    if rest[0] == "g" and len(rest) > 2:  # c/{cid}/g/{gen}/m/... : a later generation
        rest = rest[2:]
    head = rest[0]
    if head == "meta":
        return "conversation"
    if head == "m":
        return "messages"
    if head == "s":
        return "state"
    if head == "x":
        return "frameworks"
    return None


class StoreWatch:
    """An async iterator of :class:`StoreChange`, made by :meth:`ContextStore.watch`.

    Watching begins at ``async with`` (or at the first ``__anext__``): what is
    written before that is not reported. Close it (leave the ``async with``,
    or ``await aclose()``) to release what the backend holds for it (a
    connection on SQLite and PostgreSQL). Changes that come close together
    may arrive as one event.
    """

    def __init__(self, blobs: BlobStore, conversation_id: str | None, poll_interval: float) -> None:
        self._blobs = blobs
        self.conversation_id = conversation_id
        self.poll_interval = poll_interval
        self._prefix = (
            _INDEX if conversation_id is None else keys.conversation_prefix(conversation_id)
        )
        self._writes: AsyncIterator[frozenset[str] | None] | None = None
        self._fingerprint: dict[Part, str] | None = None
        self._pending: deque[StoreChange] = deque()
        self._closed = False

    async def start(self) -> None:
        """Begin watching (idempotent)."""
        if self._writes is None and not self._closed:
            writes = self._blobs.watch_writes(self.poll_interval)
            await anext(writes)  # the backend now sees every later write
            self._writes = writes
            # the baseline a backend that cannot name keys is compared with
            self._fingerprint = await self._fingerprint_now()

    async def aclose(self) -> None:
        """Stop watching and release the backend's resources (idempotent)."""
        self._closed = True
        writes, self._writes = self._writes, None
        aclose = getattr(writes, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> StoreWatch:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> StoreWatch:
        return self

    async def __anext__(self) -> StoreChange:
        await self.start()
        while not self._pending:
            if self._writes is None:
                raise StopAsyncIteration
            written = await anext(self._writes)
            if written is None:
                self._pending.extend(await self._compare())
            else:
                self._pending.extend(self._changes_of(written))
        return self._pending.popleft()

    # --- keys known: classify them ------------------------------------------

    def _changes_of(self, written: frozenset[str]) -> list[StoreChange]:
        by_conversation: dict[str | None, set[Part]] = {}
        for key in written:
            if not key.startswith(self._prefix) and not (
                self.conversation_id is None and key.startswith("c/")
            ):
                continue
            part = part_of_key(key)
            if part is None:
                continue
            if self.conversation_id is not None:
                cid: str | None = self.conversation_id
            elif part == "conversations":
                found = keys.parse_any_index_key(key)
                cid = None if found is None else keys.id_of_segment(found[3])
            else:
                cid = keys.id_of_segment(keys.conversation_segment(key))
            by_conversation.setdefault(cid, set()).add(part)
        return [StoreChange(cid, frozenset(parts)) for cid, parts in by_conversation.items()]

    # --- keys unknown: compare a listing with the last one --------------------

    async def _fingerprint_now(self) -> dict[Part, str]:
        if self.conversation_id is None:
            infos = await self._blobs.list(_ALL_INDEX, limit=INDEX_FINGERPRINT_ENTRIES)
            return {"conversations": _digest(f"{i.key} {i.etag}" for i in infos)}
        groups: dict[Part, list[str]] = {}
        for info in await self._blobs.list(self._prefix):
            part = part_of_key(info.key)
            if part is not None:
                groups.setdefault(part, []).append(f"{info.key} {info.etag}")
        return {part: _digest(lines) for part, lines in groups.items()}

    async def _compare(self) -> list[StoreChange]:
        now = await self._fingerprint_now()
        before, self._fingerprint = self._fingerprint or {}, now
        changed = {part for part in before.keys() | now.keys() if before.get(part) != now.get(part)}
        if not changed:
            return []
        return [StoreChange(self.conversation_id, frozenset(changed))]


def _digest(lines: Iterable[str]) -> str:
    import hashlib  # here: a watch needs it; every store imports this module

    hasher = hashlib.blake2b(digest_size=16)
    for line in lines:
        hasher.update(line.encode("utf-8", "surrogatepass"))
        hasher.update(b"\n")
    return hasher.hexdigest()


class SyncStoreWatch:
    """The blocking twin of :class:`StoreWatch` (``SyncContextStore.watch``):
    ``with store.watch("c1") as changes: for change in changes: ...``; each
    step blocks until a change comes."""

    def __init__(self, watch: StoreWatch, portal: Portal) -> None:
        self._watch = watch
        self._portal = portal

    @property
    def conversation_id(self) -> str | None:
        return self._watch.conversation_id

    def start(self) -> None:
        self._portal.call(self._watch.start())

    def close(self) -> None:
        """Stop watching (from the thread that iterates, between changes)."""
        self._portal.call(self._watch.aclose())

    def __enter__(self) -> SyncStoreWatch:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __iter__(self) -> SyncStoreWatch:
        return self

    def __next__(self) -> StoreChange:
        try:
            return self._portal.call(self._watch.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None
