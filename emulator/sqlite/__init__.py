"""The SQLite backend (``sqlite://``, the default emulator): a map.

==================  ==========================================================
module              what is in it
==================  ==========================================================
:mod:`.backend`     ``SqliteBlobStore``: opening, the writer lock, ``from_url``
:mod:`.file`        the database file: connections, WAL, the schema version
:mod:`.migrations`  the schema as a named list of migrations (sqlite-utils)
:mod:`.units`       a unit of work on one connection
:mod:`.ops`         each blob operation as SQL
:mod:`.inline`      small values kept inline in the key table
:mod:`.vacuum`      giving back the space deletes leave
:mod:`.watch`       the write feed behind ``ContextStore.watch``
:mod:`.checkpoint`  the WAL copied into the database beside the writers
:mod:`.search`      the search index (FTS5 trigram), caught up in batches
:mod:`.snapshot`    a snapshot saved as a file copy, restored by online backup
==================  ==========================================================

Imports: the store's blob interface (:mod:`makers_store.blob`,
:mod:`makers_store.blob_ops`), :mod:`makers_store.errors` and the emulator's
shared :mod:`..sql_ranges`; no other backend.
"""

from __future__ import annotations

from .backend import SqliteBlobStore, from_url

__all__ = ["SqliteBlobStore", "from_url"]
