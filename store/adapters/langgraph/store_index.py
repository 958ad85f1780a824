"""The LangGraph store's derived index: a namespace directory and a recency
copy of every item, so that ``list_namespaces`` is one listing and a search
without a query reads one page per namespace instead of every item.

Key layout, beside the items (``l/{segs}.{key}``, :mod:`makers_store._core.keys`);
``{segs}`` are a namespace's escaped labels, each followed by ``/``, exactly
as in its item keys::

    ln/{segs}.               directory entry: the namespace holds items
    ln/{segs}.t              TTL flag: it holds (or held) an item with a TTL
    lr/{segs}~{rank}.{key}   recency copy of item {key}: its record without
                             embeddings; {rank} = keys.rank(updated_at), so
                             a namespace's copies list newest first
    ln/.version              the index covers every item (written once)

Escaped labels and keys contain none of ``.``, ``/`` and ``~``, so ``.`` and
``~`` mark where the namespace ends, as ``.`` does in item keys. Because
``~`` sorts after every character of an escaped label, a namespace's own
copies come after those of every namespace below it: a listing of a
subtree whose first key is one of the namespace's own copies proves that no
namespace below holds items. (These helpers belong with the rest of the
layout in :mod:`makers_store._core.keys`; they are built only from its item-key
functions so that they follow its encoding.)

Consistency. On an atomic backend the index changes in the unit that changes
the item, so it is exact: every namespace with an item has its directory
entry, no other does, and every item has one copy of its current record. A
unit that may empty a namespace first reads (PostgreSQL: locks) its
directory entry, so a concurrent first put into it waits or is waited for.
On a backend that steps one operation at a time the directory entry and the
copy are written before the item, the old copy removed after it, and no
directory entry is removed: the directory is a superset and copies may be
stale, so readers there check each copy against its item and each namespace
against its items.

The TTL flag is sticky: a namespace that ever held an item with a TTL is
checked for a live item whenever it is listed (the directory cannot know
when the last one expires).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..._core import adapter_keys, keys
from ...blob import Capabilities
from ...blob_ops import BlobInfo, Entry, Op, delete_many, each_batch, get, list_keys, put, scan
from ...errors import MemoryCorruptError
from .store_records import Record, decode_record, encode_record, expired

DIRECTORY = "ln/"
RECENCY = "lr/"
VERSION_KEY = adapter_keys.LANGGRAPH_INDEX_VERSION
VERSION = b"1"
PAGE = 500
PROBE = 16  # items read per step while looking for a live one


# --- keys ----------------------------------------------------------------------


def _segments(namespace: tuple[str, ...]) -> str:
    return adapter_keys.langgraph_namespace_prefix(namespace)[len(adapter_keys.LANGGRAPH_ITEMS) :]


def items_prefix(namespace: tuple[str, ...]) -> str:
    """Keys of the items directly in ``namespace`` (none of the ones below it)."""
    return adapter_keys.langgraph_namespace_prefix(namespace) + "."


def directory_prefix(namespace: tuple[str, ...]) -> str:
    """Directory entries of ``namespace`` and of every namespace below it."""
    return DIRECTORY + _segments(namespace)


def directory_key(namespace: tuple[str, ...]) -> str:
    return directory_prefix(namespace) + "."


def ttl_flag_key(namespace: tuple[str, ...]) -> str:
    return directory_prefix(namespace) + ".t"


def parse_directory_key(key: str) -> tuple[tuple[str, ...], bool] | None:
    """(namespace, is the TTL flag) of a directory key; None for any other key."""
    if key.endswith("/."):
        path, flag = key[:-1], False
    elif key.endswith("/.t"):
        path, flag = key[:-2], True
    else:
        return None
    namespace, _ = adapter_keys.parse_langgraph_item_key(
        adapter_keys.LANGGRAPH_ITEMS + path[len(DIRECTORY) :] + "."
    )
    return (namespace, flag) if namespace else None


def recency_subtree(namespace: tuple[str, ...]) -> str:
    """Recency copies of the items in ``namespace`` and below it."""
    return RECENCY + _segments(namespace)


def recency_prefix(namespace: tuple[str, ...]) -> str:
    """Recency copies of the items directly in ``namespace``."""
    return RECENCY + _segments(namespace) + "~"


def recency_key(item_key: str, updated: int) -> str:
    path, _, escaped_key = item_key.rpartition("/.")
    segments = path[len(adapter_keys.LANGGRAPH_ITEMS) :]
    return f"{RECENCY}{segments}/~{keys.rank(updated)}.{escaped_key}"


def parse_recency_key(key: str) -> tuple[str, int]:
    """(item key, updated_at ms) of a recency copy's key."""
    path, _, rest = key.rpartition("/~")
    rank, _, escaped_key = rest.partition(".")
    item_key = f"{adapter_keys.LANGGRAPH_ITEMS}{path[len(RECENCY) :]}/.{escaped_key}"
    return item_key, keys.RANK_MAX - int(rank)


def copy_of(record: Record) -> bytes:
    """The recency copy of ``record``: the same record without embeddings."""
    return encode_record(
        record.created,
        record.updated,
        record.ttl,
        record.expires,
        record.value_text.decode(),
        "{}",
    )


