"""LangGraph.js checkpoints through the Python checkpointer.

The Node saver (``node/langgraph_checkpointer.cjs``) serializes with its own
``serde`` (LangGraph.js's ``JsonPlusSerializer``: ``["json", bytes]``) and
sends the typed bytes; the Python :class:`MakersCheckpointSaver` stores them
unchanged through :class:`RelaySerde`, in the same records, keys, ordering and
pruning rules as checkpoints Python writes. So:

* a checkpoint a Node agent writes is JSON with LangChain's ``lc`` constructor
  objects, which the Python checkpointer (whose ``JsonPlusSerializer`` revives
  them) reads as Python objects;
* a checkpoint a Python agent writes is msgpack, which LangGraph.js cannot
  read: :func:`for_node` re-encodes it as JSON (``lc`` objects via
  ``to_json``), and leaves it as msgpack (which the Node serde refuses) only
  when a value has no JSON form.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from makers_store.errors import MemoryValidationError

from .values import loads

if TYPE_CHECKING:
    from makers_store.adapters.langgraph.checkpoints import MakersCheckpointSaver

Typed = tuple[str, bytes]


class Relayed(dict[str, Any]):
    """A value serialized elsewhere, carried as its typed bytes. A dict of its
    JSON form where there is one, since the checkpointer reads a checkpoint's
    ``id`` and filters metadata by key."""

    def __init__(self, typed: Typed, decoded: Any) -> None:
        super().__init__(decoded if isinstance(decoded, dict) else {})
        self.typed = typed


class RelaySerde:
    """A LangGraph ``SerializerProtocol`` that stores what it is given as is.

    ``dumps_typed`` of a :class:`Relayed` value returns its bytes; of a plain
    dict (checkpoint metadata, merged by the checkpointer) returns JSON.
    ``loads_typed`` keeps the bytes and decodes JSON for the checkpointer's own
    reads; other types (msgpack, written by Python) decode with LangGraph's
    own serializer."""

    def __init__(self) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self._python = JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> Typed:
        if isinstance(obj, Relayed):
            return obj.typed
        return "json", json.dumps(obj, ensure_ascii=False).encode("utf-8")

    def loads_typed(self, data: Typed) -> Any:
        kind, payload = data
        if kind == "json":
            return Relayed(data, loads(payload))
        return Relayed(data, self._python.loads_typed(data))


def relayed(value: Any, argument: str, *, decode: bool = True) -> Relayed:
    """A ``[type, base64]`` pair from Node as a :class:`Relayed` value.

    ``decode=False`` when the checkpointer only stores the value (a pending
    write: ``dumps_typed`` gives its bytes back, nothing reads it), and for a
    checkpoint sent as ``[type, base64, id]``: its id is the one thing the
    checkpointer reads of it (the record's key), and the Node saver takes it
    from the very object it serialized, so the payload (kilobytes of
    messages) is not parsed only to find it. The bytes are checked as base64
    either way; what they hold is LangGraph.js's to read back."""
    if (
        not isinstance(value, list)
        or len(value) not in (2, 3)
        or not isinstance(value[0], str)
        or not isinstance(value[1], str)
    ):
        raise MemoryValidationError(f"{argument} must be a [type, base64 bytes] pair")
    try:
        payload = base64.b64decode(value[1], validate=True)
        if len(value) == 3:  # [type, base64, id]: the id is all the checkpointer reads
            decoded: Any = {"id": value[2]}
        elif decode and value[0] == "json":
            decoded = loads(payload)
        else:
            decoded = None
    except (ValueError, RecursionError) as exc:  # binascii.Error and JSONDecodeError too
        raise MemoryValidationError(f"{argument} does not decode: {exc}") from None
    return Relayed((value[0], payload), decoded)


def for_node(value: Any, python: Any) -> list[str]:
    """A stored value as ``[type, base64]`` for the Node serde: JSON as stored;
    msgpack (a Python writer's) re-encoded as JSON where every value has a JSON form."""
    kind, payload = value.typed if isinstance(value, Relayed) else ("json", b"null")
    if kind != "json":
        try:
            text = json.dumps(python.loads_typed((kind, payload)), default=_lc_json)
        except (TypeError, ValueError):
            pass  # no JSON form: LangGraph.js will say it cannot read this type
        else:
            kind, payload = "json", text.encode("utf-8")
    return [kind, base64.b64encode(payload).decode("ascii")]


def _lc_json(value: Any) -> Any:
    """LangChain objects in the ``lc`` constructor form both serdes revive.

    Python names its classes by their legacy path (``langchain.schema.messages``),
    which LangChain.js cannot import; LangChain's own mapping gives the
    ``langchain_core`` path, which it can."""
    to_json = getattr(value, "to_json", None)
    if not callable(to_json):
        raise TypeError(f"no JSON form for {type(value).__name__}")
    from langchain_core.load.mapping import SERIALIZABLE_MAPPING

    data = to_json()
    if isinstance(data, dict) and isinstance(data.get("id"), list):
        path: tuple[str, ...] = tuple(data["id"])
        data = {**data, "id": list(SERIALIZABLE_MAPPING.get(path, path))}
    return data


def make_saver(store: Any) -> MakersCheckpointSaver:
    """The Python checkpointer over ``store``, storing Node's typed bytes as is."""
    from makers_store.adapters import require

    require("langgraph_checkpoints")
    from makers_store.adapters.langgraph.checkpoints import MakersCheckpointSaver

    return MakersCheckpointSaver(store, serde=RelaySerde())
