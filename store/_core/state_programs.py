"""A conversation's state (a JSON key-value map) as I/O-free programs.

State lives beside the conversation's messages, in its generation (see
:mod:`makers_store._core.keys`); a conversation being deleted has no state.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..blob_ops import Entry, Op, Program, delete, each_batch, get, put
from . import keys, names
from .activity import touch
from .codec import ConversationRecord, decode_state, encode_state
from .programs import load_live_meta, load_meta

STATE_PAGE = 500


def _generation(record: ConversationRecord | None) -> str:
    """Where a conversation's messages and state live ("" without meta)."""
    return "" if record is None else record.generation


def state_get(cid: str, name: str) -> Program[Any]:
    record, _ = yield from load_meta(cid)
    if record is not None and not record.live:
        return None
    blob = yield from get(keys.state_key(cid, name, _generation(record)))
    return None if blob is None else decode_state(blob.data)


def state_set(cid: str, name: str, value_json: str, now: int | None = None) -> Program[None]:
    """Store one value; ``now`` stamps the write into meta first
    (:func:`~makers_store._core.activity.touch`)."""
    record, etag = yield from load_live_meta(cid)
    yield from touch(cid, record, etag, now)
    yield from names.remember(cid, name)  # bounded ones only (rare): state_items reads them
    yield from put(keys.state_key(cid, name, _generation(record)), encode_state(value_json))


def state_delete(cid: str, name: str, now: int | None = None) -> Program[None]:
    record, etag = yield from load_live_meta(cid)
    yield from touch(cid, record, etag, now)
    yield from delete(keys.state_key(cid, name, _generation(record)), quiet=True)


def state_items(cid: str) -> Program[dict[str, Any]]:
    record, _ = yield from load_meta(cid)
    if record is not None and not record.live:
        return {}
    items: dict[str, Any] = {}

    def take(batch: list[Entry]) -> Generator[Op, Any, None]:
        for blob in batch:
            segment = keys.state_segment_of_key(blob.key)
            items[(yield from names.resolve(keys.id_segment(cid), segment))] = decode_state(
                blob.data
            )

    prefix = keys.state_prefix(cid, _generation(record))
    yield from each_batch(prefix, take, size=STATE_PAGE, values=True)
    return items
