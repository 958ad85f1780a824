"""A LangGraph checkpointer (``BaseCheckpointSaver``) over the store.

``store.langgraph_checkpointer`` saves a graph's checkpoints where the rest of
the conversation lives: the LangGraph ``thread_id`` is the conversation id,
and everything sits under ``c/{thread}/x/langgraph/``, so
``delete_conversation`` removes checkpoints and writes with the messages.

Key layout (built in :mod:`makers_store._core.keys`, "LangGraph checkpoints"), with
``{ns}`` the escaped checkpoint namespace::

    c/{thread}/x/langgraph/n{ns}/c/{inverted id}       checkpoint + metadata
    c/{thread}/x/langgraph/n{ns}/w/{id}/{task}/{idx}   one pending write
    c/{thread}/x/langgraph/r/{run}/n{ns}/{inverted id}  run marker (empty)

Checkpoint ids are time-ordered UUIDv6 strings; the inverted id sorts newest
first, so every common read is a forward range read, the one direction
object storage lists efficiently: ``get_tuple`` without an id is one
``Scan(limit=1)`` plus one scan of that checkpoint's writes; with an id, one
``Get`` plus the writes; ``list`` is a forward scan starting after ``before``,
paged. ``put`` is one write (two when the metadata names a ``run_id``: the
run marker lets ``delete_for_runs`` find a run's checkpoints without reading
them). Like ``AsyncSqliteSaver``, a checkpoint is stored whole (its channel
values included), serialized with ``self.serde.dumps_typed``; bytes are
stored as bytes (see :mod:`.langgraph_checkpoint_programs` for the record
format). Calls that name no thread (``list(None)``, ``delete_for_runs``)
visit every conversation of the store, one listing each. The saver checks
arguments and turns values into records and back through
:mod:`.langgraph_checkpoint_records`, so this module is LangGraph's interface
only: which programs each method runs, and its sync twin.

The async methods run programs through the store; the sync twins (used by
``graph.invoke``) run the same coroutines either on the event loop the saver
was created in, from another thread (as ``AsyncSqliteSaver`` does), or, when
it was created outside any loop, on a private portal thread that
:meth:`close` stops. A sync call from inside the saver's own event loop
would deadlock, so it raises :class:`SyncCallInEventLoopError` instead.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from makers_store._core import adapter_keys
from makers_store._core.activity import TOUCH_RESOLUTION_MS
from makers_store.errors import MemoryValidationError

from ..._core import checkpoint_programs as programs
from ..._core import paging
from ..._core.checkpoint_programs import StoredCheckpoint
from ..sync_bridge import SyncBridge
from . import checkpoint_records as records

if TYPE_CHECKING:
    from makers_store.api.conversation_store import ConversationStore

T = TypeVar("T")
_LIST_PAGE = 100
_STRATEGIES = ("keep_latest", "delete")
#: Threads whose last stamp a saver remembers (then it forgets them all).
_STAMPS_KEPT = 10_000


class MakersCheckpointSaver(BaseCheckpointSaver[int]):
    """LangGraph checkpoints in a makers-store ``ContextStore``."""

    def __init__(
        self, store: ConversationStore, *, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        self._runner = store.runner
        #: thread -> the stamp its meta held when this saver last read it (or when
        #: it found no meta): the next puts skip the stamp for a resolution
        self._stamped: dict[str, int] = {}
        self._bridge = SyncBridge(
            "checkpointer", "await graph.ainvoke(...), await checkpointer.aget_tuple(...)"
        )

    # --- sync bridge -------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._bridge.call(coro)

    def close(self) -> None:
        """Stop the private portal thread, if sync calls ever started it. Idempotent."""
        self._bridge.stop()

    async def aclose(self) -> None:
        """:meth:`close`, for async callers (``ContextStore.close`` uses it)."""
        self.close()

    # --- reading -------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = records.configurable(config, "config")
        thread_id = records.thread(conf.get("thread_id"), "thread_id")
        ns = str(conf.get("checkpoint_ns") or "")
        checkpoint_id = conf.get("checkpoint_id")
        if checkpoint_id is not None and not (
            isinstance(checkpoint_id, str) and adapter_keys.is_checkpoint_id(checkpoint_id)
        ):
            return None  # no stored checkpoint can carry such an id
        stepwise = not self._runner.blobs.capabilities.atomic
        stored = await self._runner.run(
            lambda: programs.load_checkpoint(thread_id, ns, checkpoint_id, stepwise), write=False
        )
        return None if stored is None else records.checkpoint_tuple(self.serde, thread_id, stored)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        before_id = None
        if before is not None:
            before_id = records.configurable(before, "before").get("checkpoint_id")
            if before_id is not None:
                before_id = records.checkpoint_id(
                    before_id, 'before["configurable"]["checkpoint_id"]'
                )
        conf = None if config is None else records.configurable(config, "config")
        if conf is not None and conf.get("checkpoint_id") is not None:
            found = await self.aget_tuple(config)  # type: ignore[arg-type]
            if (
                found is not None
                and (before_id is None or found.checkpoint["id"] < before_id)
                and self._matches(found, filter)
            ):
                yield found
            return
        if conf is not None and conf.get("checkpoint_ns") is not None:
            thread_id = records.thread(conf.get("thread_id"), "thread_id")
            ns = str(conf["checkpoint_ns"])
            async for item in self._list_namespace(thread_id, ns, filter, before_id, limit):
                yield item
            return
        # several namespaces (or threads): gather, then order newest first
        if conf is None:
            thread_ids = await self._runner.run(programs.threads, write=False)
        else:
            thread_ids = [records.thread(conf.get("thread_id"), "thread_id")]
        found_all: list[CheckpointTuple] = []
        for thread_id in thread_ids:
            namespaces = functools.partial(programs.namespaces, thread_id)
            for ns in await self._runner.run(namespaces, write=False):
                async for item in self._list_namespace(thread_id, ns, filter, before_id, limit):
                    found_all.append(item)
        found_all.sort(key=lambda item: item.checkpoint["id"], reverse=True)
        for item in found_all[:limit]:
            yield item

    async def _list_namespace(
        self,
        thread_id: str,
        ns: str,
        filter: dict[str, Any] | None,
        before_id: str | None,
        limit: int | None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The checkpoints of one namespace older than ``before_id``, newest
        first, that ``filter`` admits, at most ``limit``: a page per unit of
        work through the one page walker; a record is deserialized only when
        the walk reaches it, and without a filter no page holds more than
        are still wanted."""
        remaining = limit
        stepwise = not self._runner.blobs.capabilities.atomic

        async def read(cursor: str | None) -> tuple[list[StoredCheckpoint], str | None]:
            size = _LIST_PAGE if filter or remaining is None else min(remaining, _LIST_PAGE)
            listed = functools.partial(
                programs.list_checkpoints, thread_id, ns, cursor, size, stepwise
            )
            stored = await self._runner.run(listed, write=False)
            return stored, paging.after_full(stored, size, records.stored_checkpoint_id)

        async with contextlib.aclosing(paging.items(read, before_id)) as walk:
            async for entry in walk:
                item = records.checkpoint_tuple(self.serde, thread_id, entry)
                if self._matches(item, filter):
                    yield item
                    if remaining is not None:
                        remaining -= 1
                        if remaining == 0:
                            return

    @staticmethod
    def _matches(item: CheckpointTuple, filter: dict[str, Any] | None) -> bool:
        if not filter:
            return True
        metadata: dict[str, Any] = dict(item.metadata)
        return all(key in metadata and metadata[key] == value for key, value in filter.items())

    # --- writing -------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = records.configurable(config, "config")
        thread_id = records.thread(conf.get("thread_id"), "thread_id")
        ns = records.text(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        checkpoint_id = records.checkpoint_id(checkpoint.get("id"), 'checkpoint["id"]')
        data, run_id = records.checkpoint_record(
            self.serde, config, checkpoint, metadata, checkpoint_id, conf.get("checkpoint_id")
        )
        now = self._runner.clock()
        # A thread whose meta this saver found stamped less than a resolution
        # ago, or found missing, needs no stamp (nor the meta read, which on
        # PostgreSQL turns the put's one round trip into two): meta's stamp
        # is at least that young, which is all a prune's judgment needs, and
        # a thread without meta is in no prune's reach (lifecycle.activity).
        last = self._stamped.get(thread_id)
        stamp = None if last is not None and 0 <= now - last < TOUCH_RESOLUTION_MS else now
        stamped = await self._runner.run(
            lambda: programs.put_checkpoint(thread_id, ns, checkpoint_id, data, run_id, stamp),
            write=True,
        )
        if stamped is not None:
            if len(self._stamped) >= _STAMPS_KEPT:
                self._stamped.clear()
            self._stamped[thread_id] = stamped
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        conf = records.configurable(config, "config")
        thread_id = records.thread(conf.get("thread_id"), "thread_id")
        ns = records.text(conf.get("checkpoint_ns") or "", "checkpoint_ns")
        checkpoint_id = records.checkpoint_id(
            conf.get("checkpoint_id"), 'config["configurable"]["checkpoint_id"]'
        )
        task_id = records.text(task_id, "task_id")
        task_path = records.text(task_path, "task_path")
        stored = records.write_records(
            self.serde, thread_id, ns, checkpoint_id, writes, task_id, task_path
        )
        if stored:
            await self._runner.run(lambda: programs.put_writes(stored), write=True)

    # --- whole threads -------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        thread = records.thread(thread_id, "thread_id")
        await self._runner.run(lambda: programs.delete_thread(thread), write=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = records.thread(source_thread_id, "source_thread_id")
        target = records.thread(target_thread_id, "target_thread_id")
        if source != target:
            await self._runner.run(lambda: programs.copy_thread(source, target), write=True)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = [records.thread(run_id, "run_ids[]") for run_id in run_ids]
        if not runs:
            return
        thread_ids = await self._runner.run(programs.threads, write=False)
        await self._runner.run(lambda: programs.delete_runs(thread_ids, runs), write=True)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in _STRATEGIES:
            raise MemoryValidationError(
                f"strategy must be one of {', '.join(_STRATEGIES)}; got {strategy!r}"
            )
        threads = [records.thread(thread_id, "thread_ids[]") for thread_id in thread_ids]
        for thread in threads:
            if strategy == "delete":
                await self._runner.run(
                    functools.partial(programs.delete_thread, thread), write=True
                )
            else:  # the latest of each namespace and what its DeltaChannels need
                inspect = self.delta_links
                await self._runner.run(
                    functools.partial(programs.keep_latest, thread, inspect), write=True
                )

    def delta_links(self, data: bytes) -> programs.DeltaLinks:
        """What ``keep_latest`` needs to know of a checkpoint record, read
        with this saver's serializer (``store.admin.prune_checkpoints`` uses it)."""
        return records.delta_links(self.serde, data)

    # --- sync twins ------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._call(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            listing = self.alist(config, filter=filter, before=before, limit=limit)
            return [item async for item in listing]

        return iter(self._call(collect()))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._call(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._call(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> Any:
        """Delete the thread's checkpoints and writes. Called from a thread with
        no event loop it blocks until done (returns None). Called on a running
        loop, where blocking would deadlock and the platform's docs write
        ``await checkpointer.delete_thread(cid)``, it schedules
        :meth:`adelete_thread` and returns the ``asyncio.Task``: awaiting it
        waits for the deletion, which runs even if nobody awaits it. (``Any``,
        not ``Task | None``, so that both call styles type-check for callers.)"""
        import asyncio  # only this method needs it (the rest goes through SyncBridge)

        thread = records.thread(thread_id, "thread_id")  # a bad id raises here, not in the task
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._call(self.adelete_thread(thread))
            return None
        task = loop.create_task(self.adelete_thread(thread))
        # The loop keeps only weak references to tasks: hold this one until it
        # is done, so an un-awaited deletion is not collected half-way.
        pending: set[asyncio.Task[None]] = self.__dict__.setdefault("_deletions", set())
        pending.add(task)
        task.add_done_callback(pending.discard)
        return task

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._call(self.acopy_thread(source_thread_id, target_thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._call(self.adelete_for_runs(run_ids))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._call(self.aprune(thread_ids, strategy=strategy))
