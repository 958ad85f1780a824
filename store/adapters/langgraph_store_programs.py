"""The LangGraph store's programs: I/O-free generators over the blob
operations (see :mod:`makers_store.blob`), run by the adapter class in
:mod:`.langgraph_store`, which validates operations and computes embeddings
first. Keys come from :mod:`makers_store.keys` (``l/...``); the item record,
filters and ranking from :mod:`.langgraph_store_records`.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    Result,
    SearchItem,
    SearchOp,
)

from .. import keys
from ..blob import Blob, Entry, delete, get, put, scan
from ..blob import Op as BlobOp
from ..errors import PreconditionFailedError
from .langgraph_store_records import (
    Record,
    as_datetime,
    cosine,
    decode_record,
    encode_record,
    expired,
    matches,
    namespace_matches,
    query_terms,
    term_score,
)

PAGE = 1000


# --- programs --------------------------------------------------------------


@dataclass(slots=True)
class PutPlan:
    """One item write, encoded before the unit (None: delete)."""

    namespace: tuple[str, ...]
    key: str
    value_json: str | None
    vectors_json: str
    ttl: float | None


@dataclass(slots=True)
class BatchPlan:
    """A validated batch: reads in order, then the deduplicated writes."""

    ops: list[Op]
    puts: list[PutPlan]
    now: int
    #: op position -> its filter as :func:`check_filter` returned it
    filters: dict[int, Any] = field(default_factory=dict)
    #: query text -> its embedding (only when the store has an embedder)
    query_vectors: dict[str, list[float]] = field(default_factory=dict)
    term_ranking: bool = True


def _scan_all(prefix: str) -> Generator[BlobOp, Any, list[Entry]]:
    entries: list[Entry] = []
    start_after: str | None = None
    while True:
        page = yield from scan(prefix, start_after=start_after, limit=PAGE)
        entries.extend(page)
        if len(page) < PAGE:
            return entries
        start_after = page[-1].key


def batch(plan: BatchPlan) -> Generator[BlobOp, Any, tuple[list[Result], list[str]]]:
    """Run every read against the state before the batch, then the writes.
    Returns the results and the blob keys whose TTL the reads refresh."""
    results: list[Result] = []
    refresh: list[str] = []
    for position, op in enumerate(plan.ops):
        if isinstance(op, GetOp):
            results.append((yield from _get(op, plan.now, refresh)))
        elif isinstance(op, SearchOp):
            wanted = plan.filters.get(position)
            results.append((yield from _search(op, wanted, plan, refresh)))
        elif isinstance(op, ListNamespacesOp):
            results.append((yield from _list_namespaces(op, plan.now)))
        else:
            results.append(None)
    for write in plan.puts:
        yield from _put(write, plan.now)
    return results, refresh


def _get(op: GetOp, now: int, refresh: list[str]) -> Generator[BlobOp, Any, Item | None]:
    blob_key = keys.langgraph_item_key(op.namespace, op.key)
    blob = yield from get(blob_key)
    if blob is None:
        return None
    record = decode_record(blob_key, blob.data)
    if expired(record, now):
        return None
    if op.refresh_ttl and record.ttl is not None:
        refresh.append(blob_key)
    return Item(
        value=record.value(),
        key=op.key,
        namespace=tuple(op.namespace),
        created_at=as_datetime(record.created),
        updated_at=as_datetime(record.updated),
    )


def _search(
    op: SearchOp, wanted: Any, plan: BatchPlan, refresh: list[str]
) -> Generator[BlobOp, Any, list[SearchItem]]:
    entries = yield from _scan_all(keys.langgraph_namespace_prefix(op.namespace_prefix))
    query_vector = plan.query_vectors.get(op.query) if op.query else None
    terms = query_terms(op.query) if op.query and plan.term_ranking else None
    ranked: list[tuple[tuple[Any, ...], Record, dict[str, Any] | None, float | None]] = []
    for entry in entries:
        record = decode_record(entry.key, entry.data)
        if expired(record, plan.now):
            continue
        # Values are decoded only when a filter or the terms need them, or
        # for the page returned.
        value = record.value() if wanted or terms is not None else None
        if wanted and not matches(value, wanted):
            continue
        score: float | None = None
        if query_vector is not None:
            vectors = record.vectors()
            score = max((cosine(query_vector, v) for v in vectors), default=None)
        elif terms is not None:
            score = term_score(terms, value)
        order = (score is None, -(score or 0.0), -record.updated, record.blob_key)
        ranked.append((order, record, value, score))
    ranked.sort(key=lambda row: row[0])
    page: list[SearchItem] = []
    for _, record, value, score in ranked[op.offset : op.offset + op.limit]:
        if value is None:
            value = record.value()
        if op.refresh_ttl and record.ttl is not None:
            refresh.append(record.blob_key)
        namespace, key = record.identity()
        page.append(
            SearchItem(
                namespace=namespace,
                key=key,
                value=value,
                created_at=as_datetime(record.created),
                updated_at=as_datetime(record.updated),
                score=score,
            )
        )
    return page


def _literal_prefix(op: ListNamespacesOp) -> tuple[str, ...]:
    """The leading wildcard-free labels of the prefix condition: the blob
    prefix that holds every namespace the operation can list."""
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            labels: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                labels.append(label)
            return tuple(labels)
    return ()


def _list_namespaces(
    op: ListNamespacesOp, now: int
) -> Generator[BlobOp, Any, list[tuple[str, ...]]]:
    entries = yield from _scan_all(keys.langgraph_namespace_prefix(_literal_prefix(op)))
    live: set[tuple[str, ...]] = set()
    for entry in entries:
        namespace, _ = keys.parse_langgraph_item_key(entry.key)
        if namespace in live or expired(decode_record(entry.key, entry.data), now):
            continue
        live.add(namespace)
    found = [
        ns
        for ns in live
        if all(namespace_matches(condition, ns) for condition in op.match_conditions or ())
    ]
    if op.max_depth is not None:
        found = list({ns[: op.max_depth] for ns in found})
    found.sort()
    return found[op.offset : op.offset + op.limit]


def _put(write: PutPlan, now: int) -> Generator[BlobOp, Any, None]:
    blob_key = keys.langgraph_item_key(write.namespace, write.key)
    existing: Blob | None = yield from get(blob_key)
    if write.value_json is None:
        if existing is not None:
            yield from delete(blob_key)
        return
    created = now
    if existing is not None:
        record = decode_record(blob_key, existing.data)
        if not expired(record, now):
            created = record.created
    expires = None if write.ttl is None else now + round(write.ttl * 60_000)
    data = encode_record(created, now, write.ttl, expires, write.value_json, write.vectors_json)
    yield from put(
        blob_key,
        data,
        if_match=None if existing is None else existing.etag,
        if_none_match=existing is None,
    )


def refresh(blob_keys: list[str], now: int) -> Generator[BlobOp, Any, None]:
    """Extend the TTL of items a read returned, unless they expired or went
    away meanwhile (a writer that replaced one set its own expiry)."""
    for blob_key in dict.fromkeys(blob_keys):
        blob = yield from get(blob_key)
        if blob is None:
            continue
        record = decode_record(blob_key, blob.data)
        if record.ttl is None or expired(record, now):
            continue
        data = encode_record(
            record.created,
            record.updated,
            record.ttl,
            now + round(record.ttl * 60_000),
            record.value_text.decode(),
            record.vectors_text.decode(),
        )
        yield from put(blob_key, data, if_match=blob.etag)


def sweep_page(
    start_after: str | None, now: int, limit: int = 500
) -> Generator[BlobOp, Any, tuple[int, str | None]]:
    """Delete the expired items among the next ``limit`` keys; returns how
    many were deleted and where the next page starts (None: done)."""
    page = yield from scan(keys.LANGGRAPH_ITEMS, start_after=start_after, limit=limit)
    deleted = 0
    for entry in page:
        if not expired(decode_record(entry.key, entry.data), now):
            continue
        blob = yield from get(entry.key)  # the etag guards a concurrent refresh
        if blob is None or not expired(decode_record(entry.key, blob.data), now):
            continue
        try:
            deleted += (yield from delete(entry.key, if_match=blob.etag)) is True
        except PreconditionFailedError:
            continue  # refreshed or rewritten meanwhile: no longer this expired item
    return deleted, (page[-1].key if len(page) == limit else None)
