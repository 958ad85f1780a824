"""The public maintenance API: ``store.admin`` (:class:`StoreAdmin`).

What the ``makers-store`` commands that look at or repair a whole store do,
as methods: counts, the users of a conversation, checking and rebuilding the
recency indexes, export and import as JSON lines, copying to another store,
searching messages and conversations by their text, the history doctor
(:mod:`makers_store.maintenance.doctor`), and the raw blobs. Each
walks the store in bounded batches of units of work (a store of any size
costs bounded memory), run by the store's
:class:`~makers_store._core.runner.UnitRunner`. The blocking twin is
``SyncContextStore.admin`` (:class:`makers_store.sync_api.SyncStoreAdmin`),
generated from this class; an async iterator's twin is an iterator.

The work itself is in :mod:`makers_store.maintenance.inventory` (walking and counting),
:mod:`makers_store.maintenance.index_repair`, :mod:`makers_store.maintenance.exporting` (export),
:mod:`makers_store.maintenance.importing`, :mod:`makers_store.maintenance.copying` and
:mod:`makers_store.maintenance.search` (which reads through the public API instead) and
:mod:`makers_store.lifecycle.retention` (pruning).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import timedelta
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from .._core import paging, validate
from .._core.runner import UnitRunner
from ..blob_ops import Blob, BlobInfo, get, list_keys
from ..errors import MemoryValidationError, MissingExtraError
from ..models import ConversationMeta

if TYPE_CHECKING:  # each feature module is imported by the method that runs it
    from .._core.search_text import SearchIndexCheck
    from .._core.vacuum import VacuumReport
    from ..api.conversation_store import ConversationStore
    from ..lifecycle.history_rules import HistoryFinding
    from ..lifecycle.retention import CheckpointPruneReport, PruneReport
    from .copying import CopyReport
    from .doctor import HistoryRepair
    from .exporting import TransferCounts
    from .index_repair import IndexCheck, IndexEntry, RebuildSummary
    from .inventory import CheckpointName, StateOnlyConversation, StoreCounts
    from .search import MessageHit
    from .snapshots import SnapshotInfo

#: Keys per listing request of :meth:`StoreAdmin.list_blobs`.
BLOB_PAGE = 500


class StoreAdmin:
    """Maintenance over the whole store a :class:`~makers_store.ContextStore`
    opens (``store.admin``): the same on every view bound from it."""

    def __init__(self, runner: UnitRunner, store: ConversationStore | None = None) -> None:
        self._runner = runner
        self._store = store  # the public API the searches read through

    # --- what the store holds ----------------------------------------------

    async def counts(self) -> StoreCounts:
        """Live conversations, their messages, state entries and index
        entries, the users (ids with a per-user index) and the blobs the
        framework adapters keep."""
        from . import inventory

        return await inventory.store_counts(self._runner)

    async def count_conversations(self) -> int:
        """How many conversation ids own data (a cheap walk: no meta is read);
        the progress total of :meth:`rebuild_index` and :meth:`export_jsonl`."""
        from . import inventory

        return await inventory.count_conversations(self._runner)

    async def iter_user_ids(self) -> AsyncIterator[str]:
        """Every user id the store has a per-user index of (the ``user_id`` of
        appends), in key order: one listing per user, in bounded units of
        work. ``list_conversations(user_id=...)`` lists each one's conversations."""
        from . import inventory

        async for uid in inventory.iter_user_ids(self._runner):
            yield uid

    async def conversation_users(self, conversation_id: str) -> list[str] | None:
        """The user ids whose index lists the conversation (the ``user_id`` of
        its appends), or None when it does not exist. Not a field of
        ConversationMeta, whose fields are the platform's."""
        from . import inventory

        cid = validate.conversation_id(conversation_id)
        return await inventory.conversation_users(self._runner, cid)

    async def langgraph_checkpoints(self, conversation_id: str) -> list[CheckpointName]:
        """The names (namespace and id) of the LangGraph checkpoints of the
        conversation's thread, newest first within each namespace; read from
        the keys, so without LangGraph installed (``conv show`` names them)."""
        from . import inventory

        cid = validate.conversation_id(conversation_id)
        return await inventory.checkpoint_names(self._runner, cid)

    async def iter_state_only_conversations(self) -> AsyncIterator[StateOnlyConversation]:
        """The conversations that hold state and no meta (``state.set`` with
        no message ever appended), with how many state entries each holds.
        No recency index lists them, so this walks the store's conversation
        ids (one listing per conversation, in bounded units of work; never
        one per key): a maintenance read, not a per-request one."""
        from . import inventory

        async for item in inventory.iter_state_only(self._runner):
            yield item

    # --- the recency indexes -----------------------------------------------

    async def check_index(self) -> IndexCheck:
        """Compare every index entry with the conversations' metas, and every
        meta with the entries it implies; ``.ok`` when nothing drifted.
        Read-only."""
        from . import index_repair

        return await index_repair.check_indexes(self._runner)

    async def rebuild_index(
        self, *, on_conversation: Callable[[int], None] | None = None
    ) -> RebuildSummary:
        """Recreate every index entry from the conversations' metas, then
        delete the entries that are not current. ``on_conversation(n)``
        reports progress after each batch of ``n`` conversations."""
        from . import index_repair

        return await index_repair.rebuild_indexes(self._runner, on_conversation=on_conversation)

    async def check_search_index(self) -> SearchIndexCheck | None:
        """Compare the backend's search index (:mod:`makers_store.maintenance.search_index`)
        with the message blobs: ``.ok`` when every message is found as it is
        and nothing else; None when the backend has none (its searches read
        the messages). Read-only."""
        return await self._runner.blobs.check_search_index()

    async def rebuild_search_index(self) -> int | None:
        """Build the backend's search index again from the message blobs; how
        many messages it holds (None: the backend has none)."""
        return await self._runner.blobs.rebuild_search_index()

    async def iter_index_entries(self, *, user_id: str | None = None) -> AsyncIterator[IndexEntry]:
        """Every raw index entry (the recency index, then the per-user ones),
        or only ``user_id``'s, each judged against its conversation's meta."""
        from . import index_repair

        uid = validate.optional_user_id(user_id)
        async for entry in index_repair.iter_index_entries(self._runner, user_id=uid):
            yield entry

    # --- export, import, copy ----------------------------------------------

    async def export_jsonl(
        self,
        write: Callable[[str], object],
        *,
        conversation_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        on_conversation: Callable[[], None] | None = None,
    ) -> TransferCounts:
        """Write the store (or the conversations selected by id and/or user)
        as JSON lines through ``write``; ``on_conversation()`` runs after each
        conversation walked. Blobs outside conversations (framework data) are
        exported only when nothing is selected. The format:
        :mod:`makers_store.maintenance.exporting`."""
        from . import exporting as transfer

        return await transfer.export_jsonl(
            self._runner,
            write,
            conversation_ids=conversation_ids,
            user_id=user_id,
            on_conversation=on_conversation,
        )

    async def import_jsonl(
        self,
        source: Callable[[], Iterable[str | bytes]],
        *,
        progress: Callable[[int, int], None] | None = None,
        on_conversation: Callable[[int, int], None] | None = None,
    ) -> TransferCounts:
        """Read back what :meth:`export_jsonl` wrote: every line of
        ``source()`` is validated before anything is written, then each
        conversation of the file replaces the one with its id in one unit of
        work (idempotent; an interrupted import is finished by running it
        again). ``progress(line, lines)`` reports records read;
        ``on_conversation(done, conversations)`` runs after each conversation."""
        from . import importing as importer

        return await importer.import_jsonl(
            self._runner, source, progress=progress, on_conversation=on_conversation
        )

    async def count_units(self) -> int:
        """How many conversations and blobs outside them the store holds: the
        progress total of :meth:`copy_to`."""
        from . import copying

        return await copying.count_units(self._runner)

    async def copy_to(
        self,
        destination: ConversationStore,
        *,
        prune: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> CopyReport:
        """Copy every conversation and every blob outside them into
        ``destination`` (another store, on any backend). Each conversation
        there is replaced at once; conversations already equal are not
        written again, so a second run writes nothing. ``prune=True`` deletes
        what exists only in the destination. ``progress(n)`` runs after each
        conversation and page of blobs. Copy a store nobody is writing to. In
        blocking code both stores share one :class:`~makers_store.Portal`
        (the copy uses the destination from the source's event loop). The
        destination's writes run through its own runner: its clock, ids and
        retry policy hold there."""
        from . import copying

        target = destination.runner
        if target.blobs is self._runner.blobs:
            raise MemoryValidationError("destination is this store: copy_to needs another one")
        return await copying.copy_store(self._runner, target, prune=prune, progress=progress)

    # --- retention -------------------------------------------------------------

    async def prune_conversations(
        self,
        idle_for: timedelta,
        *,
        user_id: str | None = None,
        dry_run: bool = False,
        conversation_ids: Sequence[str] | None = None,
        on_conversation: Callable[[int], None] | None = None,
    ) -> PruneReport:
        """Delete every conversation (or ``user_id``'s) whose last write is
        older than ``idle_for`` on the store's clock, whole, as
        ``delete_conversation`` deletes it; ``dry_run`` only reports what
        would go. Last write: the last append, metadata update, message
        update or delete, state write or LangGraph checkpoint, and the
        conversation's Claude transcripts (:mod:`makers_store._core.activity`).
        A conversation written while the prune runs is kept whole: each is
        judged again in the unit that deletes it, and deleted only if nothing
        was written since (:mod:`makers_store.lifecycle.retention`).
        ``conversation_ids`` limits the prune to those (a plan shown before;
        each still judged at delete time). ``on_conversation(n)`` runs after
        each unit of work with the conversations it deleted."""
        from ..lifecycle import retention

        return await retention.prune_conversations(
            self._runner,
            idle_for,
            user_id=user_id,
            dry_run=dry_run,
            conversation_ids=conversation_ids,
            on_conversation=on_conversation,
        )

    async def prune_checkpoints(
        self, *, conversation_id: str | None = None, dry_run: bool = False
    ) -> CheckpointPruneReport:
        """Delete every LangGraph checkpoint (with its pending writes) but the
        latest of each namespace of each thread (or of ``conversation_id``'s
        thread) and the ancestors LangGraph's DeltaChannel rebuilds the
        latest's values from, and the Claude subagent transcripts whose main
        transcript is gone. ``dry_run`` only counts. Records are read with the
        default LangGraph serializer when LangGraph is installed (without
        it, each latest checkpoint keeps its whole parent chain)."""
        from ..lifecycle import retention

        inspect = None
        if self._store is not None:
            try:
                from .. import adapters

                inspect = adapters.make_langgraph_checkpointer(self._store).delta_links
            except MissingExtraError:
                inspect = None
        return await retention.prune_checkpoints(
            self._runner, inspect, conversation_id=conversation_id, dry_run=dry_run
        )

    # --- search --------------------------------------------------------------

    async def search_messages(
        self,
        text: str,
        *,
        conversation_ids: Sequence[str] | None = None,
        user_id: str | None = None,
        role: str | None = None,
        since: int | None = None,
        until: int | None = None,
        limit: int | None = None,
        on_conversation: Callable[[], None] | None = None,
    ) -> AsyncIterator[MessageHit]:
        """The messages whose text (a string content, the text parts of
        structured content) contains ``text``, ignoring case, newest first:
        in ``conversation_ids`` (else all, or ``user_id``'s), by ``role``,
        created from ``since`` to ``until`` (ms, included), at most ``limit``;
        each a :class:`~makers_store.maintenance.search.MessageHit` with a snippet.
        ``on_conversation()`` runs after each conversation searched. Memory
        stays bounded: see :mod:`makers_store.maintenance.search`."""
        from . import search

        async for hit in search.search_messages(
            self._public(),
            text,
            conversation_ids=conversation_ids,
            user_id=user_id,
            role=role,
            since=since,
            until=until,
            limit=limit,
            on_conversation=on_conversation,
        ):
            yield hit

    async def find_conversations(
        self,
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
        from . import search

        async for meta in search.find_conversations(
            self._public(), text, user_id=user_id, since=since, until=until, limit=limit
        ):
            yield meta

    def _public(self) -> ConversationStore:
        if self._store is None:
            raise MemoryValidationError("this needs the store: use store.admin")
        return self._store

    # --- the history doctor --------------------------------------------------

    async def check_history(
        self,
        conversation_id: str | None = None,
        *,
        on_conversation: Callable[[], None] | None = None,
    ) -> AsyncIterator[HistoryFinding]:
        """What breaks a model call or a UI in ``conversation_id`` (else in
        every conversation id owning data), each a
        :class:`~makers_store.lifecycle.history_rules.HistoryFinding` naming
        the conversation, the messages and the rule: tool calls without
        results and results without calls (messages and OpenAI session items),
        duplicated messages, messages the converters cannot turn into valid
        OpenAI or Anthropic input, adapter data without its conversation.
        Read-only; memory stays bounded (see
        :mod:`makers_store.maintenance.doctor`). ``on_conversation()`` runs after
        each conversation id checked."""
        from . import doctor

        async for finding in doctor.check_history(
            self._public(), conversation_id, on_conversation=on_conversation
        ):
            yield finding

    async def repair_history(
        self,
        conversation_id: str | None = None,
        *,
        on_conversation: Callable[[], None] | None = None,
    ) -> AsyncIterator[HistoryRepair]:
        """Check as :meth:`check_history` does and repair each finding that
        has one safe repair (``finding.repair``), re-checked at repair time:
        an orphan tool call gets a result saying it was interrupted (or, in the
        middle of the history, is set aside in the message's metadata), the
        later of two exact duplicates is deleted. One
        :class:`~makers_store.maintenance.doctor.HistoryRepair` per such
        finding; a second run finds nothing left to repair."""
        from . import doctor

        async for repair in doctor.repair_history(
            self._public(), conversation_id, on_conversation=on_conversation
        ):
            yield repair

    # --- space ---------------------------------------------------------------

    async def vacuum(self) -> VacuumReport:
        """Give back the space deletes leave (SQLite's free pages, PostgreSQL's
        dead rows), reporting the size before and after; S3 and memory have
        nothing to do and say so. Changes no data, and the store stays
        readable meanwhile (the rules: :mod:`makers_store._core.vacuum`)."""
        return await self._runner.blobs.vacuum()

    # --- snapshots, reset, seed (:mod:`makers_store.maintenance.snapshots`) ----------------

    async def save_snapshot(
        self, name: str, *, directory: str | PathLike[str] | None = None, replace: bool = False
    ) -> SnapshotInfo:
        """Save everything the store holds as the snapshot ``name`` (one file,
        ``NAME.db``, in ``directory``, by default beside a SQLite store's file
        in ``snapshots/``). SQLite: the store as of one commit, agents writing
        meanwhile. A snapshot of that name is replaced only with ``replace``;
        a save that fails leaves it as it was."""
        from . import snapshots

        source = self._store.location if self._store is not None else None
        shown = source.display_url if source is not None else type(self._runner.blobs).__name__
        return await snapshots.save(
            self._runner, name, source=shown, directory=directory, replace=replace
        )

    async def list_snapshots(
        self, *, directory: str | PathLike[str] | None = None
    ) -> AsyncIterator[SnapshotInfo]:
        """The snapshots in ``directory`` (else the default folder), newest first."""
        from . import snapshots

        async for info in snapshots.list_all(self._runner.blobs, directory):
            yield info

    def snapshot_folder(self, directory: str | PathLike[str] | None = None) -> Path:
        """The folder of the snapshots: ``directory``, else the default one."""
        from . import snapshots

        return snapshots.folder(self._runner.blobs, directory)

    async def snapshot_info(
        self, name: str, *, directory: str | PathLike[str] | None = None
    ) -> SnapshotInfo:
        """What the snapshot ``name`` holds (MemoryNotFoundError when there is none)."""
        from . import snapshots

        path = snapshots.snapshot_path(self._runner.blobs, name, directory)
        return await snapshots.read_info(path)

    async def restore_snapshot(
        self, name: str, *, directory: str | PathLike[str] | None = None
    ) -> SnapshotInfo:
        """Make the store hold exactly what the snapshot ``name`` holds
        (what is not in it is deleted). SQLite: in one transaction, other
        processes with the store open (``serve``) reading the restored store
        from their next unit on."""
        from . import snapshots

        return await snapshots.restore(self._runner, name, directory=directory)

    async def delete_snapshot(
        self, name: str, *, directory: str | PathLike[str] | None = None
    ) -> bool:
        """Delete the snapshot ``name``; False when there was none."""
        from . import snapshots

        return snapshots.delete(self._runner.blobs, name, directory)

    async def reset(
        self, *, to: str | None = None, directory: str | PathLike[str] | None = None
    ) -> SnapshotInfo | None:
        """Delete everything the store holds, or, with ``to``, restore the
        snapshot of that name (returned)."""
        from . import snapshots

        if to is not None:
            return await snapshots.restore(self._runner, to, directory=directory)
        await snapshots.reset(self._runner)
        return None

    async def seed(self, path: str | PathLike[str]) -> TransferCounts:
        """Load seed fixtures: the export file ``path``, or every ``*.jsonl``
        file of the folder ``path``, all validated before anything is
        written; each conversation replaces the one with its id (running it
        again changes nothing)."""
        from . import snapshots

        return await snapshots.seed(self._runner, path)

    # --- raw blobs -----------------------------------------------------------

    async def list_blobs(
        self, prefix: str = "", *, start_after: str | None = None, limit: int | None = None
    ) -> AsyncIterator[BlobInfo]:
        """The raw blobs under ``prefix`` in key order (key, size, etag,
        updated time), after the key ``start_after``, at most ``limit``:
        what ``makers-store blob ls`` shows. Listed in pages of 500 keys."""
        if not isinstance(prefix, str):
            raise MemoryValidationError(f"prefix must be a string, not {type(prefix).__name__}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise MemoryValidationError(f"limit must be an int or None, got {limit!r}")
        if limit is not None and limit < 1:
            raise MemoryValidationError(f"limit must be at least 1, got {limit}")
        shown = 0

        async def read(after: str | None) -> tuple[list[BlobInfo], str | None]:
            nonlocal shown
            size = BLOB_PAGE if limit is None else min(BLOB_PAGE, limit - shown)
            page = await self._runner.run(
                lambda: list_keys(prefix, start_after=after, limit=size), write=False
            )
            shown += len(page)
            if limit is not None and shown >= limit:
                return page, None
            return page, paging.after_full(page, size, lambda info: info.key)

        async for info in paging.items(read, start_after):
            yield info

    async def get_blob(self, key: str) -> Blob | None:
        """The raw blob under ``key`` (its value and info), or None: what
        ``makers-store blob get`` shows."""
        if not isinstance(key, str) or not key:
            raise MemoryValidationError(f"key must be a non-empty string, got {key!r}")
        return await self._runner.run(lambda: get(key), write=False)
