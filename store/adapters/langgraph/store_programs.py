"""The LangGraph store's programs: I/O-free generators over the blob
operations (see :mod:`makers_store.blob_ops`), run by the adapter class in
:mod:`.langgraph_store`, which validates operations and computes embeddings
first. Keys come from :mod:`makers_store._core.keys` (``l/...``); the item record,
filters and ranking from :mod:`.langgraph_store_records`; the directory of
namespaces and the recency copies that every write keeps up to date from
:mod:`.langgraph_store_index`.

Reads by key (``get``) and searches with a query read the items; searches
without a query read the recency copies, at most ``offset + limit`` live
ones per namespace under the prefix, newest first; ``list_namespaces`` reads
the directory.
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

from ..._core import adapter_keys
from ...blob import TRANSACTIONAL, Capabilities
from ...blob_ops import Entry, delete, delete_many, each_batch, get, put, scan
from ...blob_ops import Op as BlobOp
from ...errors import MemoryCorruptError, PreconditionFailedError
from . import store_index as index
from .store_records import (
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
    #: the backend's (atomic: it runs a unit as one transaction, see
    #: langgraph_store_index)
    caps: Capabilities = TRANSACTIONAL
    #: the writes also record that the index is complete (a new store)
    mark_complete: bool = False


def _scan_all(prefix: str) -> Generator[BlobOp, Any, list[Entry]]:
    entries: list[Entry] = []
    yield from each_batch(prefix, entries.extend, size=PAGE, values=True)
    return entries


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
            results.append((yield from _list_namespaces(op, plan)))
        else:
            results.append(None)
    for write in plan.puts:
        yield from _put(write, plan)
    if plan.puts and plan.mark_complete:
        yield from index.mark_complete()
    return results, refresh


def _get(op: GetOp, now: int, refresh: list[str]) -> Generator[BlobOp, Any, Item | None]:
    blob_key = adapter_keys.langgraph_item_key(op.namespace, op.key)
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
    query_vector = plan.query_vectors.get(op.query) if op.query else None
    terms = query_terms(op.query) if op.query and plan.term_ranking else None
    if query_vector is None and terms is None:
        ranked = yield from _recent(op, wanted, plan)
    else:
        ranked = yield from _ranked(op, wanted, plan, query_vector, terms)
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


Ranked = list[tuple[tuple[Any, ...], Record, dict[str, Any] | None, float | None]]


def _ranked(
    op: SearchOp,
    wanted: Any,
    plan: BatchPlan,
    query_vector: list[float] | None,
    terms: frozenset[str] | None,
) -> Generator[BlobOp, Any, Ranked]:
    """Every live item under the prefix that the filter admits, scored
    against the query (every item needs a score, so this reads them all)."""
    entries = yield from _scan_all(adapter_keys.langgraph_namespace_prefix(op.namespace_prefix))
    ranked: Ranked = []
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
    return ranked


def _recent(op: SearchOp, wanted: Any, plan: BatchPlan) -> Generator[BlobOp, Any, Ranked]:
    """The newest ``offset + limit`` live items under the prefix that the
    filter admits: as many from each namespace's recency copies (no namespace
    can place more on the page), merged. One listing when the prefix names a
    namespace with nothing below it (see langgraph_store_index)."""
    want = op.offset + op.limit
    if want == 0:
        return []
    prefix = tuple(op.namespace_prefix)
    step = min(max(want, 64) if wanted else want, PAGE)
    first = yield from scan(index.recency_subtree(prefix), limit=step)
    if not first:
        return []
    own = index.recency_prefix(prefix)
    if first[0].key.startswith(own):  # no namespace below the prefix holds items
        return (yield from _newest_in(own, want, wanted, plan, step, first))
    ranked: Ranked = []
    for namespace in (yield from index.namespaces_under(prefix)):
        where = index.recency_prefix(namespace)
        ranked += yield from _newest_in(where, want, wanted, plan, step, None)
    ranked.sort(key=lambda row: row[0])
    return ranked


def _newest_in(
    prefix: str, want: int, wanted: Any, plan: BatchPlan, step: int, page: list[Entry] | None
) -> Generator[BlobOp, Any, Ranked]:
    """Up to ``want`` live, admitted items from the copies under ``prefix``
    (one namespace's), newest first, starting with ``page`` when given (the
    first batch, already read by :func:`_recent`)."""
    found: Ranked = []

    def take(batch: list[Entry]) -> Generator[BlobOp, Any, bool]:
        for entry in batch:
            item_key, updated = index.parse_recency_key(entry.key)
            if plan.caps.atomic:
                record = decode_record(item_key, entry.data)
            else:  # the copy may be stale: the item decides
                blob = yield from get(item_key)
                if blob is None:
                    continue
                record = decode_record(item_key, blob.data)
                if record.updated != updated:
                    continue
            if expired(record, plan.now):
                continue
            value = record.value() if wanted else None
            if wanted and not matches(value, wanted):
                continue
            found.append(((True, 0.0, -record.updated, item_key), record, value, None))
            if len(found) == want:
                return True
        return False

    start = None
    if page is not None:
        if (yield from take(page)) or len(page) < step:
            return found
        start = page[-1].key
    yield from each_batch(prefix, take, size=step, start_after=start, values=True)
    return found


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
    op: ListNamespacesOp, plan: BatchPlan
) -> Generator[BlobOp, Any, list[tuple[str, ...]]]:
    conditions = op.match_conditions or ()
    listed = yield from index.namespaces_under(_literal_prefix(op))
    live: set[tuple[str, ...]] = set()
    for namespace, ttl_flag in listed.items():
        if not all(namespace_matches(condition, namespace) for condition in conditions):
            continue
        shown = namespace if op.max_depth is None else namespace[: op.max_depth]
        if shown in live:
            continue
        if (ttl_flag or not plan.caps.atomic) and not (
            yield from index.has_live_item(namespace, plan.now)
        ):
            continue
        live.add(shown)
    return sorted(live)[op.offset : op.offset + op.limit]


def _put(write: PutPlan, plan: BatchPlan) -> Generator[BlobOp, Any, None]:
    now = plan.now
    blob_key = adapter_keys.langgraph_item_key(write.namespace, write.key)
    existing = yield from get(blob_key)
    old = None if existing is None else _readable(blob_key, existing.data, write.value_json)
    if write.value_json is None:
        if existing is not None:
            yield from index.remove_item(write.namespace, blob_key, old, plan.caps)
        return
    created = old.created if old is not None and not expired(old, now) else now
    expires = None if write.ttl is None else now + round(write.ttl * 60_000)
    data = encode_record(created, now, write.ttl, expires, write.value_json, write.vectors_json)
    copy = encode_record(created, now, write.ttl, expires, write.value_json, "{}")
    yield from index.before_put(write.namespace, old, write.ttl)
    yield from put(index.recency_key(blob_key, now), copy)
    # An atomic backend holds the item read above until the unit ends
    # (PostgreSQL: FOR UPDATE), so only a creation needs its precondition.
    yield from put(
        blob_key,
        data,
        if_match=None if existing is None or plan.caps.atomic else existing.etag,
        if_none_match=existing is None,
    )
    if old is not None and old.updated != now:
        yield from delete_many([index.recency_key(blob_key, old.updated)])


def _readable(blob_key: str, data: bytes, value_json: str | None) -> Record | None:
    """The record being replaced; a delete also removes an unreadable one."""
    try:
        return decode_record(blob_key, data)
    except MemoryCorruptError:
        if value_json is None:
            return None
        raise


def refresh(blob_keys: list[str], now: int, caps: Capabilities) -> Generator[BlobOp, Any, None]:
    """Extend the TTL of items a read returned (and of their copies), unless
    they expired or went away meanwhile (a writer that replaced one set its
    own expiry)."""
    for blob_key in dict.fromkeys(blob_keys):
        blob = yield from get(blob_key)
        if blob is None:
            continue
        record = decode_record(blob_key, blob.data)
        if record.ttl is None or expired(record, now):
            continue
        record.expires = now + round(record.ttl * 60_000)
        data = encode_record(
            record.created,
            record.updated,
            record.ttl,
            record.expires,
            record.value_text.decode(),
            record.vectors_text.decode(),
        )
        yield from put(blob_key, data, if_match=None if caps.atomic else blob.etag)
        yield from put(index.recency_key(blob_key, record.updated), index.copy_of(record))


def sweep_page(
    start_after: str | None, now: int, caps: Capabilities, limit: int = 500
) -> Generator[BlobOp, Any, tuple[int, str | None]]:
    """Delete the expired items among the next ``limit`` keys, with their
    copies (and the directory entries of namespaces that emptied); returns
    how many were deleted and where the next page starts (None: done)."""
    page = yield from scan(adapter_keys.LANGGRAPH_ITEMS, start_after=start_after, limit=limit)
    deleted = 0
    touched: dict[tuple[str, ...], None] = {}
    for entry in page:
        if not expired(decode_record(entry.key, entry.data), now):
            continue
        blob = yield from get(entry.key)  # locks it, or its etag guards a concurrent refresh
        if blob is None:
            continue
        record = decode_record(entry.key, blob.data)
        if not expired(record, now):
            continue
        copy = index.recency_key(entry.key, record.updated)
        if caps.atomic:
            yield from delete_many([entry.key, copy])
            touched[adapter_keys.parse_langgraph_item_key(entry.key)[0]] = None
            deleted += 1
            continue
        try:
            deleted += (yield from delete(entry.key, if_match=blob.etag)) is True
        except PreconditionFailedError:
            continue  # refreshed or rewritten meanwhile: no longer this expired item
        yield from delete_many([copy])
    for namespace in touched:
        yield from index.forget_if_empty(namespace)
    return deleted, (page[-1].key if len(page) == limit else None)
