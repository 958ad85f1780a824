"""The PostgreSQL backend (``postgresql://``, ``makers-store[postgres]``): a map.

==================  ==========================================================
module              what is in it
==================  ==========================================================
:mod:`.backend`     ``PostgresBlobStore``: the pool per event loop, pipelined
                    transactions, round-trip counters, ``from_url``
:mod:`.units`       a unit of work: a program's operations as statements
:mod:`.migrations`  the schema, migrated under an advisory lock
:mod:`.space`       what vacuum gives back
:mod:`.watch`       LISTEN/NOTIFY, the write feed behind ``ContextStore.watch``
:mod:`.search`      the search index (``pg_trgm``), written by each unit
==================  ==========================================================

Imports: the store's blob interface (:mod:`makers_store.blob`,
:mod:`makers_store.blob_ops`, :mod:`makers_store.retry`'s queue allowance),
:mod:`makers_store.errors` and the emulator's shared :mod:`..per_loop` and
:mod:`..sql_ranges`; no other backend. psycopg is imported on use.
"""

from __future__ import annotations

from .backend import PostgresBlobStore, from_url

__all__ = ["PostgresBlobStore", "from_url"]
