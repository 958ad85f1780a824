"""LangGraph.js's checkpointer and store as store RPC handlers.

``langgraph.checkpointer.<method>`` runs the Python ``MakersCheckpointSaver``
on typed bytes the Node serde made (see :mod:`.checkpoints`);
``langgraph.store.batch`` runs ``store.langgraph_store.abatch`` on the
operations of LangGraph.js's ``BaseStore.batch``, translated one to one
(``namespacePrefix`` -> ``namespace_prefix``; dates as ISO 8601 strings).
"""

from __future__ import annotations

from typing import Any

from makers_store import ContextStore
from makers_store.errors import MemoryValidationError

from . import checkpoints as relay
from .values import Handler, keyword_arguments, required

_CONFIG_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")


def _config(value: Any, argument: str) -> dict[str, Any] | None:
    """A JS ``RunnableConfig`` reduced to what a checkpointer reads."""
    if value is None:
        return None
    configurable = value.get("configurable") if isinstance(value, dict) else None
    if not isinstance(configurable, dict):
        raise MemoryValidationError(f'{argument}["configurable"] must be an object')
    return {"configurable": {k: configurable[k] for k in _CONFIG_KEYS if k in configurable}}


class _Checkpoints:
    """The handlers, over one saver made on first use (it needs LangGraph)."""

    def __init__(self, store: ContextStore) -> None:
        self._store = store
        self._saver: Any = None

    @property
    def saver(self) -> Any:
        if self._saver is None:
            self._saver = relay.make_saver(self._store)
        return self._saver

    def _tuple(self, found: Any) -> dict[str, Any] | None:
        if found is None:
            return None
        python = self.saver.serde._python
        return {
            "config": found.config,
            "checkpoint": relay.for_node(found.checkpoint, python),
            "metadata": relay.for_node(found.metadata, python),
            "parentConfig": found.parent_config,
            "pendingWrites": [
                [task, channel, relay.for_node(value, python)]
                for task, channel, value in found.pending_writes or ()
            ],
        }

    async def get_tuple(self, params: dict[str, Any]) -> Any:
        kw = keyword_arguments("langgraph.checkpointer.getTuple", params, ("config",))
        config = _config(required(kw, "config"), "config")
        return self._tuple(await self.saver.aget_tuple(config))

    async def list(self, params: dict[str, Any]) -> Any:
        accepted = ("config", "filter", "before", "limit")
        kw = keyword_arguments("langgraph.checkpointer.list", params, accepted)
        config = _config(kw.get("config"), "config")
        limit = kw.get("limit")
        every_thread = config is not None and config["configurable"].get("thread_id") is None
        # LangGraph.js's savers read a config without thread_id as every thread,
        # still narrowed to checkpoint_ns when it names one
        ns = config["configurable"].get("checkpoint_ns") if every_thread and config else None
        listing = self.saver.alist(
            None if every_thread else config,
            filter=kw.get("filter"),
            before=_config(kw.get("before"), "before"),
            limit=None if ns is not None else limit,
        )
        found = [
            self._tuple(item)
            async for item in listing
            if ns is None or item.config["configurable"]["checkpoint_ns"] == ns
        ]
        return found if limit is None or ns is None else found[:limit]

    async def put(self, params: dict[str, Any]) -> Any:
        accepted = ("config", "checkpoint", "metadata", "newVersions")
        kw = keyword_arguments("langgraph.checkpointer.put", params, accepted)
        checkpoint = relay.relayed(required(kw, "checkpoint"), "checkpoint")
        metadata = kw.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise MemoryValidationError("metadata must be an object")
        config = _config(required(kw, "config"), "config")
        return await self.saver.aput(config, checkpoint, metadata, kw.get("new_versions") or {})

    async def put_writes(self, params: dict[str, Any]) -> None:
        accepted = ("config", "writes", "taskId", "taskPath")
        kw = keyword_arguments("langgraph.checkpointer.putWrites", params, accepted)
        writes = required(kw, "writes")
        if not isinstance(writes, list) or not all(
            isinstance(w, list) and len(w) == 2 for w in writes
        ):
            raise MemoryValidationError("writes must be a list of [channel, value] pairs")
        pairs = [
            (channel, relay.relayed(value, f"writes[{i}] value", decode=False))
            for i, (channel, value) in enumerate(writes)
        ]
        config = _config(required(kw, "config"), "config")
        task_id = required(kw, "task_id")
        await self.saver.aput_writes(config, pairs, task_id, kw.get("task_path") or "")

    async def delete_thread(self, params: dict[str, Any]) -> None:
        kw = keyword_arguments("langgraph.checkpointer.deleteThread", params, ("threadId",))
        await self.saver.adelete_thread(required(kw, "thread_id"))

    async def copy_thread(self, params: dict[str, Any]) -> None:
        accepted = ("sourceThreadId", "targetThreadId")
        kw = keyword_arguments("langgraph.checkpointer.copyThread", params, accepted)
        await self.saver.acopy_thread(
            required(kw, "source_thread_id"), required(kw, "target_thread_id")
        )

    async def delete_for_runs(self, params: dict[str, Any]) -> None:
        kw = keyword_arguments("langgraph.checkpointer.deleteForRuns", params, ("runIds",))
        await self.saver.adelete_for_runs(required(kw, "run_ids"))

    async def prune(self, params: dict[str, Any]) -> None:
        kw = keyword_arguments("langgraph.checkpointer.prune", params, ("threadIds", "strategy"))
        strategy = kw.get("strategy") or "keep_latest"
        await self.saver.aprune(required(kw, "thread_ids"), strategy=strategy)


