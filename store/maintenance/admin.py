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

Most methods only forward to a function of the maintenance room: those are
generated (the last section of :class:`StoreAdmin`, by ``python -m
devtools.sync_codegen`` from its ``ADMIN_FORWARDS``) with that function's
signature and docstring, so each is written once, in its module. The methods
written here compose more than one function or ask the backend itself.

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

from .._core.runner import UnitRunner
from ..blob_ops import Blob, BlobInfo
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


class StoreAdmin:
    """Maintenance over the whole store a :class:`~makers_store.ContextStore`
    opens (``store.admin``): the same on every view bound from it."""

    def __init__(self, runner: UnitRunner, store: ConversationStore | None = None) -> None:
        self._runner = runner
        self._store = store  # the public API the searches read through

    def _public(self) -> ConversationStore:
        if self._store is None:
            raise MemoryValidationError("this needs the store: use store.admin")
        return self._store

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

    async def vacuum(self) -> VacuumReport:
        """Give back the space deletes leave (SQLite's free pages, PostgreSQL's
        dead rows), reporting the size before and after; S3 and memory have
        nothing to do and say so. Changes no data, and the store stays
        readable meanwhile (the rules: :mod:`makers_store._core.vacuum`)."""
        return await self._runner.blobs.vacuum()

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

    # --- GENERATED by python -m devtools.sync_codegen; do not edit below

    async def counts(self) -> StoreCounts:
        """Runs :func:`makers_store.maintenance.inventory.store_counts`
        on this store."""
        from . import inventory

        return await inventory.store_counts(self._runner)

    async def count_conversations(self) -> int:
        """Runs :func:`makers_store.maintenance.inventory.count_conversations`
        on this store."""
        from . import inventory

        return await inventory.count_conversations(self._runner)

    async def iter_user_ids(self) -> AsyncIterator[str]:
        """Runs :func:`makers_store.maintenance.inventory.iter_user_ids`
        on this store."""
        from . import inventory

        async for item in inventory.iter_user_ids(self._runner):
            yield item

    async def conversation_users(self, conversation_id: str) -> list[str] | None:
        """Runs :func:`makers_store.maintenance.inventory.conversation_users`
        on this store."""
        from . import inventory

        return await inventory.conversation_users(self._runner, conversation_id)

    async def langgraph_checkpoints(self, conversation_id: str) -> list[CheckpointName]:
        """Runs :func:`makers_store.maintenance.inventory.checkpoint_names`
        on this store."""
        from . import inventory

        return await inventory.checkpoint_names(self._runner, conversation_id)

    async def iter_state_only_conversations(self) -> AsyncIterator[StateOnlyConversation]:
        """Runs :func:`makers_store.maintenance.inventory.iter_state_only`
        on this store."""
        from . import inventory

        async for item in inventory.iter_state_only(self._runner):
            yield item

    async def check_index(self) -> IndexCheck:
        """Runs :func:`makers_store.maintenance.index_repair.check_indexes`
        on this store."""
        from . import index_repair

        return await index_repair.check_indexes(self._runner)

    async def rebuild_index(self, *, on_conversation: Callable[[int], None] | None=None) -> RebuildSummary:  # noqa: E501
        """Runs :func:`makers_store.maintenance.index_repair.rebuild_indexes`
        on this store."""
        from . import index_repair

        return await index_repair.rebuild_indexes(self._runner, on_conversation=on_conversation)

    async def iter_index_entries(self, *, user_id: str | None=None) -> AsyncIterator[IndexEntry]:
        """Runs :func:`makers_store.maintenance.index_repair.iter_index_entries`
        on this store."""
        from . import index_repair

        async for item in index_repair.iter_index_entries(self._runner, user_id=user_id):
            yield item

    async def export_jsonl(self, write: Callable[[str], object], *, conversation_ids: Sequence[str] | None=None, user_id: str | None=None, on_conversation: Callable[[], None] | None=None) -> TransferCounts:  # noqa: E501
        """Runs :func:`makers_store.maintenance.exporting.export_jsonl`
        on this store."""
        from . import exporting

        return await exporting.export_jsonl(self._runner, write, conversation_ids=conversation_ids, user_id=user_id, on_conversation=on_conversation)  # noqa: E501

    async def import_jsonl(self, source: Callable[[], Iterable[str | bytes]], *, progress: Callable[[int, int], None] | None=None, on_conversation: Callable[[int, int], None] | None=None) -> TransferCounts:  # noqa: E501
        """Runs :func:`makers_store.maintenance.importing.import_jsonl`
        on this store."""
        from . import importing

        return await importing.import_jsonl(self._runner, source, progress=progress, on_conversation=on_conversation)  # noqa: E501

    async def count_units(self) -> int:
        """Runs :func:`makers_store.maintenance.copying.count_units`
        on this store."""
        from . import copying

        return await copying.count_units(self._runner)

    async def copy_to(self, destination: ConversationStore, *, prune: bool=False, progress: Callable[[int], None] | None=None) -> CopyReport:  # noqa: E501
        """Runs :func:`makers_store.maintenance.copying.copy_to`
        on this store."""
        from . import copying

        return await copying.copy_to(self._runner, destination, prune=prune, progress=progress)

    async def prune_conversations(self, idle_for: timedelta, *, user_id: str | None=None, dry_run: bool=False, conversation_ids: Sequence[str] | None=None, on_conversation: Callable[[int], None] | None=None) -> PruneReport:  # noqa: E501
        """Runs :func:`makers_store.lifecycle.retention.prune_conversations`
        on this store."""
        from ..lifecycle import retention

        return await retention.prune_conversations(self._runner, idle_for, user_id=user_id, dry_run=dry_run, conversation_ids=conversation_ids, on_conversation=on_conversation)  # noqa: E501

    async def search_messages(self, text: str, *, conversation_ids: Sequence[str] | None=None, user_id: str | None=None, role: str | None=None, since: int | None=None, until: int | None=None, limit: int | None=None, on_conversation: Callable[[], None] | None=None) -> AsyncIterator[MessageHit]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.search.search_messages`
        on this store."""
        from . import search

        async for item in search.search_messages(self._public(), text, conversation_ids=conversation_ids, user_id=user_id, role=role, since=since, until=until, limit=limit, on_conversation=on_conversation):  # noqa: E501
            yield item

    async def find_conversations(self, text: str, *, user_id: str | None=None, since: int | None=None, until: int | None=None, limit: int | None=None) -> AsyncIterator[ConversationMeta]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.search.find_conversations`
        on this store."""
        from . import search

        async for item in search.find_conversations(self._public(), text, user_id=user_id, since=since, until=until, limit=limit):  # noqa: E501
            yield item

    async def check_history(self, conversation_id: str | None=None, *, on_conversation: Callable[[], None] | None=None) -> AsyncIterator[HistoryFinding]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.doctor.check_history`
        on this store."""
        from . import doctor

        async for item in doctor.check_history(self._public(), conversation_id, on_conversation=on_conversation):  # noqa: E501
            yield item

    async def repair_history(self, conversation_id: str | None=None, *, on_conversation: Callable[[], None] | None=None) -> AsyncIterator[HistoryRepair]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.doctor.repair_history`
        on this store."""
        from . import doctor

        async for item in doctor.repair_history(self._public(), conversation_id, on_conversation=on_conversation):  # noqa: E501
            yield item

    async def list_snapshots(self, *, directory: str | PathLike[str] | None=None) -> AsyncIterator[SnapshotInfo]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.snapshots.list_all`
        on this store."""
        from . import snapshots

        async for item in snapshots.list_all(self._runner.blobs, directory=directory):
            yield item

    def snapshot_folder(self, directory: str | PathLike[str] | None=None) -> Path:
        """Runs :func:`makers_store.maintenance.snapshots.folder`
        on this store."""
        from . import snapshots

        return snapshots.folder(self._runner.blobs, directory)

    async def snapshot_info(self, name: str, *, directory: str | PathLike[str] | None=None) -> SnapshotInfo:  # noqa: E501
        """Runs :func:`makers_store.maintenance.snapshots.info`
        on this store."""
        from . import snapshots

        return await snapshots.info(self._runner.blobs, name, directory=directory)

    async def restore_snapshot(self, name: str, *, directory: str | PathLike[str] | None=None) -> SnapshotInfo:  # noqa: E501
        """Runs :func:`makers_store.maintenance.snapshots.restore`
        on this store."""
        from . import snapshots

        return await snapshots.restore(self._runner, name, directory=directory)

    async def delete_snapshot(self, name: str, *, directory: str | PathLike[str] | None=None) -> bool:  # noqa: E501
        """Runs :func:`makers_store.maintenance.snapshots.delete`
        on this store."""
        from . import snapshots

        return await snapshots.delete(self._runner.blobs, name, directory=directory)

    async def reset(self, *, to: str | None=None, directory: str | PathLike[str] | None=None) -> SnapshotInfo | None:  # noqa: E501
        """Runs :func:`makers_store.maintenance.snapshots.reset`
        on this store."""
        from . import snapshots

        return await snapshots.reset(self._runner, to=to, directory=directory)

    async def seed(self, path: str | PathLike[str]) -> TransferCounts:
        """Runs :func:`makers_store.maintenance.snapshots.seed`
        on this store."""
        from . import snapshots

        return await snapshots.seed(self._runner, path)

    async def list_blobs(self, prefix: str='', *, start_after: str | None=None, limit: int | None=None) -> AsyncIterator[BlobInfo]:  # noqa: E501
        """Runs :func:`makers_store.maintenance.inventory.list_blobs`
        on this store."""
        from . import inventory

        async for item in inventory.list_blobs(self._runner, prefix, start_after=start_after, limit=limit):  # noqa: E501
            yield item

    async def get_blob(self, key: str) -> Blob | None:
        """Runs :func:`makers_store.maintenance.inventory.get_blob`
        on this store."""
        from . import inventory

        return await inventory.get_blob(self._runner, key)