# --- upkeep (called inside the unit that changes the item) ----------------------


def before_put(
    namespace: tuple[str, ...], old: Record | None, ttl: float | None
) -> Generator[Op, Any, None]:
    """What a put writes before the item: the namespace's directory entry
    when the item is new, its TTL flag when the item gains a TTL."""
    if old is None:
        yield from put(directory_key(namespace), b"")
    if ttl is not None and (old is None or old.ttl is None):
        yield from put(ttl_flag_key(namespace), b"")


def remove_item(
    namespace: tuple[str, ...], item_key: str, old: Record | None, caps: Capabilities
) -> Generator[Op, Any, None]:
    """Delete an item and its copy (the item first: it is the commit point
    where a unit may stop halfway); on an atomic backend, also the
    namespace's directory entry if that emptied it."""
    copy = [] if old is None else [recency_key(item_key, old.updated)]
    if caps.atomic:
        yield from delete_many([item_key, *copy])
        yield from forget_if_empty(namespace)
    else:
        yield from delete_many([item_key])
        yield from delete_many(copy)


def forget_if_empty(namespace: tuple[str, ...]) -> Generator[Op, Any, None]:
    """Remove the directory entry of a namespace without items (atomic
    backends only). Reading the entry first makes PostgreSQL lock it, so a
    concurrent first put into the namespace, which writes it, is ordered
    against this check."""
    yield from get(directory_key(namespace))
    if not (yield from list_keys(items_prefix(namespace), limit=1)):
        yield from delete_many([directory_key(namespace), ttl_flag_key(namespace)])


# --- reads ---------------------------------------------------------------------


def namespaces_under(prefix: tuple[str, ...]) -> Generator[Op, Any, dict[tuple[str, ...], bool]]:
    """Every namespace the directory lists under ``prefix`` -> its TTL flag."""
    found: dict[tuple[str, ...], bool] = {}
    flagged: set[tuple[str, ...]] = set()

    def take(page: list[BlobInfo]) -> None:
        for info in page:
            parsed = parse_directory_key(info.key)
            if parsed is None:
                continue
            namespace, flag = parsed
            if flag:
                flagged.add(namespace)
            else:
                found[namespace] = False

    yield from each_batch(directory_prefix(prefix), take, size=1000)
    return {namespace: namespace in flagged for namespace in found}


def has_live_item(namespace: tuple[str, ...], now: int) -> Generator[Op, Any, bool]:
    """Whether ``namespace`` holds an item that has not expired (reading its
    items until one is found: only for namespaces the directory cannot vouch for)."""

    def live(page: list[Entry]) -> bool:
        return any(not expired(decode_record(e.key, e.data), now) for e in page)

    return (yield from each_batch(items_prefix(namespace), live, size=PROBE, values=True))


# --- building ------------------------------------------------------------------


def state() -> Generator[Op, Any, tuple[bool, bool]]:
    """(the index is complete, the store holds items)."""
    marker = yield from get(VERSION_KEY)
    items = yield from list_keys(adapter_keys.LANGGRAPH_ITEMS, limit=1)
    return marker is not None, bool(items)


def mark_complete() -> Generator[Op, Any, None]:
    yield from put(VERSION_KEY, VERSION)


def build_page(start_after: str | None) -> Generator[Op, Any, str | None]:
    """Index the next page of items (each read again on its own, which on
    PostgreSQL locks it against a concurrent writer); returns where the next
    page starts (None: done). Unreadable records are left unindexed (``get``
    reports them)."""
    page = yield from list_keys(adapter_keys.LANGGRAPH_ITEMS, start_after=start_after, limit=PAGE)
    for info in page:
        blob = yield from get(info.key)
        if blob is None:
            continue
        try:
            namespace, _ = adapter_keys.parse_langgraph_item_key(info.key)
            record = decode_record(info.key, blob.data)
        except (ValueError, MemoryCorruptError):
            continue
        yield from before_put(namespace, None, record.ttl)
        yield from put(recency_key(info.key, record.updated), copy_of(record))
    return page[-1].key if len(page) == PAGE else None


def prune_page(start_after: str | None, caps: Capabilities) -> Generator[Op, Any, str | None]:
    """Mend the next page of recency copies: remove the ones no item backs
    (an older record's, a deleted item's: what a crash, a blob-level copy or
    an import left) and rewrite the ones that differ from their item; the
    first page also removes the directory entries of empty namespaces
    (atomic backends). Returns where the next page starts (None: done)."""
    page = yield from scan(RECENCY, start_after=start_after, limit=PAGE)
    for entry in page:
        item_key, updated = parse_recency_key(entry.key)
        blob = yield from get(item_key)
        try:
            record = None if blob is None else decode_record(item_key, blob.data)
        except MemoryCorruptError:
            record = None
        if record is None or record.updated != updated:
            yield from delete_many([entry.key])
        elif entry.data != copy_of(record):
            yield from put(entry.key, copy_of(record))
    if caps.atomic and start_after is None:
        for namespace in (yield from namespaces_under(())):
            yield from forget_if_empty(namespace)
    return page[-1].key if len(page) == PAGE else None