def _op(raw: Any, index: int) -> Any:
    """One LangGraph.js store operation as the Python op of the same meaning."""
    from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

    if not isinstance(raw, dict):
        raise MemoryValidationError(f"ops[{index}] must be an object")
    kind = raw.get("kind")
    # (the Python store checks namespaces, keys and values, naming them)
    namespace = tuple(raw.get("namespace") or ())
    key: Any = raw.get("key")
    if kind == "get":
        return GetOp(namespace, key)
    if kind == "put":
        return PutOp(namespace, key, raw.get("value"), raw.get("index"))
    if kind == "search":
        return SearchOp(
            tuple(raw.get("namespacePrefix") or ()),
            filter=raw.get("filter"),
            limit=raw.get("limit", 10),
            offset=raw.get("offset", 0),
            query=raw.get("query"),
        )
    if kind == "listNamespaces":
        conditions = tuple(
            MatchCondition(match_type=c.get("matchType"), path=tuple(c.get("path") or ()))
            for c in raw.get("matchConditions") or ()
        )
        return ListNamespacesOp(
            match_conditions=conditions or None,
            max_depth=raw.get("maxDepth"),
            limit=raw.get("limit", 100),
            offset=raw.get("offset", 0),
        )
    raise MemoryValidationError(f"ops[{index}].kind must be get, put, search or listNamespaces")


def _result(value: Any) -> Any:
    """A Python store result in LangGraph.js's shape."""
    if isinstance(value, list):
        return [_result(item) for item in value]
    if isinstance(value, tuple):  # a namespace from list_namespaces
        return list(value)
    if value is None:
        return None
    out = {
        "namespace": list(value.namespace),
        "key": value.key,
        "value": value.value,
        "createdAt": value.created_at.isoformat(),
        "updatedAt": value.updated_at.isoformat(),
    }
    score = getattr(value, "score", None)
    if score is not None:
        out["score"] = score
    return out


def handlers(store: ContextStore) -> dict[str, Handler]:
    """``langgraph.checkpointer.*`` and ``langgraph.store.batch``."""
    checkpoints = _Checkpoints(store)

    async def batch(params: dict[str, Any]) -> Any:
        kw = keyword_arguments("langgraph.store.batch", params, ("ops",))
        ops = required(kw, "ops")
        if not isinstance(ops, list):
            raise MemoryValidationError("ops must be a list of store operations")
        results = await store.langgraph_store.abatch([_op(op, i) for i, op in enumerate(ops)])
        return [_result(item) for item in results]

    prefix = "langgraph.checkpointer."
    return {
        prefix + "getTuple": checkpoints.get_tuple,
        prefix + "list": checkpoints.list,
        prefix + "put": checkpoints.put,
        prefix + "putWrites": checkpoints.put_writes,
        prefix + "deleteThread": checkpoints.delete_thread,
        prefix + "copyThread": checkpoints.copy_thread,
        prefix + "deleteForRuns": checkpoints.delete_for_runs,
        prefix + "prune": checkpoints.prune,
        "langgraph.store.batch": batch,
    }
