"""Blob-store backends and the local agent runtime: a map.

================  ===============================================================
room              what is in it
================  ===============================================================
``memory/``       ``memory://``: in-process, one lock (and stepwise, as S3 runs)
``sqlite/``       ``sqlite://``: the zero-config default emulator of the
                  platform's Blob storage; its search index (FTS5), WAL
                  checkpoints beside the writers, snapshot file copies
``postgres/``     ``postgresql://`` (``makers-store[postgres]``), with its
                  search index (``pg_trgm``)
``s3/``           ``s3://`` (``makers-store[s3]``)
``runtime/``      ``makers-store serve``: its own map is its ``__init__``
``studio/``       ``makers-store studio``
================  ===============================================================

Shared by the backends, at this top: :mod:`.per_loop` (a resource per event
loop: PostgreSQL's pool, S3's client) and :mod:`.sql_ranges` (a listing as
SQL, for SQLite and PostgreSQL).

Which imports which: a backend imports no other backend, and of the store
only its blob interface: :mod:`makers_store.blob`, :mod:`makers_store.blob_ops`,
:mod:`makers_store.retry` (the queue allowance) and :mod:`makers_store.errors`
(``tests/test_rooms.py``). The store reaches a backend only through
:func:`makers_store.open_store`, which imports it by URL scheme on first use.
"""
