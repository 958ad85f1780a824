"""LangGraph long-term memory (``BaseStore``) over the makers-store Blob store.

``store.langgraph_store`` gives the plain store (no embedder, no default
TTL); build a configured one with ``MakersLangGraphStore(store, index=...,
ttl=...)``, the same keyword arguments LangGraph's PostgresStore takes.

Items belong to no conversation: they live under ``l/`` (see
:mod:`makers_store._core.keys`), one blob per item with its embeddings beside it
(see :mod:`.langgraph_store_records` for the record, filters and ranking).
A derived index beside them, kept up to date by every write
(:mod:`.langgraph_store_index`), makes ``list_namespaces`` one listing and a
search without a query a page per namespace; a store written before the
index existed is indexed on first use, and :meth:`rebuild_index` mends it
after blob-level copies (``makers-store copy`` into a store with items of
its own, ``import``). A batch runs as one unit of work: its reads see the
state before the batch, then its writes apply, the last write to a
(namespace, key) winning. Values must be strict JSON
(:func:`makers_store._core.codec.encode_json`).

This module is LangGraph's interface (the ``BaseStore`` methods, the sweeper,
where sync calls run) and the running of a batch; the parts it hands work to
are their own modules: the operations of a batch are checked before anything
runs by :mod:`.langgraph_store_ops`, the embedder of an ``index=``
configuration is :mod:`.langgraph_store_embedding`, and the reads and writes
are the I/O-free programs of :mod:`.langgraph_store_programs`.

Time is the store's injectable clock (milliseconds). Expired items are
invisible at once; reads with ``refresh_ttl`` extend the TTL of what they
return (a second, write unit, so plain reads stay read-only); ``sweep_ttl``
/ ``asweep_ttl`` delete expired items and ``start_ttl_sweeper`` runs that
periodically, called from async code as AsyncPostgresStore's (``await`` it
for the task) or from sync code as SqliteStore's (a future).

The synchronous methods (``batch`` and the BaseStore helpers over it,
``sweep_ttl``) run their coroutine on the store's home event loop (the one it
was built on or whose tasks last used its async methods) when that loop is
running in another thread, as the checkpointer does, so backends bound to a
loop keep working; otherwise on a private event-loop thread (a
:class:`~makers_store._core.portal.Portal` owned by this object; :meth:`close` /
:meth:`aclose` stop it). Called on the home loop itself they would block it
while it may hold what the call needs, so they raise
:class:`SyncCallInEventLoopError` instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import math
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.store.base import BaseStore, IndexConfig, Op, PutOp, Result, SearchOp, TTLConfig

from ..._core import paging
from ..._core.codec import encode_json
from ...errors import MemoryValidationError, StoreError, SyncCallInEventLoopError
from ..sync_bridge import SyncBridge
from . import store_index as derived_index
from . import store_programs as programs
from .store_embedding import ItemEmbedder
from .store_ops import check_op, dedupe_puts
from .store_records import check_filter
from .store_sweeper import follow, running_loop, stopped, waited

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ...api.conversation_store import ConversationStore

logger = logging.getLogger(__name__)

__all__ = ["MakersLangGraphStore", "SyncCallInEventLoopError"]

T = TypeVar("T")


class MakersLangGraphStore(BaseStore):
    """A LangGraph ``BaseStore`` (get/put/delete/search/list_namespaces,
    vector or term-ranked search, TTL) over a :class:`ContextStore`."""

    supports_ttl: bool = True

    def __init__(
        self,
        store: ConversationStore,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._runner = store.runner
        self.ttl_config = ttl
        self.index_config = index
        self.embeddings: Embeddings | None = None
        self._embedder: ItemEmbedder | None = None
        if index is not None:
            self._embedder = ItemEmbedder.from_index(index)
            self.embeddings = self._embedder.embeddings
        self._bridge = SyncBridge("MakersLangGraphStore", "aget, aput, asearch, abatch, ...")
        self._sweeper: asyncio.Task[None] | None = None
        #: None: not checked yet; "new": complete once a write records it
        self._index: str | None = None

    # --- BaseStore ---------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` and wait (see :meth:`_call` for where they run)."""
        return self._call(self._run_batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        self._bridge.remember_loop()
        return await self._run_batch(list(ops))

    # --- the index ---------------------------------------------------------

    def rebuild_index(self) -> None:
        """Rebuild the derived index from the items and remove what no item
        backs. Needed only after LangGraph items were copied or imported blob
        by blob into a store that already held some, or when a crash on
        object storage left copies behind; safe while others write."""
        self._call(self._rebuild_index())

    async def arebuild_index(self) -> None:
        """Async :meth:`rebuild_index`."""
        self._bridge.remember_loop()
        await self._rebuild_index()

    # --- TTL ---------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many were deleted."""
        return self._call(self._sweep())

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        self._bridge.remember_loop()
        return await self._sweep()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Future[asyncio.Task[None]] | concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's
        ``sweep_interval_minutes``, else 5) until :meth:`stop_ttl_sweeper`.

        One method for both of LangGraph's styles. On a running event loop
        (``AsyncPostgresStore``'s style) the sweeper starts there at once and
        ``await store.start_ttl_sweeper()`` gives its task (already running:
        the same one). From synchronous code (``SqliteStore``'s style) it starts
        where the sync methods run and returns a ``concurrent.futures.Future``
        that ends with the sweeper; cancelling it stops the sweeper. Neither
        returns a coroutine, so nothing is left un-awaited."""
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        interval = float(sweep_interval_minutes or configured or 5)
        if not math.isfinite(interval) or interval <= 0:
            raise MemoryValidationError("sweep_interval_minutes must be a positive number")
        if running_loop() is not None:
            self._bridge.remember_loop()
            started = asyncio.get_running_loop().create_future()
            started.set_result(self._start_sweeper(interval))
            return started
        task = self._call(self._astart_sweeper(interval))
        return follow(task)

    async def _astart_sweeper(self, interval: float) -> asyncio.Task[None]:
        return self._start_sweeper(interval)

    def _start_sweeper(self, interval: float) -> asyncio.Task[None]:
        """The sweeper task on the running loop (the one already running, if any)."""
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper

        async def sweep_forever() -> None:
            while True:
                await asyncio.sleep(interval * 60)
                try:
                    swept = await self._sweep()
                except StoreError:
                    logger.exception("LangGraph store TTL sweep failed; retrying next interval")
                else:
                    if swept:
                        logger.info("LangGraph store TTL sweep deleted %d items", swept)

        self._sweeper = asyncio.get_running_loop().create_task(sweep_forever())
        return self._sweeper

    def stop_ttl_sweeper(self, timeout: float | None = None) -> asyncio.Task[bool] | bool:
        """Stop the sweeper; True when it is stopped (or was not running).
        ``timeout`` (seconds) as in LangGraph's stores. On a running event loop
        the result is awaitable (``await store.stop_ttl_sweeper()``); from
        synchronous code it is the bool."""
        task, self._sweeper = self._sweeper, None
        running = running_loop()
        if task is None or task.done() or task.get_loop() is running:
            return True if running is None else running.create_task(stopped(task, timeout))
        home = task.get_loop()  # the sweeper runs on another thread's loop
        if not home.is_running():
            return task.done()
        stopping = asyncio.run_coroutine_threadsafe(stopped(task, None), home)
        if running is not None:
            return running.create_task(waited(asyncio.wrap_future(stopping), timeout))
        try:
            return stopping.result(timeout)
        except concurrent.futures.TimeoutError:
            return False

    def close(self) -> None:
        """Stop the private loop thread behind the synchronous methods (and
        cancel a sweeper). The async methods keep working; a later sync call
        starts the thread again."""
        task, self._sweeper = self._sweeper, None
        if task is not None and not task.done():
            task.get_loop().call_soon_threadsafe(task.cancel)
        self._bridge.stop()

    async def aclose(self) -> None:
        """:meth:`close` for async callers, waiting for the sweeper to stop."""
        task, self._sweeper = self._sweeper, None
        await stopped(task, None)
        self.close()

    # --- internals ---------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._bridge.call(coro)

    async def _ensure_index(self) -> None:
        """Check (once per instance) that the store's index is complete;
        build it for items written before it existed."""
        complete, has_items = await self._runner.run(derived_index.state, write=False)
        if complete:
            self._index = "complete"
        elif not has_items:
            self._index = "new"
        else:
            await self._rebuild_index()

    async def _rebuild_index(self) -> None:
        caps = self._runner.blobs.capabilities

        async def build(start_after: str | None) -> str | None:
            page = functools.partial(derived_index.build_page, start_after)
            return await self._runner.run(page, write=True)

        async def prune(start_after: str | None) -> str | None:
            page = functools.partial(derived_index.prune_page, start_after, caps)
            return await self._runner.run(page, write=True)

        await paging.run_pages(build)
        await paging.run_pages(prune)
        await self._runner.run(derived_index.mark_complete, write=True)
        self._index = "complete"

    async def _sweep(self) -> int:
        caps = self._runner.blobs.capabilities

        async def sweep(start_after: str | None) -> tuple[int, str | None]:
            now = self._runner.clock()
            page = functools.partial(programs.sweep_page, start_after, now, caps)
            return await self._runner.run(page, write=True)

        total = 0
        async for deleted in paging.pages(sweep):
            total += deleted
        return total

    async def _run_batch(self, ops: list[Op]) -> list[Result]:
        puts = dedupe_puts([check_op(op) for op in ops])
        filters = {
            position: check_filter(op.filter)
            for position, op in enumerate(ops)
            if isinstance(op, SearchOp) and op.filter
        }
        plans = [self._plan_put(op) for op in puts]
        if self._embedder is not None:
            await self._embedder.embed_puts(puts, plans)
        if self._index is None:
            await self._ensure_index()
        caps = self._runner.blobs.capabilities
        plan = programs.BatchPlan(
            ops=ops,
            puts=plans,
            now=self._runner.clock(),
            filters=filters,
            term_ranking=self._embedder is None,
            caps=caps,
            mark_complete=self._index == "new",
        )
        if self._embedder is not None:
            plan.query_vectors = await self._embedder.embed_queries(ops)
        results, stale = await self._runner.run(lambda: programs.batch(plan), write=bool(plans))
        if plans and plan.mark_complete:
            self._index = "complete"
        if stale:
            now = self._runner.clock()
            await self._runner.run(lambda: programs.refresh(stale, now, caps), write=True)
        return results

    def _plan_put(self, op: PutOp) -> programs.PutPlan:
        value_json = None if op.value is None else encode_json(dict(op.value), argument="value")
        return programs.PutPlan(op.namespace, op.key, value_json, "{}", op.ttl)
