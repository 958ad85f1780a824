"""What the LangGraph checkpointer stores, and what it hands back: LangGraph values <-> records.

The saver (:mod:`.langgraph_checkpoints`) is LangGraph's interface: the
``BaseCheckpointSaver`` methods, async and sync, each running programs of
:mod:`.langgraph_checkpoint_programs`. This module is the translation on
either side of those programs, apart from the saver because it is pure
(no store, no event loop) and is where a record's contents are decided:

- the arguments LangGraph passes (``config["configurable"]``, thread, run and
  checkpoint ids, names that go into keys) are checked here, so a bad one
  raises :class:`MemoryValidationError` naming it before anything is read or
  written;
- a checkpoint and its metadata become one record, and each pending write
  one :class:`WriteRecord`, serialized with the saver's ``serde``
  (``dumps_typed``) in the record format of
  :func:`~.langgraph_checkpoint_programs.pack`;
- a :class:`StoredCheckpoint` read back becomes a ``CheckpointTuple`` with its
  pending writes in LangGraph's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from makers_store._core import adapter_keys, validate
from makers_store.errors import MemoryValidationError

from ..._core.checkpoint_programs import DeltaLinks, StoredCheckpoint, WriteRecord, pack, unpack

# --- arguments ---------------------------------------------------------------


def configurable(config: RunnableConfig | None, argument: str) -> dict[str, Any]:
    """``config["configurable"]``, which must be a dict."""
    found = (config or {}).get("configurable")
    if not isinstance(found, dict):
        raise MemoryValidationError(f'{argument}["configurable"] must be a dict')
    return found


def thread(value: Any, argument: str) -> str:
    """A thread (or run) id: required, and a valid conversation id."""
    if value is None:
        raise MemoryValidationError(f"{argument} is required")
    return validate.identifier(str(value), argument)


def text(value: Any, argument: str) -> str:
    """A name that goes into keys or record headers: UTF-8 must encode it."""
    return validate.text(str(value), argument)


def checkpoint_id(value: Any, argument: str) -> str:
    if not isinstance(value, str) or not adapter_keys.is_checkpoint_id(value):
        raise MemoryValidationError(
            f"{argument} must be 1 to 128 printable ASCII characters (a LangGraph "
            f"checkpoint id); got {value!r}"
        )
    return value


# --- into records ------------------------------------------------------------


def checkpoint_record(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    checkpoint_id: str,
    parent: str | None,
) -> tuple[bytes, str | None]:
    """The record of ``checkpoint`` and its metadata, and the run id the
    metadata names (None if none: then no run marker is written)."""
    checkpoint_type, checkpoint_bytes = serde.dumps_typed(checkpoint)
    # The whole metadata, ``writes`` included, as SqliteSaver and InMemorySaver
    # keep it (so ``list(filter={"writes": ...})`` finds it): the serde
    # stores any value, unlike the JSON columns the serializable variant is for.
    saved_metadata = get_checkpoint_metadata(config, metadata)
    metadata_type, metadata_bytes = serde.dumps_typed(saved_metadata)
    run = saved_metadata.get("run_id")
    run_id = run if isinstance(run, str) and run else None
    header = {
        "id": checkpoint_id,
        "parent": parent,
        "run": run_id,
        "types": [checkpoint_type, metadata_type],
        "split": len(checkpoint_bytes),
    }
    return pack(header, checkpoint_bytes, metadata_bytes), run_id


def write_records(
    serde: SerializerProtocol,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[WriteRecord]:
    """One record per pending write of ``task_id``, keyed by its index: a
    write with a regular index keeps the first record stored, one of
    LangGraph's special channels (a negative index) overwrites it."""
    records = []
    for index, (channel, value) in enumerate(writes):
        text(channel, f"writes[{index}] channel")
        idx = WRITES_IDX_MAP.get(channel, index)
        value_type, value_bytes = serde.dumps_typed(value)
        header = {
            "task": task_id,
            "channel": channel,
            "path": task_path,
            "idx": idx,
            "type": value_type,
        }
        key = adapter_keys.langgraph_write_key(thread_id, ns, checkpoint_id, task_id, idx)
        records.append(WriteRecord(key, pack(header, value_bytes), keep_first=idx >= 0))
    return records


# --- out of records ----------------------------------------------------------


def stored_checkpoint_id(stored: StoredCheckpoint) -> str:
    """The id of a stored checkpoint, from its record's header (its value
    and metadata are not deserialized): a listing's cursor."""
    return str(unpack(stored.data)[0]["id"])


def checkpoint_tuple(
    serde: SerializerProtocol, thread_id: str, stored: StoredCheckpoint
) -> CheckpointTuple:
    header, payload = unpack(stored.data)
    checkpoint_type, metadata_type = header["types"]
    split = header["split"]
    checkpoint = serde.loads_typed((checkpoint_type, bytes(payload[:split])))
    metadata = serde.loads_typed((metadata_type, bytes(payload[split:])))
    ns = stored.checkpoint_ns
    parent = header.get("parent")
    return CheckpointTuple(
        config={
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": header["id"],
            }
        },
        checkpoint=checkpoint,
        metadata=metadata,
        parent_config=None
        if parent is None
        else {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": parent,
            }
        },
        pending_writes=pending_writes(serde, stored.writes),
    )


def pending_writes(serde: SerializerProtocol, records: list[bytes]) -> list[PendingWrite]:
    """The writes ``records`` hold, in LangGraph's ``writes_sort_key`` order."""
    decoded = []
    for data in records:
        header, payload = unpack(data)
        value = serde.loads_typed((header["type"], bytes(payload)))
        sort_key = (header["path"], header["task"], header["idx"])
        decoded.append((sort_key, (header["task"], header["channel"], value)))
    decoded.sort(key=lambda item: item[0])  # LangGraph's writes_sort_key order
    return [write for _, write in decoded]


def delta_links(serde: SerializerProtocol, data: bytes) -> DeltaLinks:
    """What :func:`~.langgraph_checkpoint_programs.keep_latest` needs to know
    of one checkpoint record to keep LangGraph's DeltaChannel state
    rebuildable: its parent, the channels whose value it stores
    (``channel_values``, where a ``_DeltaSnapshot`` lives) and the delta
    channels still owed a replay of ancestors' writes at it (the keys of
    its metadata's ``counters_since_delta_snapshot``)."""
    header, payload = unpack(data)
    checkpoint_type, metadata_type = header["types"]
    split = header["split"]
    checkpoint = serde.loads_typed((checkpoint_type, bytes(payload[:split])))
    metadata = serde.loads_typed((metadata_type, bytes(payload[split:])))
    values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
    counters = metadata.get("counters_since_delta_snapshot") if isinstance(metadata, dict) else None
    parent = header.get("parent")
    return DeltaLinks(
        parent if isinstance(parent, str) else None,
        frozenset(values or ()),
        frozenset(counters or ()),
    )
